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

Args (the profile's pluginConfig): `defaultTimeoutSeconds`, `defaultMatchPolicy` and
`onceSatisfiedScope` default per schedulerName (koord-scheduler: 600 s, once-satisfied,
object, as Koordinator; default-scheduler: 300 s as kube-scheduler's GangScheduling; the
others 60 s; gang/defaults.py, docs/koordinator.md); `pendingPodsCondition` writes
PodScheduled=False on every pending member after a failed attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from phalanx.api.core import Node
from phalanx.scheduler.framework.config import COSCHEDULING, POD_TOPOLOGY_SPREAD
from phalanx.scheduler.framework.hints import NODE_GREW, ROOM_FREED, node_change_may_help
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    FitError,
    PodInfo,
    PreFilterResult,
    QueueingHint,
)
from phalanx.scheduler.affinity import self_spread_key
from phalanx.scheduler.spread import has_hard_spread
from phalanx.scheduler.plugins.prioritysort import queue_tiers
from phalanx.scheduler.gang.fit import Need, max_placeable
from phalanx.scheduler.gang.defaults import profile_defaults
from phalanx.scheduler.gang.manager import GangManager
from phalanx.scheduler.gang.model import GangMode, MatchPolicy, SatisfiedScope
from phalanx.scheduler.gang.plan import Item, plan
from phalanx.scheduler.dra import gangplan
from phalanx.scheduler.gang.runtime import GangRuntime, member_info
from phalanx.scheduler.gang.state import GangState

# Backoff before a gang whose members were released retries (kube-scheduler's defaults).
RETRY_INITIAL_SECONDS = 1.0
RETRY_MAX_SECONDS = 10.0
# CycleState key: this plugin rejected the pod itself (gang blocked): nothing to switch.
STATE_BLOCKED = "Coscheduling/blocked"
# CycleState key: a what-if asks whether one pod fits a node (preemption plans the whole
# gang itself), so the gang capacity check stays out of it.
STATE_PER_POD_ONLY = "Coscheduling/perPodOnly"


class CoschedulingArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    # Permit wait for gangs whose object sets none; None: the profile's schedulerName default
    # (koord-scheduler 600 s as Koordinator, default-scheduler 300 s as kube-scheduler's
    # GangScheduling, others 60 s as scheduler-plugins; see gang/defaults.py).
    default_timeout_seconds: float | None = Field(default=None, gt=0)
    # Match policy of gangs whose object sets none (Koordinator's `defaultMatchPolicy`).
    default_match_policy: MatchPolicy | None = None
    # How long a gang stays satisfied once: `object` (while its PodGroup exists, Koordinator;
    # koord-scheduler's default) or `placement` (while a member holds a node; the others').
    once_satisfied_scope: SatisfiedScope | None = None
    # After a failed gang attempt, PodScheduled=False/Unschedulable on every pending member
    # (Koordinator's GangPendingPodsConditionPatch feature, on by default).
    pending_pods_condition: bool = True
    # Write GangIncomplete / Unschedulable conditions and per-pod Events (gang_status.py).
    status_controller: bool = True
    # Seconds between two status writes for the same gang (coalesces bursts of members).
    status_min_interval_seconds: float = Field(default=2.0, ge=0)
    # Plan the placement of a Strict gang's minimum as a whole when its needed members
    # differ in shape (gang/plan.py); false: member by member, each on its best node.
    whole_gang_placement: bool = True


