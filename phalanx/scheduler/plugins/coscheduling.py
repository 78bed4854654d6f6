"""Coscheduling: all-or-nothing placement of gangs from every backend's objects.

Extension points (the rules themselves live in phalanx.scheduler.gang.manager):

- PreEnqueue: hold members of a gang that is missing or has fewer than minMember members
  created; admit one representative per gang group (the others wait gated, not failing).
- PreFilter: re-check that the gang is still complete (its object or members may be gone).
- Reserve: count the member as assumed; hand the representative role to the next pending
  member and activate it, so the gang flows through the queue back-to-back.
- Permit: wait until every gang of the group has minMember assumed, then allow them all.
  The group's schedule timeout starts with its first waiting member.
- BeforePostFilter: the failed member becomes the representative; in Strict mode every
  waiting member of the group is rejected and its reservation released *before* any
  PostFilter plugin runs, so preemption sees the room they held and acts for the whole gang.
- Unreserve: a released member of a Strict gang (timeout, failed bind) releases the group.
- PostBind: count the member as bound.

Pods that belong to no gang pass every point untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from phalanx.scheduler.framework.config import COSCHEDULING
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FitError,
    PodInfo,
    PreFilterResult,
    QueueingHint,
)
from phalanx.scheduler.gang.manager import DEFAULT_SCHEDULE_TIMEOUT, GangManager
from phalanx.scheduler.gang.runtime import GangRuntime
from phalanx.scheduler.gang.state import GangState

# CycleState key: this plugin rejected the pod itself (gang blocked): nothing to switch.
STATE_BLOCKED = "Coscheduling/blocked"
# CycleState key: the gang whose waiting members BeforePostFilter released (for preemption).
STATE_GANG_FAILED = "Coscheduling/gangFailed"


class CoschedulingArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    # Permit wait for gangs whose object sets none (scheduler-plugins' default is 60s).
    default_timeout_seconds: float = Field(default=DEFAULT_SCHEDULE_TIMEOUT, gt=0)
    # Write GangIncomplete / Unschedulable conditions and per-pod Events (gang_status.py).
    status_controller: bool = True
    # Seconds between two status writes for the same gang (coalesces bursts of members).
    status_min_interval_seconds: float = Field(default=2.0, ge=0)


@register_plugin
class Coscheduling(Plugin):
    NAME = COSCHEDULING
    Args = CoschedulingArgs

    def __init__(self, handle: Handle, args: Any = None) -> None:
        args = args if isinstance(args, CoschedulingArgs) else CoschedulingArgs.model_validate(args or {})
        super().__init__(handle, args)
        self.runtime = GangRuntime.for_handle(handle, args.default_timeout_seconds)
        self.manager: GangManager = self.runtime.manager
        self.cache = self.runtime.cache
        if args.status_controller and self.runtime.status is None:
            from phalanx.scheduler.gang_status import GangStatusController

            self.runtime.status = GangStatusController(handle, self.runtime, min_interval=args.status_min_interval_seconds)

    # --- queue --------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        adm = self.manager.admit(pod.key, pod.pod)
        if adm.ok:
            return Status()
        return Status.unresolvable(f"{adm.reason}: {adm.message}")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A member created or deleted may unblock a pod this plugin rejected in PreFilter
        # (its gang had lost a member or its object). Only the gang's representative can be
        # such a pod: the others wait gated and the gang cache activates them itself, so the
        # event targets the representative alone (a pod ADD costs O(1), not O(gang)).
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.DELETE, "GangMemberChange"),
                self._unblocked,
                targets=self._representative_of,
            )
        ]

    def _representative_of(self, old: Any, new: Any) -> list[str]:
        other = new if new is not None else old
        ref = self.cache.resolve(other) if other is not None else None
        rep = self.manager.representative(ref.gang_id) if ref is not None else None
        return [rep] if rep else []

    def _unblocked(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        st = self.cache.gang_of(pod.key)
        if st is not None and (GangManager.free(st) or self.manager.blocked(st) is None):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- scheduling cycle ---------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Any) -> tuple[PreFilterResult | None, Status]:
        adm = self.manager.check(pod.key)
        if adm.ok:
            return None, Status()
        state.write(STATE_BLOCKED, True)
        return None, Status.unresolvable(f"{adm.reason}: {adm.message}")

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for key in self.manager.reserved(pod.key, node):
            state.pods_to_activate[key] = None
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        now = self.handle.clock.now()
        reject, timed_out = self.manager.unreserved(pod.key, now)
        if not reject:
            return
        st = self.cache.gang_of(pod.key)
        name = st.spec.display if st is not None and st.spec is not None else "gang"
        why = "the gang's schedule timeout passed" if timed_out else f"member {pod.key} released its reservation"
        self._reject_waiting(reject, f"{name} rejected: {why}")

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, float]:
        decision = self.manager.permit(pod.key, self.handle.clock.now())
        if decision.wait:
            return Status.wait(decision.message), decision.timeout
        for key in decision.allow:
            uid = self._uid(key)
            wp = self.handle.get_waiting_pod(uid) if uid else None
            if wp is not None:
                wp.allow(self.NAME)
        return Status(), 0.0

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.manager.bound(pod.key, node)

    # --- failure ------------------------------------------------------------------------

    def before_post_filter(self, state: CycleState, pod: PodInfo, status: Status, fit: FitError | None) -> Status:
        if state.read(STATE_BLOCKED):
            return Status()  # the gang itself is blocked: no member was tried, nothing to undo
        st = self.cache.gang_of(pod.key)
        if st is None or st.spec is None or GangManager.free(st):
            return Status()
        diagnosis = fit.diagnosis.to_dict() if fit is not None else None
        message = f"member {pod.key}: {fit.message() if fit is not None else status.message or 'rejected'}"
        reject = self.manager.failed(pod.key, "Unschedulable", message, self.handle.clock.now(), diagnosis)
        if reject:
            self._reject_waiting(reject, f"{st.spec.display} rejected: member {pod.key} is unschedulable")
        state.write(STATE_GANG_FAILED, st.id)
        return Status()

    def _reject_waiting(self, keys: list[str], message: str) -> None:
        """Reject waiting members and release their reservations now (not when their binding
        tasks next run), so the snapshot PostFilter sees no longer counts them."""
        for key in keys:
            uid = self._uid(key)
            if uid:
                self.handle.reject_waiting_pod(uid, self.NAME, message)
            self.cache.forget(key)

    def _uid(self, key: str) -> str | None:
        st: GangState | None = self.cache.gang_of(key)
        m = st.members.get(key) if st is not None else None
        if m is not None:
            return m.uid
        info = self.handle.pod_info(key)
        return info.uid if info is not None else None
