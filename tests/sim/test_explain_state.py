"""One reason for a pending gang, kube-style, and the rest as details (issue 25 item 5)."""

from phalanx.sim.explain_state import _dedupe, choose_reason

DIAG = ("0/64 nodes are available: 64 Insufficient nvidia.com/gpu. preemption: no "
        "lower-priority pods to preempt for PodGang default/batch-0 (8 members)")
PERMIT = ("Permit: PodGang default/batch-0 rejected: member default/batch-0-worker-7 is "
          "unschedulable; 0/64 nodes are available: 64 Insufficient nvidia.com/gpu.")


def test_the_node_count_diagnosis_is_the_reason() -> None:
    conditions = ["Scheduled: batch-0-worker: 0/8 scheduled"]
    assert choose_reason([], [PERMIT, DIAG], conditions) == DIAG
    assert choose_reason([], [PERMIT], conditions) == PERMIT
    assert choose_reason([], [], conditions) == conditions[0]
    assert choose_reason(["3/8 pods exist"], [DIAG], conditions) == "3/8 pods exist"
    assert choose_reason([], [], []) == "the scheduler has not reported a reason yet"


def test_nothing_is_said_twice() -> None:
    short = "0/64 nodes are available: 64 Insufficient nvidia.com/gpu."
    assert _dedupe([short, DIAG, DIAG, "", short]) == [DIAG]
    assert _dedupe(["a b", "c"]) == ["a b", "c"]
