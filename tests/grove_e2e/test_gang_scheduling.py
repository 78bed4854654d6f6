"""Grove's gang-scheduling e2e tests (operator/e2e/tests/gang_scheduling_test.go, GS1-GS12) on
the embedded cluster, one test each, with Grove's workload1.yaml / workload2.yaml unmodified.

Each Grove step (cordon nodes, deploy, uncordon, scale a PodCliqueScalingGroup or the
PodCliqueSet) is a Scenario step a minute or two apart; what Grove polls for after a step is
asserted on the snapshot taken just before the next one (`Run.before`).

workload1: pc-a (2 pods, minAvailable 2) + sg-x (2 replicas, minAvailable 2) of pc-b (1) and
pc-c (3): one base PodGang of 10 pods, all required. workload2: the same shape with
minAvailable 1 everywhere: base PodGang pc-a + sg-x replica 0, one scaled PodGang per further
sg-x replica. Every pod asks for 80Mi of a 150Mi node: one pod per node.

GS5-GS9 and GS11 need a gang to be satisfied only when every PodGang group reaches its own
minReplicas, and extras to wait for the minimums (issue 14).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import (
    assert_all_running_and_ready,
    assert_distinct_nodes,
    assert_pending_with_unschedulable_events,
    counts,
    is_ready,
    name_of,
    node,
    nodes,
    pods_of,
    run_e2e,
    running,
)

def _pcsg(name: str, replicas: int) -> dict:
    return {"kind": "PodCliqueScalingGroup", "name": name, "replicas": replicas}


def _pcs(name: str, replicas: int) -> dict:
    return {"kind": "PodCliqueSet", "name": name, "replicas": replicas}


def test_GS1_gang_scheduling_with_full_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"node": node(0)}},
             {"at": "2m", "uncordon": {"node": node(0)}}]
    run = run_e2e(tmp_path, "workload1.yaml", nodes=10, steps=steps)
    pods = pods_of(run.before(2), "workload1")
    assert len(pods) == 10
    assert_pending_with_unschedulable_events(run, pods, run.t(2))
    final = pods_of(run.final, "workload1")
    assert_all_running_and_ready(final, 10)
    assert_distinct_nodes(final)


def test_GS2_gang_scheduling_with_scaling_full_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 5)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "scale": _pcsg("workload1-0-sg-x", 3)},
             {"at": "6m", "uncordon": {"nodes": nodes(1, 5)}}]
    run = run_e2e(tmp_path, "workload1.yaml", nodes=14, steps=steps)
    pods = pods_of(run.before(2), "workload1")
    assert len(pods) == 10
    assert_pending_with_unschedulable_events(run, pods, run.t(2))
    pods = pods_of(run.before(3), "workload1")
    assert_all_running_and_ready(pods, 10)
    assert_distinct_nodes(pods)
    pods = pods_of(run.before(4), "workload1")
    assert len(pods) == 14 and counts(pods) == (10, 4)
    final = pods_of(run.final, "workload1")
    assert_all_running_and_ready(final, 14)
    assert_distinct_nodes(final)


def test_GS3_gang_scheduling_with_pcs_scaling_full_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 11)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "scale": _pcs("workload1", 2)},
             {"at": "6m", "uncordon": {"nodes": nodes(1, 11)}}]
    run = run_e2e(tmp_path, "workload1.yaml", nodes=20, steps=steps)
    pods = pods_of(run.before(2), "workload1")
    assert len(pods) == 10
    assert_pending_with_unschedulable_events(run, pods, run.t(2))
    pods = pods_of(run.before(3), "workload1")
    assert_all_running_and_ready(pods, 10)
    assert_distinct_nodes(pods)
    pods = pods_of(run.before(4), "workload1")
    assert len(pods) == 20 and counts(pods) == (10, 10)
    final = pods_of(run.final, "workload1")
    assert_all_running_and_ready(final, 20)
    assert_distinct_nodes(final)


def test_GS4_gang_scheduling_with_pcs_and_pcsg_scaling_full_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 19)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "scale": _pcsg("workload1-0-sg-x", 3)},
             {"at": "6m", "uncordon": {"nodes": nodes(1, 5)}},
             {"at": "8m", "scale": _pcs("workload1", 2)},
             {"at": "10m", "uncordon": {"nodes": nodes(5, 15)}},
             {"at": "12m", "scale": _pcsg("workload1-1-sg-x", 3)},
             {"at": "14m", "uncordon": {"nodes": nodes(15, 19)}}]
    run = run_e2e(tmp_path, "workload1.yaml", nodes=28, steps=steps)
    pods = pods_of(run.before(2), "workload1")
    assert len(pods) == 10
    assert_pending_with_unschedulable_events(run, pods, run.t(2))
    pods = pods_of(run.before(3), "workload1")
    assert_all_running_and_ready(pods, 10)
    assert_distinct_nodes(pods)
    pods = pods_of(run.before(4), "workload1")  # scalePCSGAndWait: 14 pods, 4 new pending
    assert len(pods) == 14 and counts(pods) == (10, 4)
    pods = pods_of(run.before(5), "workload1")
    assert_all_running_and_ready(pods, 14)
    assert_distinct_nodes(pods)
    pods = pods_of(run.before(6), "workload1")  # scalePCSAndWait: 24 pods, 10 new pending
    assert len(pods) == 24 and counts(pods) == (14, 10)
    pods = pods_of(run.before(7), "workload1")
    assert_all_running_and_ready(pods, 24)
    assert_distinct_nodes(pods)
    pods = pods_of(run.before(8), "workload1")  # 28 pods, 4 new pending
    assert len(pods) == 28 and counts(pods) == (24, 4)
    final = pods_of(run.final, "workload1")
    assert_all_running_and_ready(final, 28)
    assert_distinct_nodes(final)


# --- workload2: minAvailable 1 (GS5-GS12) --------------------------------------------------


def _scaled(pods: list[dict], total: int, pending: int) -> None:
    """Grove's scalePCSGAndWait / scalePCSAndWait: `total` pods, `pending` of them Pending."""
    assert (len(pods), counts(pods)[1]) == (total, pending), (len(pods), counts(pods))


