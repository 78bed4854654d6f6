"""DynamicResources: a pod's ResourceClaims get devices on the node it is placed on.

As kube-scheduler's plugin (dynamicresources/dynamicresources.go), structured parameters:
- PreEnqueue / PreFilter: pods without `spec.resourceClaims` skip the plugin (one attribute
  read). A claim not created yet, being deleted, generated for another pod, in use by the
  maximum number of pods, or naming a device class that does not exist leaves the pod
  UnschedulableAndUnresolvable, with kube's words, until that changes.
- Filter: an allocated claim's node selector must match the node; the claims to allocate
  must fit the node's free devices. When the claims are plain counts of one device class
  (optionally all on one value of a `matchAttribute`, such as an NVLink clique), that is a
  vectorised count over every candidate node at once (dra/podclaims.py); otherwise the
  structured allocator runs per candidate node (dra/allocator.py), for at most `filterTimeout`
  (dra/args.py; 0: no limit). On a timeout, as kube 1.36's code does, the attempt fails with
  the Error `running "DynamicResources" filter plugin: node <name>: timed out trying to
  allocate devices` (CycleState.filter_error) and the pod retries after backoff; a what-if
  (gang plan, preemption) sees that node rejected.
- Score: with prioritized alternatives (`firstAvailable`), nodes where earlier alternatives
  fit rank higher (kube's computeScore, normalised to 0..100).
- Reserve: the allocation on the chosen node is held in-flight (its devices are taken for
  the next cycles); members of one gang may share a claim's pending allocation.
- Unreserve: the in-flight allocation is dropped (with the last pod holding it), and a
  reservation PreBind already wrote is withdrawn.
- PreBind: `status.allocation` and `status.reservedFor` are written (dra/binding.py).
- PostFilter: an allocated claim nobody else uses that kept the pod off every node is
  deallocated, so that other devices can be tried.

Differences from kube: an allocator error (a selector failing on a device, an unknown
allocation mode) marks the pod UnschedulableAndUnresolvable with the error, instead of an
Error status with backoff; claim or class changes retry it. Extended resources backed by
DRA, device binding conditions, consumable capacity and PodGroup claims are not supported
(UnsupportedPodFields refuses nothing here: such claims fail allocation by name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Pod
from phalanx.api.resource import FIRST_AVAILABLE_MAX_SIZE, ResourceClaim, is_reserved_for
from phalanx.scheduler.dra.allocator import AllocationError, AllocationTimeout, Allocator, \
    FailedOnNode
from phalanx.scheduler.dra.args import DynamicResourcesArgs
from phalanx.scheduler.dra.binding import BindError, bind_claim, deallocate_claim, \
    unreserve_claim
from phalanx.scheduler.dra.gangplan import shares_gang
from phalanx.scheduler.dra.podclaims import CycleClaims, Unresolvable, prepare
from phalanx.scheduler.dra.pools import Pool, gather_pools
from phalanx.scheduler.dra.tracker import CLAIM_EVENT, CLASS_EVENT, SLICE_EVENT, DraTracker
from phalanx.scheduler.framework.config import DYNAMIC_RESOURCES
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.snapshot import Snapshot

SKIP = Status.skip()
OK = Status()
_STATE = "DynamicResources/state"
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_TIMED_OUT = "timed out trying to allocate devices"  # after "node <name>: "


@register_plugin
class DynamicResources(Plugin):
    NAME = DYNAMIC_RESOURCES
    Args = DynamicResourcesArgs

    def __init__(self, handle: Any, args: Any = None) -> None:
        if not isinstance(args, DynamicResourcesArgs):
            args = DynamicResourcesArgs.model_validate(args or {})
        super().__init__(handle, args)
        self.filter_timeout = args.filter_timeout_seconds or None  # 0: no timeout
        self.tracker = DraTracker.for_handle(handle)
        self._pools: dict[str, list[Pool]] = {}
        self._pools_gen = -1

    # --- queue ----------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.pod.spec.resource_claims:
            return OK
        from phalanx.scheduler.dra.podclaims import resolve

        try:
            resolve(self.tracker, self.tracker.fresh_pod(pod.pod))
        except Unresolvable as e:
            return Status.unresolvable(str(e))
        return OK

    # --- scheduling cycle -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        if not pod.pod.spec.resource_claims:
            return None, SKIP
        if self.tracker.inflight:
            self.tracker.sweep()
        try:
            cc = prepare(self.tracker, self.tracker.fresh_pod(pod.pod),
                         lambda owners: shares_gang(self.handle, pod.key, owners))
        except Unresolvable as e:
            return None, Status.unresolvable(str(e))
        if cc is None:
            return None, SKIP
        cc.planned = self.tracker.plans.get(pod.key, {})
        state.write(_STATE, cc)
        return None, OK

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        cc: CycleClaims | None = state.read(_STATE)
        if cc is None:
            if not pod.pod.spec.resource_claims:
                return FilterResult.all_pass(idx.size)
            # A what-if without PreFilter (a gang plan, preemption): prepare here.
            _, st = self.pre_filter(state, pod, snap)
            if not st.is_success:
                return FilterResult.reject_all(idx.size, st.message or "claims unresolvable",
                                               unresolvable=True)
            cc = state.read(_STATE)
            assert cc is not None
        ok = np.ones(idx.size, dtype=bool)
        rejections: list[Rejection] = []
        if cc.selectors:
            avail = np.ones(idx.size, dtype=bool)
            for i, sel in cc.selectors.items():
                m = sel.mask(snap, idx)
                if i not in cc.pending and not m.all():
                    cc.unavailable.add(i)
                avail &= m
            if not avail.all():
                rejections.append(Rejection(REASON_NOT_AVAILABLE, ~avail))
                ok &= avail
        if cc.to_allocate:
            timed_out: list[int] = []
            try:
                fits = self._fits(cc, snap, idx, ok, timed_out)
            except AllocationError as e:
                return FilterResult.reject_all(idx.size, str(e), unresolvable=True)
            for k in timed_out:
                mask = np.zeros(idx.size, dtype=bool)
                mask[k] = True
                why = f"node {snap.names[int(idx[k])]}: {REASON_TIMED_OUT}"
                rejections.append(Rejection(why, mask))
                ok[k] = False
                if state.filter_error is None:
                    state.filter_error = Status.error(f'running "{self.NAME}" filter plugin: {why}')
            lost = ok & ~fits
            if lost.any():
                rejections.append(Rejection(REASON_CANNOT_ALLOCATE, lost))
            ok &= fits
        return FilterResult(ok, rejections, REASON_CANNOT_ALLOCATE)

    def _fits(self, cc: CycleClaims, snap: Snapshot, idx: np.ndarray,
              ok: np.ndarray, timed_out: list[int]) -> np.ndarray:
        """Per row of `idx` (where `ok`), do the claims fit; the positions whose allocator
        search ran out of filterTimeout are added to `timed_out`."""
        if cc.groups is not None:
            inv = self.tracker.ready_inventory()
            fits = np.ones(idx.size, dtype=bool)
            for g in cc.groups:
                counts = inv.free_per_row(snap, g.usable) if g.attribute is None else \
                    inv.best_group_per_row(snap, g.usable, g.attribute)
                fits &= counts[idx] >= g.need
            return fits
        fits = np.zeros(idx.size, dtype=bool)
        claims = cc.to_allocate_claims()
        allocator = self._allocator()
        for k in np.flatnonzero(ok).tolist():
            node = snap.node(int(idx[k]))
            if node is None:
                continue
            try:
                result = allocator.allocate(node, claims, self._node_pools(node),
                                            self.filter_timeout)
            except FailedOnNode:
                continue
            except AllocationTimeout:
                timed_out.append(k)
                continue
            if result is not None:
                cc.node_allocs[node.name] = result
                fits[k] = True
        return fits

    def _allocator(self) -> Allocator:
        return Allocator(self.tracker.device_class, self.tracker.users)

    def _node_pools(self, node: Any) -> list[Pool]:
        inv = self.tracker.ready_inventory()
        if self._pools_gen != inv.generation:
            self._pools.clear()
            self._pools_gen = inv.generation
        pools = self._pools.get(node.name)
        if pools is None:
            pools = self._pools[node.name] = gather_pools(self.tracker.slice_list(node.name),
                                                          node)
        return pools

    def allocate_on(self, node: Any, claims: Sequence[ResourceClaim]) -> Any:
        """The allocator's answer for `claims` on `node` now (gang planning)."""
        return self._allocator().allocate(node, claims, self._node_pools(node))

    # --- Score (prioritized alternatives) -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot,
                  idx: np.ndarray) -> Status:
        cc: CycleClaims | None = state.read(_STATE)
        return OK if cc is not None and cc.prioritized and cc.node_allocs else SKIP

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot,
              idx: np.ndarray) -> np.ndarray:
        cc: CycleClaims | None = state.read(_STATE)
        out = np.zeros(idx.size, dtype=np.float64)
        if cc is None or not cc.node_allocs:
            return out  # scored without its PreScore (a what-if): nothing to prefer
        for k, row in enumerate(idx.tolist()):
            allocs = cc.node_allocs.get(snap.names[row])
            if allocs is None:
                continue
            total = 0
            for j, i in enumerate(cc.to_allocate):
                chosen = {r.request for r in allocs[j].devices.results if "/" in r.request}
                for req in cc.claims[i].spec.devices.requests:
                    for n, sub in enumerate(req.first_available or ()):
                        if f"{req.name}/{sub.name}" in chosen:
                            total += FIRST_AVAILABLE_MAX_SIZE - n
            out[k] = total
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> np.ndarray:
        top = float(scores.max()) if scores.size else 0.0
        if top <= 0:
            return scores
        return np.floor(scores * MAX_NODE_SCORE / top)

    # --- Reserve / Unreserve -------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        cc: CycleClaims | None = state.read(_STATE)
        if cc is None or not (cc.to_allocate or cc.pending):
            return OK
        if cc.to_allocate:
            # The gang plan may be made in this very cycle (the representative's Filter).
            cc.planned = self.tracker.plans.get(pod.key, cc.planned)
            allocs = self._planned(cc, node) or cc.node_allocs.get(node)
            if allocs is None:
                snap = self.handle.snapshot()
                row = snap.row(node)
                snap_node = snap.node(row) if row is not None else None
                if snap_node is None:
                    return Status.error(f"node {node} vanished")
                try:
                    allocs = self.allocate_on(snap_node, cc.to_allocate_claims())
                except AllocationError as e:
                    return Status.unresolvable(str(e))
            if allocs is None:
                return Status.unschedulable(REASON_CANNOT_ALLOCATE)
            for j, i in enumerate(cc.to_allocate):
                cc.chosen[i] = allocs[j]
        for i, alloc in cc.pending.items():
            cc.chosen[i] = alloc
        for i, alloc in cc.chosen.items():
            self.tracker.reserve(cc.claims[i], alloc, pod.key)
        return OK

    def _planned(self, cc: CycleClaims, node: str) -> Any:
        """The gang plan's allocations for this node, while its devices are still free."""
        allocs = cc.planned.get(node)
        if allocs is None or len(allocs) != len(cc.to_allocate):
            return None
        for a in allocs:
            for r in a.devices.results:
                if not r.admin_access and self.tracker.in_use((r.driver, r.pool, r.device)):
                    return None
        return allocs

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        cc: CycleClaims | None = state.read(_STATE)
        if cc is None:
            return
        for i in list(cc.chosen):
            claim = cc.claims[i]
            if self.tracker.release(claim.metadata.uid or claim.key, pod.key):
                self.tracker.restore(claim.key)
        cc.chosen.clear()
        written = [c for c in cc.claims if c.status.allocation is not None
                   and is_reserved_for(c, pod.uid)]
        if written:
            self._spawn(self._unreserve_all(written, pod.pod), f"dra-unreserve-{pod.key}")

    async def _unreserve_all(self, claims: list[ResourceClaim], pod: Pod) -> None:
        for claim in claims:
            await unreserve_claim(self.handle.client, claim, pod)

    # --- PreBind -------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        cc: CycleClaims | None = state.read(_STATE)
        if cc is None:
            return OK
        fresh = self.tracker.fresh_pod(pod.pod)
        for i, claim in enumerate(cc.claims):
            if is_reserved_for(claim, pod.uid):
                continue
            alloc = cc.chosen.get(i)
            try:
                written = await bind_claim(self.handle.client, claim, alloc, fresh)
            except BindError as e:
                return Status.error(str(e))
            self.tracker.assume(written)
            if alloc is not None:
                self.tracker.release(written.metadata.uid or written.key, pod.key, force=True)
            cc.claims[i] = written
        return OK

    # --- PostFilter ----------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo,
                    fit: Any) -> tuple[PostFilterResult | None, Status]:
        cc: CycleClaims | None = state.read(_STATE)
        if cc is None:
            return None, Status.unschedulable("no new claims to deallocate")
        for i in sorted(cc.unavailable):
            claim = cc.claims[i]
            reserved = claim.status.reserved_for or []
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                self._spawn(deallocate_claim(self.handle.client, claim),
                            f"dra-deallocate-{claim.key}")
                return None, Status.unschedulable("deallocation of ResourceClaim completed")
        return None, Status.unschedulable("still not schedulable")

    def _spawn(self, coro: Any, name: str) -> None:
        sched = getattr(self.handle, "scheduler", None)
        if sched is not None and hasattr(sched, "spawn"):
            sched.spawn(coro, name)
        else:
            import asyncio

            asyncio.get_running_loop().create_task(coro)

    # --- events --------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | \
            ActionType.UPDATE_NODE_ALLOCATABLE
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(CLAIM_EVENT, add_update), self._after_claim),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_OTHER), self._after_pod),
            ClusterEventWithHint(ClusterEvent(CLASS_EVENT, add_update)),
            ClusterEventWithHint(ClusterEvent(SLICE_EVENT, add_update)),
        ]

    def _after_claim(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterClaimChange."""
        if not isinstance(new, ResourceClaim):
            return QueueingHint.QUEUE
        from phalanx.scheduler.dra.podclaims import resolve

        try:
            claims, _ = resolve(self.tracker, self.tracker.fresh_pod(pod.pod))
        except Unresolvable:
            return QueueingHint.QUEUE_SKIP
        if isinstance(old, ResourceClaim) and old.status.allocation is not None \
                and new.status.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices freed
        if not any(c.metadata.uid == new.metadata.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if old.status == new.status else QueueingHint.QUEUE

    def _after_pod(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterPodChange: the pod's generated claims got their names."""
        if not isinstance(new, Pod) or new.metadata.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        from phalanx.scheduler.dra.podclaims import resolve

        try:
            resolve(self.tracker, new)
        except Unresolvable:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
