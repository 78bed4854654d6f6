"""Claims, classes and slices as the scheduler knows them (kube's DRA manager).

Fed by the scheduler's informers, plus what this scheduler did and the informers have not
shown yet:
- *in-flight* allocations: chosen at Reserve for a claim, published at PreBind. Their
  devices count as in use from Reserve on. An allocation belongs to the pods that reserved
  it (gang members may share a claim); it is dropped when the last of them is unreserved,
  or when none of them is assumed or bound by the scheduler any more (a gang rejected at
  Permit releases its reservations at once; the members' Unreserve runs later);
- *assumed* claims: the version PreBind wrote, until the informer delivers it or a newer one.

Devices in use (`users`) are reference counts over every claim's allocation (assumed
version first) and every in-flight allocation; the inventory's in-use bits follow them.
One tracker serves every profile (`DraTracker.for_handle`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.core import Pod
from phalanx.api.resource import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    allocated_devices,
)

from ..informed import attach_handlers, guard, queue_event
from .inventory import Inventory
from .pools import DeviceID

log = logging.getLogger(__name__)

SHARED_KEY = "dra/tracker"
# Cluster-event resource names (the Kinds), as plugins register for them.
CLAIM_EVENT = "ResourceClaim"
CLASS_EVENT = "DeviceClass"
SLICE_EVENT = "ResourceSlice"


@dataclass(slots=True)
class InFlight:
    claim_key: str
    allocation: AllocationResult
    owners: dict[str, None] = field(default_factory=dict)  # pod keys

    def devices(self) -> list[DeviceID]:
        return [(r.driver, r.pool, r.device) for r in self.allocation.devices.results
                if not r.admin_access]


class DraTracker:
    def __init__(self) -> None:
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        # Slices by `spec.nodeName`, and the others (node selectors, all nodes, counters).
        self.node_slices: dict[str, dict[str, ResourceSlice]] = {}
        self.shared_slices: dict[str, ResourceSlice] = {}
        self.pool_slices: dict[tuple[str, str], dict[str, ResourceSlice]] = {}
        self.claims: dict[str, ResourceClaim] = {}
        self.assumed: dict[str, ResourceClaim] = {}
        self.inflight: dict[str, InFlight] = {}  # claim uid ->
        self.users: dict[DeviceID, int] = {}
        self._counted: dict[str, list[DeviceID]] = {}  # claim key -> devices counted
        self.inventory = Inventory()
        self._stale = True  # slices changed: rebuild the inventory before the next read
        self.version = 0  # bumps on every change of devices in use, slices or classes
        self.pods: Any = None  # the scheduler's pod informer (freshest pod objects)
        self.alive: Callable[[str], bool] = lambda key: True  # is a pod assumed or bound?
        self.listeners: list[Callable[[str, Any, Any], None]] = []
        # Whole-gang device plans (gangplan.py): pod key -> node -> allocations, aligned to
        # the pod's claims to allocate. Checked against devices in use when used.
        self.plans: dict[str, dict[str, list[AllocationResult]]] = {}
        self.plan_groups: dict[str, frozenset[str]] = {}  # pod key -> its gang's plan keys
        self._waiters: list[asyncio.Future[None]] = []

    # --- wiring ---------------------------------------------------------------------------

    @classmethod
    def for_handle(cls, handle: Any) -> DraTracker:
        sched = getattr(handle, "scheduler", None)
        shared = getattr(handle, "shared", None)
        if sched is None or shared is None:
            return shared(SHARED_KEY, cls) if shared is not None else cls()

        def build() -> DraTracker:
            tracker = cls()
            tracker.attach(sched.informers)
            cache = sched.cache
            tracker.alive = lambda key: cache.is_assumed(key) or key in cache.bound
            tracker.listeners.append(lambda kind, old, new: queue_event(sched, kind, old, new))
            return tracker

        tracker: DraTracker = shared(SHARED_KEY, build)
        return tracker

    def attach(self, informers: Any) -> None:
        attach_handlers(informers, (
            (DeviceClass, self.set_class, self.delete_class),
            (ResourceSlice, self.set_slice, self.delete_slice),
            (ResourceClaim, self.set_claim, self.delete_claim),
        ), "DRA tracker")
        self.pods = informers.informer(Pod)
        self.pods.add_handler(on_update=guard(self._pod_updated, "DRA tracker"))

    # --- informer side --------------------------------------------------------------------

    def set_class(self, dc: DeviceClass, old: DeviceClass | None = None) -> None:
        prev = self.classes.get(dc.name)
        self.classes[dc.name] = dc
        self.version += 1
        self._changed(CLASS_EVENT, old if old is not None else prev, dc)

    def delete_class(self, dc: DeviceClass) -> None:
        self.classes.pop(dc.name, None)
        self.version += 1
        self._changed(CLASS_EVENT, dc, None)

    def _index_slice(self, rs: ResourceSlice, add: bool) -> None:
        bucket = self.node_slices.setdefault(rs.spec.node_name, {}) if rs.spec.node_name \
            else self.shared_slices
        pool = self.pool_slices.setdefault((rs.spec.driver, rs.spec.pool.name), {})
        if add:
            bucket[rs.name] = rs
            pool[rs.name] = rs
        else:
            bucket.pop(rs.name, None)
            pool.pop(rs.name, None)

    def set_slice(self, rs: ResourceSlice, old: ResourceSlice | None = None) -> None:
        prev = self.slices.get(rs.name)
        if prev is not None:
            self._index_slice(prev, False)
        self.slices[rs.name] = rs
        self._index_slice(rs, True)
        self._stale = True
        self.version += 1
        self._changed(SLICE_EVENT, old if old is not None else prev, rs)

    def delete_slice(self, rs: ResourceSlice) -> None:
        prev = self.slices.pop(rs.name, None)
        if prev is not None:
            self._index_slice(prev, False)
        self._stale = True
        self.version += 1
        self._changed(SLICE_EVENT, rs, None)

    def set_claim(self, claim: ResourceClaim, old: ResourceClaim | None = None) -> None:
        key = claim.key
        prev = self.claims.get(key)
        self.claims[key] = claim
        mine = self.assumed.get(key)
        if mine is not None and (mine.metadata.uid != claim.metadata.uid
                                 or _rv(claim) >= _rv(mine)):
            del self.assumed[key]
        self._recount(key)
        self._changed(CLAIM_EVENT, old if old is not None else prev, claim)

    def delete_claim(self, claim: ResourceClaim) -> None:
        key = claim.key
        self.claims.pop(key, None)
        self.assumed.pop(key, None)
        uid = claim.metadata.uid or ""
        flight = self.inflight.pop(uid, None)
        if flight is not None:
            self._count(flight.devices(), -1)
        self._recount(key)
        self._changed(CLAIM_EVENT, claim, None)

    def _pod_updated(self, old: Pod, new: Pod) -> None:
        """A pending pod got its generated claims' names (kube's
        UpdatePodGeneratedResourceClaim event)."""
        if new.spec.node_name or not new.spec.resource_claims:
            return
        if old.status.resource_claim_statuses != new.status.resource_claim_statuses:
            self._changed("Pod", old, new)

    # --- reads ----------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        key = f"{namespace}/{name}"
        return self.assumed.get(key) or self.claims.get(key)

    def api_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def device_class(self, name: str) -> DeviceClass | None:
        return self.classes.get(name)

    def fresh_pod(self, pod: Pod) -> Pod:
        """The informer's newest version of a pod (the queue may hold an older one)."""
        if self.pods is None:
            return pod
        newer = self.pods.get(pod.key)
        return newer if newer is not None and newer.metadata.uid == pod.metadata.uid else pod

    def in_use(self, dev: DeviceID) -> bool:
        return self.users.get(dev, 0) > 0

    def ready_inventory(self) -> Inventory:
        if self._stale:
            self._stale = False
            self.inventory.rebuild(list(self.slices.values()), self.in_use)
        return self.inventory

    def slice_list(self, node: str | None = None) -> list[ResourceSlice]:
        """Every slice; with `node`, those a node can reach through its name plus every
        slice not tied to one node name (what GatherPools needs for that node: a pool of
        node-local slices lives on one node)."""
        if node is None:
            return list(self.slices.values())
        mine = self.node_slices.get(node, {})
        out = [*mine.values(), *self.shared_slices.values()]
        seen = set(mine)
        for rs in list(mine.values()):  # a pool spread over several nodes: all of it
            pool = self.pool_slices.get((rs.spec.driver, rs.spec.pool.name), {})
            for name, other in pool.items():
                if name not in seen:
                    seen.add(name)
                    out.append(other)
        return out

    # --- in-flight allocations ---------------------------------------------------------------

    def pending(self, uid: str) -> InFlight | None:
        return self.inflight.get(uid)

    def reserve(self, claim: ResourceClaim, allocation: AllocationResult, pod_key: str) -> None:
        """A pod's Reserve chose `allocation` for `claim` (or joins a pending one)."""
        uid = claim.metadata.uid or claim.key
        flight = self.inflight.get(uid)
        if flight is None:
            flight = self.inflight[uid] = InFlight(claim.key, allocation)
            self._count(flight.devices(), +1)
        flight.owners[pod_key] = None

    def release(self, uid: str, pod_key: str, *, force: bool = False) -> bool:
        """The pod no longer needs the pending allocation; True when it was dropped."""
        flight = self.inflight.get(uid)
        if flight is None:
            return False
        flight.owners.pop(pod_key, None)
        if flight.owners and not force:
            return False
        del self.inflight[uid]
        self._count(flight.devices(), -1)
        self.version += 1
        self._changed(CLAIM_EVENT, None, None)
        return True

    def sweep(self) -> None:
        """Drop in-flight allocations whose pods are all gone from the scheduler's cache
        (a rejected gang's reservations, before its members' Unreserve runs)."""
        dead = [uid for uid, f in self.inflight.items()
                if not any(self.alive(k) for k in f.owners)]
        for uid in dead:
            flight = self.inflight.pop(uid)
            self._count(flight.devices(), -1)
        if dead:
            self.version += 1

    def assume(self, claim: ResourceClaim) -> None:
        """PreBind wrote `claim`: count it as written until the informer catches up."""
        key = claim.key
        api = self.claims.get(key)
        if api is not None and _rv(api) >= _rv(claim):
            return
        self.assumed[key] = claim
        self._recount(key)

    def restore(self, key: str) -> None:
        if self.assumed.pop(key, None) is not None:
            self._recount(key)

    # --- counting -------------------------------------------------------------------------

    def _recount(self, key: str) -> None:
        claim = self.assumed.get(key) or self.claims.get(key)
        now = allocated_devices(claim) if claim is not None else []
        before = self._counted.get(key, [])
        if now == before:
            return
        self._count(before, -1)
        self._count(now, +1)
        if now:
            self._counted[key] = now
        else:
            self._counted.pop(key, None)
        if claim is not None and claim.status.allocation is not None:
            # Published: a pending allocation of the claim is now the claim's own.
            flight = self.inflight.get(claim.metadata.uid or "")
            if flight is not None:
                del self.inflight[claim.metadata.uid or ""]
                self._count(flight.devices(), -1)

    def _count(self, devices: Iterable[DeviceID], delta: int) -> None:
        users = self.users
        inv = None if self._stale else self.inventory
        for dev in devices:
            n = users.get(dev, 0) + delta
            if n > 0:
                users[dev] = n
                if inv is not None and n == delta:
                    inv.mark(dev, True)
            else:
                users.pop(dev, None)
                if inv is not None:
                    inv.mark(dev, False)
        self.version += 1

    def _changed(self, kind: str, old: Any, new: Any) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)
        for fn in self.listeners:
            try:
                fn(kind, old, new)
            except Exception:
                log.exception("DRA tracker listener failed")

    async def wait_for_change(self, timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass


@contextmanager
def devices_released(handle: Any, pods: Iterable[Any]) -> Iterator[None]:
    """A what-if (preemption): while inside, the devices of claims that only `pods`
    (PodInfos) use, reserved or in flight, count as free. No-op without a DRA tracker."""
    sched = getattr(handle, "scheduler", None)
    tracker = getattr(sched, "_shared", {}).get(SHARED_KEY) if sched is not None else None
    if tracker is None:
        yield
        return
    uids = {p.uid for p in pods}
    keys = {p.key for p in pods}
    freed: list[DeviceID] = []
    for key, devices in tracker._counted.items():
        claim = tracker.assumed.get(key) or tracker.claims.get(key)
        users = [r.uid for r in (claim.status.reserved_for or ())] if claim else []
        if users and all(u in uids for u in users):
            freed.extend(devices)
    for flight in tracker.inflight.values():
        if flight.owners and all(k in keys for k in flight.owners):
            freed.extend(flight.devices())
    tracker._count(freed, -1)
    try:
        yield
    finally:
        tracker._count(freed, +1)


def _rv(obj: Any) -> int:
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0
