"""Grove's startup-ordering e2e tests (operator/e2e/tests/startup_ordering_test.go, SO1-SO4)
on the embedded cluster, with Grove's workload3-6.yaml unmodified.

Grove enforces the order with an init container that waits for the parent PodCliques'
minAvailable Ready pods; the operator injects the same (grove-initc, `phalanx
startup-wait`) and the simulated kubelet holds each pod until what its arguments name is
Ready. As Grove does, the order is checked on the lastTransitionTime of each
pod's Ready condition: every pod of the earlier group became Ready no later than the first
pod of the later group.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from .harness import assert_all_running_and_ready, by_clique, name_of, pods_of, run_e2e


def _ready_at(p: dict) -> datetime:
    cond = next(c for c in p["status"]["conditions"]
                if c["type"] == "Ready" and c["status"] == "True")
    return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))


def _in_order(before: list[dict], after: list[dict]) -> None:
    """Grove's verifyGroupStartupOrder: latest of `before` <= earliest of `after`."""
    assert before and after
    latest = max(_ready_at(p) for p in before)
    earliest = min(_ready_at(p) for p in after)
    assert latest <= earliest, (
        f"{[name_of(p) for p in after if _ready_at(p) < latest]} became Ready before "
        f"{[name_of(p) for p in before if _ready_at(p) == latest]}")


def _clique_order(pods: list[dict], first: str, n_first: int, then: str, n_then: int) -> None:
    """Grove's verifyCliqueGroupStartupOrder."""
    a, b = by_clique(pods, first), by_clique(pods, then)
    assert (len(a), len(b)) == (n_first, n_then)
    _in_order(a, b)


def _scaling_group_order(pods: list[dict]) -> None:
    """Grove's verifyScalingGroupStartupOrder for pc-a (2) before the scaling group, then
    pc-b (2) before pc-c (6) within each of sg-x-0 and sg-x-1."""
    pc_a, pc_b, pc_c = (by_clique(pods, c) for c in ("pc-a", "pc-b", "pc-c"))
    assert (len(pc_a), len(pc_b), len(pc_c)) == (2, 2, 6)
    _in_order(pc_a, pc_b + pc_c)
    for replica in ("-sg-x-0-", "-sg-x-1-"):
        _in_order(by_clique(pc_b, replica), by_clique(pc_c, replica))


def test_SO1_inorder_startup_order_with_full_replicas(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, "workload3.yaml", nodes=10)
    pods = pods_of(run.final, "workload3")
    assert_all_running_and_ready(pods, 10)
    _clique_order(pods, "pc-a", 2, "pc-b", 2)
    _clique_order(pods, "pc-b", 2, "pc-c", 6)


def test_SO2_inorder_startup_order_with_min_replicas(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, "workload4.yaml", nodes=10)
    pods = pods_of(run.final, "workload4")
    assert_all_running_and_ready(pods, 10)
    _scaling_group_order(pods)


def test_SO3_explicit_startup_order_with_full_replicas(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, "workload5.yaml", nodes=10)
    pods = pods_of(run.final, "workload5")
    assert_all_running_and_ready(pods, 10)
    _clique_order(pods, "pc-a", 2, "pc-c", 6)
    _clique_order(pods, "pc-a", 2, "pc-b", 2)
    _clique_order(pods, "pc-c", 6, "pc-b", 2)


def test_SO4_explicit_startup_order_with_min_replicas(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, "workload6.yaml", nodes=10)
    pods = pods_of(run.final, "workload6")
    assert_all_running_and_ready(pods, 10)
    _scaling_group_order(pods)
