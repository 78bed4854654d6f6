"""Grove's OnDelete e2e tests (operator/e2e/tests/update/ondelete_test.go, OD1-OD9) on the
embedded cluster, with Grove's workload-ondelete.yaml unmodified (updateStrategy OnDelete).

A spec change is an `apply` step (updates.py); `kubectl delete pod` is a `deletePod` step,
which names a pod by its hostname (`<podclique>-<index>`: pods have generated names, as in
Grove). A replacement takes its predecessor's index, hence its hostname; pods are told apart
by uid.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .harness import (
    HOST,
    Run,
    assert_all_running_and_ready,
    name_of,
    node_of,
    objects,
    pods_of,
    run_e2e,
    uids,
)
from .updates import (
    apply,
    assert_update_complete,
    deleted,
    pcs_status,
    pod_events,
    trigger_of,
    updated,
)

WL = "workload-ondelete"
FILE = "workload-ondelete.yaml"


def _end(at: str = "10m") -> dict:
    return {"at": at, "uncordon": {"selector": "node_role.e2e.grove.nvidia.com=agent"}}


def _run(tmp_path: Path, steps: list[dict], nodes: int = 10) -> Run:
    run = run_e2e(tmp_path, FILE, nodes=nodes, steps=[*steps, _end()])
    for s in run.record.steps:
        assert s.ok, (s.action, s.error)
    return run


def _of(pods: list[dict], clique: str) -> list[dict]:
    return [p for p in pods if f"-{clique}-" in name_of(p)]


def _no_automatic_deletion(run: Run, update_step: int, next_step: int,
                           original: list[dict]) -> None:
    """Grove's verifyNoAutomaticDeletionAfterUpdate: no pod deleted after the spec change,
    every original pod still there, and the update marked ended at once."""
    events = [e for e in pod_events(run, WL, since=run.t(update_step))
              if e.t < run.t(next_step)]
    assert not deleted(events), [name_of(e.pod) for e in deleted(events)]
    snap = run.before(next_step)
    assert uids(original) <= uids(pods_of(snap, WL))
    up = pcs_status(snap, WL).get("updateProgress") or {}
    assert up.get("updateStartedAt") and up.get("updateEndedAt") == up.get("updateStartedAt"), up


def _delete_first(clique: str, at: str) -> dict:
    """Grove's getFirstPodForClique + deletePodAndWaitForTermination."""
    return {"at": at, "deletePod": {"podClique": f"{WL}-0-{clique}", "count": 1}}


def _replacement(run: Run, before_step: int, after_step: int, clique: str) -> dict:
    old = uids(pods_of(run.before(before_step), WL))
    new = [p for p in _of(pods_of(run.before(after_step), WL), clique)
           if p["metadata"]["uid"] not in old]
    assert len(new) == 1, [name_of(p) for p in new]
    return new[0]


def test_OD1_no_automatic_deletion_on_spec_change(tmp_path: Path) -> None:
    run = _run(tmp_path, [apply("1m", updated(FILE, {"pc-a": "1"}))])
    original = pods_of(run.before(1), WL)
    assert_all_running_and_ready(original, 10)
    _no_automatic_deletion(run, 1, 2, original)
    assert all(trigger_of(p) is None for p in pods_of(run.before(2), WL))


def test_OD2_manual_deletion_creates_updated_pod(tmp_path: Path) -> None:
    run = _run(tmp_path, [apply("1m", updated(FILE, {"pc-a": "1"})), _delete_first("pc-a", "2m")])
    _no_automatic_deletion(run, 1, 2, pods_of(run.before(1), WL))
    new = _replacement(run, 2, 3, "pc-a")
    assert trigger_of(new) == "1"
    pclq = objects(run.before(3), "PodClique")[f"{WL}-0-pc-a"]
    assert pclq["status"]["updatedReplicas"] == 1
    others = [p for p in pods_of(run.before(3), WL)
              if p["metadata"]["uid"] != new["metadata"]["uid"]]
    assert all(trigger_of(p) is None for p in others)
    assert_all_running_and_ready(pods_of(run.before(3), WL), 10)


