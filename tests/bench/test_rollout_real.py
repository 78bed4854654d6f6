"""`phalanx bench rollout --real` (issue 23): how its results are assembled from the API
server's audit log and its runs. The bench itself needs a real API server and minutes; these
feed it recorded-shape audit lines instead."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from phalanx.bench.rollout_audit import (
    KUBELET,
    read_writes,
    replacements,
    rollout_order,
    writer_of,
    writes_by_writer,
)
from phalanx.bench.rollout_floor import ReplicaShape, shape_of
from phalanx.bench.rollout_real import RealRolloutConfig, summarize_real, workload1

NS = "rollout-0-abcde"
OPERATOR = "phalanx/phalanx-operator"
T0 = 1_800_000_000.0


def _line(t: float, agent: str, verb: str, resource: str, name: str, *, code: int = 200,
          group: str = "", sub: str = "", ns: str = NS, stage: str = "ResponseComplete") -> str:
    def stamp(x: float) -> str:
        return datetime.fromtimestamp(x, UTC).isoformat().replace("+00:00", "Z")

    ref: dict[str, Any] = {"resource": resource, "namespace": ns, "name": name}
    if group:
        ref["apiGroup"] = group
    if sub:
        ref["subresource"] = sub
    return json.dumps({"stage": stage, "verb": verb, "userAgent": agent, "objectRef": ref,
                       "responseStatus": {"code": code},
                       "requestReceivedTimestamp": stamp(t), "stageTimestamp": stamp(t + 0.01)})


def _log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "audit.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_writers_are_told_apart_by_user_agent() -> None:
    assert writer_of("phalanx/phalanx-operator") == OPERATOR
    assert writer_of("kube-scheduler/v1.36.0 (linux/amd64) kubernetes/abc/scheduler") == \
        "kube-scheduler"
    assert writer_of("kube-controller-manager/v1.36.0 (linux/amd64) kubernetes/abc/"
                     "generic-garbage-collector") == "kube-controller-manager"
    assert writer_of("") == "unknown"


def test_the_log_is_read_from_an_offset_completed_writes_only(tmp_path: Path) -> None:
    first = _line(T0, OPERATOR, "create", "pods", "old")
    path = _log(tmp_path, [
        first,
        _line(T0 + 1, OPERATOR, "patch", "podcliques", "x", group="grove.io", sub="status"),
        _line(T0 + 1, OPERATOR, "patch", "pods", "p", stage="ResponseStarted"),
        '{"stage": "ResponseComplete", "verb": "cre',  # a line being written
    ])
    writes = read_writes(path, offset=len(first) + 1)
    assert [(w.writer, w.call, w.name) for w in writes] == [
        (OPERATOR, "patch grove.io/podcliques/status", "x")]
    assert writes[0].received == pytest.approx(T0 + 1, abs=1e-3)
    assert read_writes(tmp_path / "missing.log") == []


def test_each_original_pod_replaced_once_and_the_kubelets_deletes_do_not_count(
        tmp_path: Path) -> None:
    gc = "kube-controller-manager/v1.36.0 (linux/amd64) kubernetes/abc/gc"
    writes = read_writes(_log(tmp_path, [
        _line(T0, OPERATOR, "delete", "pods", "a-0"),
        _line(T0 + 0.1, KUBELET, "delete", "pods", "a-0"),  # finishes the operator's delete
        _line(T0 + 0.2, KUBELET, "delete", "pods", "a-0", code=404),
        _line(T0 + 0.3, OPERATOR, "create", "pods", "a-0"),  # the replacement, same name
        _line(T0 + 0.3, OPERATOR, "create", "pods", "a-1", code=409),  # refused: not a create
        _line(T0, gc, "delete", "pods", "g-0"),
        _line(T0 + 0.1, gc, "delete", "pods", "g-0"),  # re-issued while it terminates
        _line(T0 + 0.5, OPERATOR, "create", "pods", "g-0"),
        _line(T0, OPERATOR, "delete", "pods", "b-0", ns="elsewhere"),
    ]))
    r = replacements(writes, NS, {"a-0", "g-0", "h-0"})
    assert r["pods_replaced"] == 2 and r["originals_not_replaced"] == ["h-0"]
    assert r["pods_recreated_twice"] == [] and r["replacements_deleted"] == []
    assert r["repeated_delete_calls"] == 1 and r["pods_created"] == 2
    assert r["pod_deleters"] == {OPERATOR: 1, "kube-controller-manager": 2}
    # The garbage collector deletes a replacement (its owner reference named the PodClique
    # just deleted) and one created under a new name: both count.
    again = writes + read_writes(_log(tmp_path, [
        _line(T0 + 5, gc, "delete", "pods", "g-0"),
        _line(T0 + 5, OPERATOR, "delete", "pods", "new-1")]))
    r = replacements(again, NS, {"a-0", "g-0"})
    assert r["pods_recreated_twice"] == ["g-0"] and r["replacements_deleted"] == ["new-1"]


def test_writes_are_counted_per_writer_and_per_pod_within_the_window(tmp_path: Path) -> None:
    writes = read_writes(_log(tmp_path, [
        _line(T0 - 1, OPERATOR, "create", "pods", "before"),
        _line(T0, OPERATOR, "delete", "pods", "a-0"),
        _line(T0 + 1, OPERATOR, "create", "pods", "a-0"),
        _line(T0 + 1, OPERATOR, "patch", "podcliques", "a", group="grove.io", sub="status",
              code=409),
        _line(T0 + 2, "kube-scheduler/v1.36.0", "create", "pods", "a-0", sub="binding"),
        _line(T0 + 3, KUBELET, "patch", "pods", "a-0", sub="status"),
        _line(T0 + 9, KUBELET, "delete", "pods", "a-0"),
        _line(T0 + 1, OPERATOR, "create", "events", "e", ns="other"),
    ]))
    w = writes_by_writer(writes, NS, 2, T0, T0 + 5)
    assert w["api_writes"] == 5 and w["api_writes_per_pod"] == 2.5
    assert list(w["by_writer"]) == [OPERATOR, "kube-scheduler", KUBELET]
    assert w["by_writer"][OPERATOR] == {"writes": 3, "per_pod": 1.5, "calls": {
        "create pods": 1, "delete pods": 1, "patch grove.io/podcliques/status": 1}}
    assert w["refused"] == {f"409 {OPERATOR} patch grove.io/podcliques/status": 1}
    assert w["last_write_seconds"] == pytest.approx(3.01, abs=1e-3)
    assert writes_by_writer(writes, NS, 2, T0)["api_writes"] == 6  # no end: the kubelet's too


def test_one_replica_at_a_time_is_read_from_deletes_and_binds(tmp_path: Path) -> None:
    sched = "kube-scheduler/v1.36.0"

    def replica(i: int, t: float, groups_together: bool = False) -> list[str]:
        g1 = t if groups_together else t + 1.5
        return [
            _line(t, OPERATOR, "delete", "pods", f"w-{i}-pc-a-0"),
            _line(t, OPERATOR, "delete", "podcliques", f"w-{i}-sg-x-0-pc-b", group="grove.io"),
            _line(t + 1, sched, "create", "pods", f"w-{i}-pc-a-0", sub="binding"),
            _line(t + 1, sched, "create", "pods", f"w-{i}-sg-x-0-pc-b-0", sub="binding"),
            _line(g1, OPERATOR, "delete", "podcliques", f"w-{i}-sg-x-1-pc-b", group="grove.io"),
            _line(g1 + 1, sched, "create", "pods", f"w-{i}-sg-x-1-pc-b-0", sub="binding"),
        ]

    in_turn = read_writes(_log(tmp_path, replica(0, T0) + replica(1, T0 + 5)))
    assert rollout_order(in_turn, NS, "w", ["sg-x"]) == {
        "pcs_replicas_overlapping": 0, "group_replicas_overlapping": 0}
    at_once = read_writes(_log(tmp_path, replica(0, T0, groups_together=True)
                               + replica(1, T0 + 0.5)))
    assert rollout_order(at_once, NS, "w", ["sg-x"]) == {
        "pcs_replicas_overlapping": 1, "group_replicas_overlapping": 1}


def test_workload1_has_grove_shape_and_names_the_stacks_scheduler() -> None:
    doc = workload1(7, "phalanx-scheduler")
    assert doc["spec"]["replicas"] == 7
    assert {c["spec"]["podSpec"]["schedulerName"] for c in doc["spec"]["template"]["cliques"]} \
        == {"phalanx-scheduler"}
    shape = shape_of(doc)
    assert shape == ReplicaShape(standalone=2, group_replicas=2, pods_per_group_replica=4)
    assert shape.pods == 10


def _run(wall: float, floor: float, writes_per_pod: float, op_cpu: float) -> dict[str, Any]:
    return {"pods": 20, "wall_seconds": wall, "seconds_per_replica": wall / 2,
            "last_write_seconds": wall + 0.5, "pods_replaced": 20, "pods_recreated_twice": [],
            "replacements_deleted": [], "pcs_replicas_overlapping": 0,
            "group_replicas_overlapping": 0, "api_writes_per_pod": writes_per_pod,
            "by_writer": {OPERATOR: {"per_pod": writes_per_pod - 1}, KUBELET: {"per_pod": 1}},
            "cpu_seconds": {"phalanx-operator": op_cpu},
            "floor": {"seconds": floor, "api_writes_per_pod": 5.0},
            "ratio_to_floor": round(wall / floor, 2)}


def test_runs_are_summarised_as_median_and_spread() -> None:
    runs = [_run(4.0, 0.5, 18.0, 0.6), _run(6.0, 0.4, 19.0, 0.9), _run(5.0, 0.5, 17.0, 0.7)]
    s = summarize_real(RealRolloutConfig(replicas=2, runs=3), runs)
    assert s["wall_seconds"] == {"median": 5.0, "min": 4.0, "max": 6.0}
    assert s["seconds_per_replica"]["median"] == 2.5
    assert s["ratio_to_floor"] == {"median": 10.0, "min": 8.0, "max": 15.0}
    assert s["operator_cpu_seconds"]["median"] == 0.7
    assert s["api_writes_per_pod_by_writer"][OPERATOR]["median"] == 17.0
    assert s["pods_recreated_twice"] == 0 and s["runs_count"] == 3 and s["runs"] == runs