def _min_replicas_running(pods: list[dict], replica: int, group_replicas: tuple[int, ...],
                          standalone: bool = True) -> None:
    """Grove's step text "pcs-<i>-{pc-a=1, sg-x-<j>-pc-b=1, sg-x-<j>-pc-c=1}": one pod of
    each clique's minAvailable is running in PodCliqueSet replica `replica`, for the scaling
    group replicas `group_replicas` (and the standalone pc-a unless `standalone` is False,
    as in "pcs-0-{sg-x-2-pc-b=1, sg-x-2-pc-c=1}") -- the gang honoured every group's own
    minimum."""
    names = {name_of(p) for p in running(pods)}
    prefix = f"workload2-{replica}-"
    wanted = ({f"{prefix}pc-a"} if standalone else set()) | {
        f"{prefix}sg-x-{j}-{c}" for j in group_replicas for c in ("pc-b", "pc-c")}
    got: dict[str, int] = {}
    for n in names:
        clique = n.rpartition("-")[0]
        if clique.startswith(prefix):
            got[clique] = got.get(clique, 0) + 1
    assert {c: got.get(c, 0) for c in wanted} == dict.fromkeys(wanted, 1), got


def test_GS5_gang_scheduling_with_min_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 8)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "uncordon": {"nodes": nodes(1, 8)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=10, steps=steps)
    pods = pods_of(run.before(2), "workload2")
    assert len(pods) == 10 and counts(pods) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert counts(pods) == (3, 7)
    assert sum(1 for p in running(pods) if is_ready(p)) == 3
    _min_replicas_running(pods, 0, (0,))
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 10)
    assert_distinct_nodes(final)


