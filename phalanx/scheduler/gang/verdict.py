"""The verdict on a gang: what the status controller (phalanx/scheduler/gang_status.py)
writes on its object and its pods, worked out from the gang cache alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .manager import GangManager
from .state import GangState, Phase

CONDITION_GANG_SCHEDULED = "GangScheduled"
CONDITION_SCHEDULED = CONDITION_GANG_SCHEDULED  # short alias
REASON_NOT_FOUND = Phase.NOT_FOUND.value
REASON_INCOMPLETE = Phase.INCOMPLETE.value
REASON_GROUP_INCOMPLETE = Phase.GROUP_INCOMPLETE.value
REASON_UNSCHEDULABLE = Phase.UNSCHEDULABLE.value
REASON_TIMEOUT = Phase.TIMED_OUT.value
REASON_PENDING = Phase.PENDING.value
REASON_SCHEDULED = Phase.SCHEDULED.value
# Reasons for which each pending member gets an Event.
EVENT_REASONS = {REASON_NOT_FOUND, REASON_INCOMPLETE, REASON_GROUP_INCOMPLETE, REASON_TIMEOUT}
# Verdicts of a gang that was tried (through its representative): each member counts as
# tried, so a `SchedulingGated` PodScheduled condition left from before its gates were
# removed becomes Unschedulable, as kube-scheduler's first failed attempt at a pod makes it.
TRIED_REASONS = {REASON_UNSCHEDULABLE, REASON_TIMEOUT}
SCHEDULING_GATED = "SchedulingGated"
GANG_EVENT_REASON_UNSCHEDULABLE = "GangUnschedulable"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: bool
    reason: str
    message: str


def verdict(st: GangState, manager: GangManager) -> Verdict | None:
    """What to report for a gang now; None when there is nothing to say (not a gang)."""
    spec = st.spec
    if spec is not None and not spec.is_gang:
        return None
    if st.once_satisfied and (st.free or st.last_failure is None):
        if spec is None:
            # Its object was deleted after the gang was placed (the owner goes first, the
            # garbage collector takes the pods later): nothing to write it on, and the
            # remaining members schedule as ordinary pods.
            return None
        return Verdict(
            True,
            REASON_SCHEDULED,
            f"{st.placed}/{spec.min_member} members placed (minMember reached)",
        )
    if spec is not None and not st.members and st.succeeded >= spec.min_member:
        return None  # it ran to completion: its last verdict stands, not "0/8 created"
    blocked = manager.blocked(st)
    if blocked is not None or spec is None:  # blocked() reports a missing object
        return None if blocked is None else Verdict(False, blocked.reason, blocked.message)
    f = st.last_failure
    if f is not None:
        tail = f" (attempt {st.resets + 1})" if st.resets else ""
        return Verdict(False, str(f.reason), f"{f.message}{tail}")
    return Verdict(
        False,
        REASON_PENDING,
        f"all {st.created} members created (minMember {spec.min_member}); being scheduled",
    )


def stale_gated(pod: Any) -> bool:
    """PodScheduled still says SchedulingGated (set by the API server at creation) although
    the pod has no gates left."""
    if getattr(pod.spec, "scheduling_gates", None):
        return False
    cond = pod.get_condition("PodScheduled")
    return cond is not None and cond.reason == SCHEDULING_GATED