def test_OD3_scale_in_prefers_outdated_pods(tmp_path: Path) -> None:
    """Grove deletes the first pc-a pod by name; here the last one (pc-a-1) is deleted, so
    that removing the highest index would remove the updated pod: only a scale-in that
    prefers outdated pods keeps it."""
    steps = [apply("1m", updated(FILE, {"pc-a": "1"})),
             {"at": "2m", "deletePod": {"pod": f"{WL}-0-pc-a-1"}},
             {"at": "3m", "scale": {"kind": "PodClique", "name": f"{WL}-0-pc-a", "replicas": 1}}]
    run = _run(tmp_path, steps)
    new = _replacement(run, 2, 3, "pc-a")
    assert trigger_of(new) == "1"
    remaining = _of(pods_of(run.before(4), WL), "pc-a")
    assert [p["metadata"]["uid"] for p in remaining] == [new["metadata"]["uid"]]


def test_OD4_pcsg_no_automatic_deletion_on_spec_change(tmp_path: Path) -> None:
    run = _run(tmp_path, [apply("1m", updated(FILE, {"pc-b": "1"}))])
    _no_automatic_deletion(run, 1, 2, pods_of(run.before(1), WL))
    group = objects(run.before(2), "PodCliqueScalingGroup")[f"{WL}-0-sg-x"]
    up = group["status"].get("updateProgress") or {}
    assert up.get("updateEndedAt"), up


def test_OD5_pcsg_manual_deletion_creates_updated_replica(tmp_path: Path) -> None:
    run = _run(tmp_path, [apply("1m", updated(FILE, {"pc-c": "1"})),
                          _delete_first("sg-x-0-pc-c", "2m")])
    _no_automatic_deletion(run, 1, 2, pods_of(run.before(1), WL))
    new = _replacement(run, 2, 3, "pc-c")
    assert trigger_of(new) == "1"
    # Only that pod was replaced: its scaling group replica was not recreated whole.
    assert len(uids(pods_of(run.before(2), WL)) - uids(pods_of(run.before(3), WL))) == 1
    assert_all_running_and_ready(pods_of(run.before(3), WL), 10)


def test_OD6_mixed_pclqs_and_pcsg(tmp_path: Path) -> None:
    steps = [apply("1m", updated(FILE, {"pc-a": "1", "pc-b": "1", "pc-c": "1"})),
             _delete_first("pc-a", "2m"), _delete_first("sg-x-0-pc-b", "2m")]
    run = _run(tmp_path, steps)
    _no_automatic_deletion(run, 1, 2, pods_of(run.before(1), WL))
    old = uids(pods_of(run.before(2), WL))
    now = pods_of(run.before(4), WL)
    new = [p for p in now if p["metadata"]["uid"] not in old]
    assert sorted(name_of(p).rsplit("-", 1)[0] for p in new) == [
        f"{WL}-0-pc-a", f"{WL}-0-sg-x-0-pc-b"]
    assert all(trigger_of(p) == "1" for p in new)
    assert all(trigger_of(p) is None for p in now if p not in new)
    assert_all_running_and_ready(now, 10)


def test_OD7_multiple_replicas_pcs(tmp_path: Path) -> None:
    steps = [{"at": "30s", "scale": {"kind": "PodCliqueSet", "name": WL, "replicas": 2}},
             apply("1m", updated(FILE, {"pc-a": "1"}, replicas=2))]
    run = run_e2e(tmp_path, FILE, nodes=20, steps=[*steps, _end()])
    original = pods_of(run.before(2), WL)
    assert_all_running_and_ready(original, 20)
    _no_automatic_deletion(run, 2, 3, original)
    cliques = objects(run.before(3), "PodClique")
    for i in (0, 1):  # the strategy applies to both replicas alike
        pclq = cliques[f"{WL}-{i}-pc-a"]
        assert pclq["status"]["updateProgress"]["updateEndedAt"], pclq["status"]
        assert pclq["status"].get("updatedReplicas", 0) == 0  # no pod runs the new spec