def test_GS6_gang_scheduling_with_pcsg_scaling_min_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 12)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "uncordon": {"nodes": nodes(1, 8)}},
             {"at": "6m", "scale": _pcsg("workload2-0-sg-x", 3)},
             {"at": "8m", "uncordon": {"nodes": nodes(8, 10)}},
             {"at": "10m", "uncordon": {"nodes": nodes(10, 12)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=14, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert counts(pods) == (3, 7)
    _min_replicas_running(pods, 0, (0,))
    assert_all_running_and_ready(pods_of(run.before(4), "workload2"), 10)
    pods = pods_of(run.before(5), "workload2")
    _scaled(pods, 14, 4)
    assert_pending_with_unschedulable_events(run, pods, run.t(5), all_pending=False)
    pods = pods_of(run.before(6), "workload2")
    assert counts(pods) == (12, 2)
    assert sum(1 for p in pods if is_ready(p)) == 12
    _min_replicas_running(pods, 0, (2,), standalone=False)  # the new sg-x-2 at its minimum
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 14)
    assert_distinct_nodes(final)


def test_GS7_gang_scheduling_with_pcsg_scaling_min_replicas_advanced1(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 12)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "uncordon": {"nodes": nodes(1, 3)}},
             {"at": "6m", "uncordon": {"nodes": nodes(3, 8)}},
             {"at": "8m", "scale": _pcsg("workload2-0-sg-x", 3)},
             {"at": "10m", "uncordon": {"nodes": nodes(8, 10)}},
             {"at": "12m", "uncordon": {"nodes": nodes(10, 12)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=14, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert counts(pods) == (3, 7)
    _min_replicas_running(pods, 0, (0,))
    pods = pods_of(run.before(4), "workload2")
    assert counts(pods) == (5, 5) and sum(1 for p in pods if is_ready(p)) == 5
    _min_replicas_running(pods, 0, (0, 1))
    assert_all_running_and_ready(pods_of(run.before(5), "workload2"), 10)
    _scaled(pods_of(run.before(6), "workload2"), 14, 4)
    pods = pods_of(run.before(7), "workload2")
    assert counts(pods) == (12, 2) and sum(1 for p in pods if is_ready(p)) == 12
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 14)
    assert_distinct_nodes(final)


def test_GS8_gang_scheduling_with_pcsg_scaling_min_replicas_advanced2(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 12)}},
             {"at": "2m", "scale": _pcsg("workload2-0-sg-x", 3)},
             {"at": "4m", "uncordon": {"node": node(0)}},
             {"at": "6m", "uncordon": {"nodes": nodes(1, 5)}},
             {"at": "8m", "uncordon": {"nodes": nodes(5, 12)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=14, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert len(pods) == 14 and counts(pods) == (0, 14)
    pods = pods_of(run.before(4), "workload2")
    assert counts(pods) == (3, 11) and sum(1 for p in pods if is_ready(p)) == 3
    pods = pods_of(run.before(5), "workload2")
    assert counts(pods) == (7, 7) and sum(1 for p in pods if is_ready(p)) == 7
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 14)
    assert_distinct_nodes(final)


def test_GS9_gang_scheduling_with_pcs_scaling_min_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 18)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "uncordon": {"nodes": nodes(1, 8)}},
             {"at": "6m", "scale": _pcs("workload2", 2)},
             {"at": "8m", "uncordon": {"nodes": nodes(8, 11)}},
             {"at": "10m", "uncordon": {"nodes": nodes(11, 18)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=20, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert counts(pods) == (3, 7)
    _min_replicas_running(pods, 0, (0,))
    assert_all_running_and_ready(pods_of(run.before(4), "workload2"), 10)
    _scaled(pods_of(run.before(5), "workload2"), 20, 10)
    pods = pods_of(run.before(6), "workload2")
    assert counts(pods) == (13, 7) and sum(1 for p in pods if is_ready(p)) == 13
    _min_replicas_running(pods, 1, (0,))
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 20)
    assert_distinct_nodes(final)


def test_GS10_gang_scheduling_with_pcs_scaling_min_replicas_advanced(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 18)}},
             {"at": "2m", "scale": _pcs("workload2", 2)},
             {"at": "4m", "uncordon": {"nodes": nodes(0, 4)}},
             {"at": "6m", "uncordon": {"nodes": nodes(4, 8)}},
             {"at": "8m", "uncordon": {"nodes": nodes(8, 18)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=20, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert len(pods) == 20 and counts(pods) == (0, 20)
    pods = pods_of(run.before(4), "workload2")
    assert counts(pods) == (6, 14) and sum(1 for p in pods if is_ready(p)) == 6
    pods = pods_of(run.before(5), "workload2")
    assert counts(pods) == (10, 10) and sum(1 for p in pods if is_ready(p)) == 10
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 20)
    assert_distinct_nodes(final)


def test_GS11_gang_scheduling_with_pcs_and_pcsg_scaling_min_replicas(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 26)}},
             {"at": "2m", "uncordon": {"node": node(0)}},
             {"at": "4m", "uncordon": {"nodes": nodes(1, 8)}},
             {"at": "6m", "scale": _pcsg("workload2-0-sg-x", 3)},
             {"at": "8m", "uncordon": {"nodes": nodes(8, 10)}},
             {"at": "10m", "uncordon": {"nodes": nodes(10, 12)}},
             {"at": "12m", "scale": _pcs("workload2", 2)},
             {"at": "14m", "uncordon": {"nodes": nodes(12, 15)}},
             {"at": "16m", "uncordon": {"nodes": nodes(15, 22)}},
             {"at": "18m", "scale": _pcsg("workload2-1-sg-x", 3)},
             {"at": "20m", "uncordon": {"nodes": nodes(22, 24)}},
             {"at": "22m", "uncordon": {"nodes": nodes(24, 26)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=28, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    pods = pods_of(run.before(3), "workload2")
    assert counts(pods)[0] == 3
    _min_replicas_running(pods, 0, (0,))
    assert_all_running_and_ready(pods_of(run.before(4), "workload2"), 10)
    pods = pods_of(run.before(5), "workload2")
    _scaled(pods, 14, 4)
    assert counts(pods) == (10, 4)
    assert counts(pods_of(run.before(6), "workload2"))[0] == 12
    assert_all_running_and_ready(pods_of(run.before(7), "workload2"), 14)
    _scaled(pods_of(run.before(8), "workload2"), 24, 10)
    pods = pods_of(run.before(9), "workload2")
    assert counts(pods)[0] == 17
    _min_replicas_running(pods, 1, (0,))
    assert_all_running_and_ready(pods_of(run.before(10), "workload2"), 24)
    pods = pods_of(run.before(11), "workload2")
    assert len(pods) == 28 and counts(pods) == (24, 4)
    assert counts(pods_of(run.before(12), "workload2"))[0] == 26
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 28)
    assert_distinct_nodes(final)


def test_GS12_gang_scheduling_with_complex_pcsg_scaling(tmp_path: Path) -> None:
    steps = [{"at": "0s", "cordon": {"nodes": nodes(0, 26)}},
             {"at": "2m", "scale": _pcs("workload2", 2)},
             {"at": "4m", "scale": _pcsg("workload2-0-sg-x", 3)},
             {"at": "5m", "scale": _pcsg("workload2-1-sg-x", 3)},
             {"at": "7m", "uncordon": {"nodes": nodes(0, 4)}},
             {"at": "9m", "uncordon": {"nodes": nodes(4, 12)}},
             {"at": "11m", "uncordon": {"nodes": nodes(12, 26)}}]
    run = run_e2e(tmp_path, "workload2.yaml", nodes=28, steps=steps)
    assert counts(pods_of(run.before(2), "workload2")) == (0, 10)
    _scaled(pods_of(run.before(3), "workload2"), 20, 20)
    _scaled(pods_of(run.before(4), "workload2"), 24, 24)
    _scaled(pods_of(run.before(5), "workload2"), 28, 28)
    pods = pods_of(run.before(6), "workload2")
    assert counts(pods)[0] == 6 and sum(1 for p in pods if is_ready(p)) == 6
    pods = pods_of(run.before(7), "workload2")
    assert counts(pods)[0] == 14 and sum(1 for p in pods if is_ready(p)) == 14
    final = pods_of(run.final, "workload2")
    assert_all_running_and_ready(final, 28)
    assert_distinct_nodes(final)