@register_plugin
class Coscheduling(Plugin):
    NAME = COSCHEDULING
    Args = CoschedulingArgs

    def __init__(self, handle: Handle, args: Any = None) -> None:
        args = args if isinstance(args, CoschedulingArgs) else CoschedulingArgs.model_validate(args or {})
        super().__init__(handle, args)
        self.runtime = GangRuntime.for_handle(handle)
        self.manager: GangManager = self.runtime.manager
        self.cache = self.runtime.cache
        self.cache.set_defaults(handle.profile_name, profile_defaults(
            handle.profile_name, args.default_timeout_seconds, args.default_match_policy,
            args.once_satisfied_scope))
        tiers = queue_tiers(handle)
        # One per scheduler: every profile's Coscheduling shares the same gang runtime.
        if not any(
            getattr(getattr(fn, "__self__", None), "runtime", None) is self.runtime for fn in tiers
        ):
            tiers.append(self._tier)
        if args.status_controller and self.runtime.status is None:
            from phalanx.scheduler.gang_status import GangStatusController

            self.runtime.status = GangStatusController(
                handle,
                self.runtime,
                min_interval=args.status_min_interval_seconds,
                pending_pods_condition=args.pending_pods_condition,
            )

    def _tier(self, pod: PodInfo) -> int:
        """Queue tier: 1 for a gang's extra member (beyond every minimum), else 0."""
        st = self.cache.gang_of(pod.key)
        return 1 if st is not None and st.is_extra(pod.key) else 0

    async def start(self) -> None:
        """Before the scheduler's informers start: watch the gang kinds the server serves."""
        await self.runtime.start(self.handle.client)

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
        # Room freed (a pod gone or finished, a released reservation, a node added, grown,
        # uncordoned, untainted or relabelled) may let a gang the whole-gang check rejected
        # fit. Its gated members cannot be helped by that (they follow the representative).
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.DELETE, "GangMemberChange"),
                self._unblocked,
                targets=self._representative_of,
            ),
            ClusterEventWithHint(ROOM_FREED, self._room_may_help, gated=False),
            ClusterEventWithHint(NODE_GREW, self._room_may_help, gated=False),
        ]

    def _room_may_help(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Only a complete gang's member that counts towards its minimum can have been
        rejected for room (the others were held in PreFilter: member events wake them)."""
        st = self.cache.gang_of(pod.key)
        if (
            st is None
            or st.spec is None
            or GangManager.free(st)
            or self.manager.blocked(st) is not None
            or not st.counts_towards_minimum(pod.key)
        ):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old if new is None else new, Node):
            return QueueingHint.QUEUE  # an assigned pod's room (or a reservation) freed
        shapes = {tuple(sorted(pod.requests.items())): pod.requests}
        for g in self.manager.group(st):
            for m in g.needed_members(first=pod.key):
                if m.pod is not None and m.key != pod.key:
                    req = member_info(self.handle, m).requests
                    shapes.setdefault(tuple(sorted(req.items())), req)
        if node_change_may_help(shapes.values(), old, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

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

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Any
    ) -> tuple[PreFilterResult | None, Status]:
        adm = self.manager.check(pod.key)
        if adm.ok:
            return None, Status()
        state.write(STATE_BLOCKED, True)
        return None, Status.unresolvable(f"{adm.reason}: {adm.message}")

    def filter(self, state: CycleState, pod: PodInfo, snap: Any, idx: np.ndarray) -> FilterResult:
        """When a gang starts (nothing of its group placed yet), fail fast unless the nodes
        that passed the other filters have room for every member still needed. Without this a
        gang of 64 with room for 50 would assume 50 members, fail on the 51st and release
        them all, on every retry; with it the representative fails in one cycle and the
        diagnosis says by how much the cluster falls short.

        A gang whose needed members differ in shape is planned as a whole when it starts
        (gang/plan.py): each member is then steered to its planned node while that node
        still passes its filters, so one group's members cannot take the nodes another
        group's minimum needs."""
        st = self.cache.gang_of(pod.key)
        if (
            st is None
            or st.spec is None
            or GangManager.free(st)
            or idx.size == 0
            or state.read(STATE_PER_POD_ONLY)
        ):
            return FilterResult.all_pass(idx.size)
        group = self.manager.group(st)
        unit = self.manager.unit(st)
        if any(g.placed for g in group):
            if unit.plan is None:
                return FilterResult.all_pass(idx.size)
            return self._steer(unit.plan, pod, snap, idx)
        unit.plan = None
        needed = [(g, m) for g in group for m in g.needed_members(first=pod.key)]
        shapes = {self._signature(m, pod) for _, m in needed}
        # DoNotSchedule spread: where a member may go depends on where the members before it
        # went (PodTopologySpread counts the assumed ones), which neither the plan nor the
        # room count models. Such gangs are placed member by member, and their room is
        # counted on the nodes that pass every filter but the spread (spread.py).
        spread = any(has_hard_spread(self.handle, self._info(m, pod)) for _, m in needed)
        if self.args.whole_gang_placement and not spread and self._plannable(group):
            # Members with DRA claims: their nodes and devices are planned together.
            gangplan.forget(self.handle, [m.key for _, m in needed])
            infos = [self._info(m, pod) for _, m in needed]
            claims = gangplan.device_members(self.handle, infos)
            if claims is not None and not gangplan.interchangeable(self.handle, infos, claims):
                return self._plan_devices(unit, needed, claims, pod, snap, idx)
        if (len(shapes) > 1 and self.args.whole_gang_placement and not spread
                and self._plannable(group)):
            return self._plan(unit, needed, pod, snap, idx)
        rows = self._rows_but_spread(pod, snap) if has_hard_spread(self.handle, pod) else idx
        needs = self._needs(group, pod, snap, rows)
        if not needs:
            return FilterResult.all_pass(idx.size)
        free, needs = gangplan.with_devices(self.handle, pod, snap, rows, needs)
        room = max_placeable(free, needs)
        total = sum(n.count for n in needs)
        if room >= total:
            return FilterResult.all_pass(idx.size)
        return FilterResult.reject_all(
            idx.size,
            f"node(s) without room for the whole gang ({st.spec.display} needs {total} pods like this one, these nodes fit {room})",
        )

    def _info(self, m: Any, pod: PodInfo) -> PodInfo:
        return pod if m.key == pod.key or m.pod is None else member_info(self.handle, m)

    def _rows_but_spread(self, pod: PodInfo, snap: Any) -> np.ndarray:
        """The nodes that pass every filter except PodTopologySpread (a what-if)."""
        ps = CycleState()
        ps.write(STATE_PER_POD_ONLY, True)
        ps.skip_filter_plugins.add(POD_TOPOLOGY_SPREAD)
        rows = snap.valid_rows()
        return rows[self.handle.run_filter_plugins(ps, pod, rows).feasible]

    def _signature(self, m: Any, pod: PodInfo) -> Any:
        return pod.signature if m.key == pod.key or m.pod is None else member_info(self.handle, m).signature

    @staticmethod
    def _plannable(group: list[GangState]) -> bool:
        """Plans model resources, each member's own filters and a whole-gang required pack
        domain; Strict gangs only. Gangs that also constrain members against each other
        (per-group required packs, inter-pod affinity) are placed member by member."""
        for g in group:
            spec = g.spec
            # NonStrict gangs keep what they placed and accumulate (Koordinator): no plan.
            if (
                spec is None
                or spec.mode is not GangMode.STRICT
                or any(p.required for p in spec.packs if p.groups is not None)
            ):
                return False
            for m in g.members.values():
                aff = (
                    getattr(getattr(m.pod, "spec", None), "affinity", None)
                    if m.pod is not None
                    else None
                )
                if aff is not None and (aff.pod_affinity or aff.pod_anti_affinity):
                    return False
        return True

    def _plan(
        self,
        unit: Any,
        needed: list[tuple[GangState, Any]],
        pod: PodInfo,
        snap: Any,
        idx: np.ndarray,
    ) -> FilterResult:
        rows = snap.valid_rows()
        masks: dict[Any, np.ndarray] = {}
        items: list[Item] = []
        for _, m in needed:
            info = pod if m.key == pod.key or m.pod is None else member_info(self.handle, m)
            sig = info.signature
            if sig not in masks:
                mask = np.zeros(snap.n, dtype=bool)
                if info is pod:
                    mask[idx] = True
                else:
                    ps = CycleState()
                    ps.write(STATE_PER_POD_ONLY, True)
                    mask[rows[self.handle.run_filter_plugins(ps, info, rows).feasible]] = True
                masks[sig] = mask
            cols, vals = self.handle.fit_vector(info)
            items.append(Item(m.key, cols, vals, masks[sig], sig))
        free = snap.free()
        result: Any = None
        for domain in self._domains(needed[0][0], snap):
            attempt = (
                [Item(i.key, i.cols, i.vals, i.mask & domain, i.shape) for i in items]
                if domain is not None
                else items
            )
            result = plan(free, attempt)
            if isinstance(result, list):
                break
        if isinstance(result, list):
            unit.plan = {it.key: snap.names[r] for it, r in zip(items, result, strict=True)}
            return self._steer(unit.plan, pod, snap, idx)
        if result is None:
            st = needed[0][0]
            name = st.spec.display if st.spec is not None else st.id
            return FilterResult.reject_all(
                idx.size,
                f"node(s) without room for the whole gang (no placement of {name}'s {len(items)} needed members fits every group's minimum)",
            )
        return FilterResult.all_pass(idx.size)  # search budget spent: place member by member

    def _plan_devices(self, unit: Any, needed: list[tuple[GangState, Any]],
                      claims: list[Any], pod: PodInfo, snap: Any,
                      idx: np.ndarray) -> FilterResult:
        """Like `_plan`, with each member's DRA claims allocated jointly per node
        (dra/gangplan.py): alternative device assignments are tried across the gang."""
        infos = [self._info(m, pod) for _, m in needed]
        result = gangplan.plan_members(self.handle, infos, claims, pod, snap, idx,
                                       self._domains(needed[0][0], snap), STATE_PER_POD_ONLY)
        if isinstance(result, dict):
            unit.plan = {k: snap.names[r] for k, (r, _) in result.items()}
            return self._steer(unit.plan, pod, snap, idx)
        if result is None:
            st = needed[0][0]
            name = st.spec.display if st.spec is not None else st.id
            return FilterResult.reject_all(
                idx.size,
                f"node(s) without room for the whole gang (no placement of {name}'s "
                f"{len(infos)} needed members fits them and their devices)")
        return FilterResult.all_pass(idx.size)  # search budget spent: member by member

    @staticmethod
    def _domains(st: GangState, snap: Any) -> list[np.ndarray | None]:
        """Row masks to plan in: one per domain of a whole-gang required pack level."""
        req = next(
            (
                p.required
                for p in (st.spec.packs if st.spec else ())
                if p.groups is None and p.required
            ),
            None,
        )
        if req is None:
            return [None]
        col = snap.label_column(req.topology_key)[: snap.n]
        return [col == v for v in np.unique(col[col > 0]).tolist()]

    @staticmethod
    def _steer(
        plan_: dict[str, str] | None, pod: PodInfo, snap: Any, idx: np.ndarray
    ) -> FilterResult:
        """Only the planned node, while it is still among the feasible ones."""
        node = plan_.get(pod.key) if plan_ else None
        row = snap.row(node) if node is not None else None
        if row is None:
            return FilterResult.all_pass(idx.size)
        ok = idx == row
        if not ok.any():
            return FilterResult.all_pass(idx.size)  # the plan no longer holds: best node now
        return FilterResult(ok, [], "node(s) other than the one planned for this gang member")

    def _needs(
        self, group: list[GangState], pod: PodInfo, snap: Any, idx: np.ndarray
    ) -> list[Need]:
        """How many members still needed share this pod's signature (requests, selectors,
        tolerations): they pass exactly the node-local filters it passed, so all of them must
        fit on `idx`. Members of other shapes may use other nodes and are not counted."""
        count = 0
        for g in group:
            for m in g.needed_members(first=pod.key):
                if m.key == pod.key or m.pod is None or member_info(self.handle, m).signature == pod.signature:
                    count += 1
        if count <= 1:
            return []
        cols, vals = self.handle.fit_vector(pod)  # what this profile's Filter checks
        key = self_spread_key(pod)
        return [Need(cols, vals, count, spread=snap.label_column(key)[idx] if key else None)]

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
        why = (
            "the gang's schedule timeout passed"
            if timed_out
            else f"member {pod.key} released its reservation"
        )
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

    def before_post_filter(
        self, state: CycleState, pod: PodInfo, status: Status, fit: FitError | None
    ) -> Status:
        if state.read(STATE_BLOCKED):
            return Status()  # the gang itself is blocked: no member was tried, nothing to undo
        st = self.cache.gang_of(pod.key)
        if st is None or st.spec is None or GangManager.free(st):
            return Status()
        diagnosis = fit.diagnosis.to_dict() if fit is not None else None
        message = f"member {pod.key}: {fit.message() if fit is not None else status.message or 'rejected'}"
        reject = self.manager.failed(
            pod.key, "Unschedulable", message, self.handle.clock.now(), diagnosis
        )
        if reject:
            self._reject_waiting(
                reject, f"{st.spec.display} rejected: member {pod.key} is unschedulable"
            )
            # Releasing the members changed what fits (and this pod now leads the gang), which
            # no cluster event reports: retry the representative after a backoff.
            self._retry_later(st, pod.key)
        return Status()

    def _retry_later(self, st: GangState, rep: str) -> None:
        delay = retry_delay(st.resets)

        async def retry() -> None:
            await asyncio.sleep(delay)
            if self.manager.representative(st.id) == rep and st.is_pending(rep):
                self.handle.activate([rep])

        sched = getattr(self.handle, "scheduler", None)
        if sched is not None and hasattr(sched, "spawn"):
            sched.spawn(retry(), f"gang-retry-{rep}")  # tracked: wait_idle() waits for it
        else:
            asyncio.get_running_loop().create_task(retry())

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


def retry_delay(resets: int) -> float:
    """Seconds before a reset gang's representative is retried: doubling from
    RETRY_INITIAL_SECONDS, at most RETRY_MAX_SECONDS. The exponent is capped: a gang that
    waits for days resets thousands of times, and 2 ** resets overflows a float."""
    return min(RETRY_INITIAL_SECONDS * 2 ** min(max(0, resets - 1), 64), RETRY_MAX_SECONDS)