def _exclude_host(host: str) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        clique = next(c for c in doc["spec"]["template"]["cliques"] if c["name"] == "pc-a")
        terms = clique["spec"]["podSpec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for term in terms:
            term["matchExpressions"].append(
                {"key": HOST, "operator": "NotIn", "values": [host]})
    return change


def test_OD8_node_failure_recovery_workflow(tmp_path: Path) -> None:
    """GREP-291's recovery: exclude a failed node from pc-a's affinity (OnDelete: nothing
    moves), then delete the pod on it; its replacement lands elsewhere, the rest stay."""
    (tmp_path / "probe").mkdir()
    probe = run_e2e(tmp_path / "probe", FILE, nodes=11, steps=[_end("1m")])
    victim = sorted(_of(pods_of(probe.before(1), WL), "pc-a"), key=name_of)[0]
    failed = node_of(victim)
    steps = [apply("1m", updated(FILE, change=_exclude_host(failed))),
             {"at": "2m", "deletePod": {"pod": name_of(victim)}}]
    run = _run(tmp_path, steps, nodes=11)
    original = pods_of(run.before(1), WL)
    assert {(name_of(p), node_of(p)) for p in original} == \
        {(name_of(p), node_of(p)) for p in pods_of(probe.before(1), WL)}
    _no_automatic_deletion(run, 1, 2, original)
    new = _replacement(run, 2, 3, "pc-a")
    assert node_of(new) and node_of(new) != failed, node_of(new)
    required = new["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = required["nodeSelectorTerms"][0]["matchExpressions"]
    assert {"key": HOST, "operator": "NotIn", "values": [failed]} in exprs
    healthy = [p for p in original if node_of(p) != failed]
    assert uids(healthy) <= uids(pods_of(run.before(3), WL))


def test_OD9_strategy_transition(tmp_path: Path) -> None:
    """OnDelete -> RollingRecreate -> OnDelete, each switch its own apply (the strategy is
    not part of the templates' hash: switching alone replaces nothing)."""
    a = {"pc-a": "1"}
    ab = {"pc-a": "1", "pc-b": "1"}
    abc = {"pc-a": "1", "pc-b": "1", "pc-c": "1"}
    steps = [apply("1m", updated(FILE, a)),                                   # 1
             apply("2m", updated(FILE, a, strategy="RollingRecreate")),       # 2
             apply("2m30s", updated(FILE, ab, strategy="RollingRecreate")),   # 3
             apply("4m", updated(FILE, ab, strategy="OnDelete")),             # 4
             apply("5m", updated(FILE, abc, strategy="OnDelete"))]            # 5
    run = _run(tmp_path, steps)
    _no_automatic_deletion(run, 1, 2, pods_of(run.before(1), WL))
    # The switch alone deleted nothing.
    assert not deleted([e for e in pod_events(run, WL, since=run.t(2)) if e.t < run.t(3)])
    pre_rolling = uids(pods_of(run.before(3), WL))
    after_rolling = pods_of(run.before(4), WL)
    assert_update_complete(run.before(4), WL, 1)
    assert uids(after_rolling) - pre_rolling, "RollingRecreate replaced no pod"
    assert_all_running_and_ready(after_rolling, 10)
    # Rolled: every pod runs the templates of step 3 (pc-a's OnDelete change included).
    for p in after_rolling:
        want = "1" if any(f"-{c}-" in name_of(p) for c in ab) else None
        assert trigger_of(p) == want, (name_of(p), trigger_of(p))
    _no_automatic_deletion(run, 5, 6, pods_of(run.before(5), WL))
