"""The structured-parameters allocator: devices for a node's share of some claims.

Semantics of kube's "stable" allocator (k8s.io/dynamic-resource-allocation/structured,
internal/stable), with its features: admin access, prioritized alternatives
(`firstAvailable`), partitionable devices (shared counters, per-device node selection) and
device taints. A depth-first search over claims, their requests (and, for a prioritized
request, its alternatives in order) and the devices each needs, in pool/slice/device order;
it backtracks when a later request or a `matchAttribute` constraint cannot be satisfied.

    result = Allocator(classes, allocated).allocate(node, claims, pools)

returns one AllocationResult per claim, or None when the claims do not fit the node. Errors
in a claim or class (an unknown class, a selector that does not compile or fails on a
device, an unsupported mode, too many devices) raise AllocationError; FailedOnNode means only
this node failed in a way worth reporting (invalid pools). With a `timeout` (seconds), a
search still running after it stops with AllocationTimeout, checked at every search step as
kube's allocateOne checks its context.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from phalanx.api.devicecel import CELError, exact_quantity
from phalanx.api.resource import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    EXACT_COUNT,
    AllocationResult,
    DeviceClass,
    DeviceToleration,
    ResourceClaim,
)

from .pools import DeviceID, DeviceRec, Pool, node_matches
from .matching import (
    MatchAttribute,
    claim_ref,
    selector_verdict,
    taint_blocks,
)
from .results import build_result


class AllocationError(Exception):
    """A claim or class that cannot be allocated anywhere as written."""


class FailedOnNode(AllocationError):
    """Allocation failed on this node for a reason worth reporting (invalid pools)."""


class AllocationTimeout(Exception):
    """The search ran past its timeout (DynamicResources' filterTimeout). Not an
    AllocationError: the claims may well fit, this node took too long to tell."""


_now = time.monotonic  # the timeout's clock (tests replace it)


@dataclass(frozen=True, slots=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True


@dataclass(slots=True)
class _Req:
    """One request without alternatives, or one alternative of a prioritized request."""

    name: str
    class_name: str
    mode: str
    count: int
    admin: bool
    has_admin: bool
    selectors: list[Any]
    tolerations: list[DeviceToleration]
    parent: str = ""  # the prioritized request this alternative belongs to
    cls: DeviceClass | None = None
    num_devices: int = 0
    all_devices: list[tuple[DeviceRec, Pool]] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(slots=True)
class _Result:
    req: _Req
    rec: DeviceRec
    admin: bool


class Allocator:
    """Allocates claims on one node at a time. `classes` resolves DeviceClass names;
    `allocated` holds the devices in use by other claims (never given out again)."""

    def __init__(self, classes: Callable[[str], DeviceClass | None],
                 allocated: Collection[DeviceID] | Mapping[DeviceID, Any] = (),
                 features: Features = Features()) -> None:
        self.classes = classes
        self.allocated = allocated
        self.features = features
        self.invocations = 0  # search steps (allocateOne calls), for tests and benchmarks

    def allocate(self, node: Any, claims: Sequence[ResourceClaim], pools: Sequence[Pool],
                 timeout: float | None = None) -> list[AllocationResult] | None:
        deadline = _now() + timeout if timeout else None
        return _Run(self, node, claims, pools, deadline).run()


class _Run:
    def __init__(self, a: Allocator, node: Any, claims: Sequence[ResourceClaim],
                 pools: Sequence[Pool], deadline: float | None = None) -> None:
        self.a = a
        self.deadline = deadline
        self.f = a.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.reqs: dict[tuple[int, int, int], _Req] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[MatchAttribute]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.available_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        self.consumed: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}

    # --- set-up ---------------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                subs = request.first_available or []
                if subs and not self.f.prioritized_list:
                    raise AllocationError(f"claim {claim_ref(claim)}, request {request.name}: "
                                          "has subrequests, but the DRAPrioritizedList "
                                          "feature is disabled")
                if subs:
                    least = None
                    for si, sub in enumerate(subs):
                        r = _Req(sub.name, sub.device_class_name, sub.allocation_mode or "",
                                 sub.count or 0, False, False, list(sub.selectors or ()),
                                 list(sub.tolerations or ()), parent=request.name)
                        self._validate(ci, r, (ci, ri, si))
                        least = r.num_devices if least is None else min(least, r.num_devices)
                    min_devices += least or 0
                else:
                    e = request.exactly
                    if e is None:
                        raise AllocationError(f"claim {claim_ref(claim)}, request "
                                              f"{request.name}: missing device class name "
                                              "(unsupported request type?)")
                    r = _Req(request.name, e.device_class_name, e.allocation_mode or "",
                             e.count or 0, bool(e.admin_access), e.admin_access is not None,
                             list(e.selectors or ()), list(e.tolerations or ()))
                    self._validate(ci, r, (ci, ri, 0))
                    min_devices += r.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {claim_ref(claim)}: number of requested devices "
                                      f"{min_devices} exceeds the claim limit of "
                                      f"{ALLOCATION_RESULTS_MAX_SIZE}")
            cons: list[MatchAttribute] = []
            for i, c in enumerate(claim.spec.devices.constraints or ()):
                if c.match_attribute is None:
                    raise AllocationError(f"claim {claim_ref(claim)}, constraint #{i}: empty "
                                          "constraint (unsupported constraint type?)")
                cons.append(MatchAttribute(c.requests or (), c.match_attribute))
            self.constraints.append(cons)
        done = self._one(0, 0, 0, 0, False)
        if done is _TOO_MANY:
            done = False
        if not done:
            if any(p.invalid for p in self.pools):
                raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(ci) for ci in range(len(self.claims))]

    def _validate(self, ci: int, r: _Req, key: tuple[int, int, int]) -> None:
        claim = self.claims[ci]
        where = f"claim {claim_ref(claim)}, request {r.name}"
        for i, sel in enumerate(r.selectors):
            if sel.cel is None:
                raise AllocationError(f"{where}, selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
        if not self.f.admin_access and r.has_admin:
            raise AllocationError(f"{where}: admin access is requested, but the feature is "
                                  "disabled")
        if not r.class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request "
                                  "type?)")
        cls = self.a.classes(r.class_name)
        if cls is None:
            raise AllocationError(f"{where}: could not retrieve device class {r.class_name}: "
                                  f'deviceclass.resource.k8s.io "{r.class_name}" not found')
        r.cls = cls
        if r.mode == EXACT_COUNT:
            r.num_devices = r.count
        elif r.mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool "
                                          f"{pool} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"{where}: asks for all devices, but resource pool "
                                          f"{pool} is currently invalid")
                for rec in pool.devices():
                    if self._selectable(key, r, rec):
                        r.all_devices.append((rec, pool))
            r.num_devices = len(r.all_devices)
        else:
            raise AllocationError(f"{where}: unsupported count mode {r.mode}")
        self.reqs[key] = r

    # --- search ---------------------------------------------------------------------------

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> Any:
        """allocateOne: True when claims ci.. fit from request ri, alternative si, device
        di on; False when not; _TOO_MANY when the claim's device limit was exceeded."""
        self.a.invocations += 1
        if self.deadline is not None and _now() > self.deadline:
            raise AllocationTimeout
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            ok = self._one(ci + 1, 0, 0, 0, False)
            return False if ok is _TOO_MANY else ok
        r = self.reqs[(ci, ri, si)]
        if not in_sub and r.parent:
            all_exceeded = True
            k = 0
            while (ci, ri, k) in self.reqs:
                ok = self._one(ci, ri, k, di, True)
                if ok is _TOO_MANY:
                    k += 1
                    continue
                all_exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = k
                    return True
                k += 1
            return _TOO_MANY if all_exceeded else False
        if r.mode == ALL and not r.all_devices:
            return False
        if di >= r.num_devices:
            return self._one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + r.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return _TOO_MANY
        if r.mode == ALL:
            rec, pool = r.all_devices[di]
            undo = self._take(ci, r, rec, pool, must=True)
            if undo is None:
                return False
            ok = self._one(ci, ri, si, di + 1, in_sub)
            if ok is not True:
                undo()
                return ok
            return True
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for rec in pool.devices():
                if r.admin:
                    if ci in self.allocating.get(rec.id, ()):
                        continue
                elif self._in_use(rec.id):
                    continue
                if not self._selectable((ci, ri, si), r, rec):
                    continue
                undo = self._take(ci, r, rec, pool, must=False)
                if undo is None:
                    continue
                ok = self._one(ci, ri, si, di + 1, in_sub)
                if ok is True:
                    return True
                undo()
                if ok is _TOO_MANY:
                    return ok
        return False

    def _in_use(self, dev: DeviceID) -> bool:
        return dev in self.a.allocated or bool(self.allocating.get(dev))

    def _selectable(self, key: tuple[int, int, int], r: _Req, rec: DeviceRec) -> bool:
        if rec.device.binding_conditions:
            return False  # DRADeviceBindingConditions is not a stable feature
        mkey = (rec.id, *key)
        hit = self.matches.get(mkey)
        if hit is not None:
            return hit
        ok = self._selectors_match(key[0], rec, r.cls, r.cls.spec.selectors if r.cls else None) \
            and self._selectors_match(key[0], rec, None, r.selectors)
        if ok and rec.slice.spec.per_device_node_selection:
            d = rec.device
            ok = node_matches(self.node, d.node_name, d.all_nodes, d.node_selector)
        self.matches[mkey] = ok
        return ok

    def _selectors_match(self, ci: int, rec: DeviceRec, cls: DeviceClass | None,
                         selectors: Sequence[Any] | None) -> bool:
        for i, sel in enumerate(selectors or ()):
            expr = sel.cel.expression if sel.cel is not None else ""
            try:
                if not selector_verdict(rec, expr):
                    return False
            except CELError as e:
                what = "runtime" if e.runtime else "compile"
                owner = f"class {cls.name}" if cls is not None else \
                    f"claim {claim_ref(self.claims[ci])}"
                raise AllocationError(f"{owner}: selector #{i}: CEL {what} error: {e}") from None
        return True

    def _take(self, ci: int, r: _Req, rec: DeviceRec, pool: Pool,
              must: bool) -> Callable[[], None] | None:
        """allocateDevice: the undo function, or None when the device cannot be used."""
        if r.admin:
            if ci in self.allocating.get(rec.id, ()):
                return None
        elif self._in_use(rec.id):
            return None
        if rec.counters:
            if not self.f.partitionable_devices or not self._counters_fit(rec, pool):
                return None
        if self.f.device_taints and taint_blocks(rec, r.tolerations):
            if rec.counters:
                self._release_counters(rec, pool)
            return None
        cons = self.constraints[ci]
        for i, c in enumerate(cons):
            if not c.add(r, rec):
                if must:
                    raise AllocationError(
                        f"claim {claim_ref(self.claims[ci])}, request {r.name}: cannot add "
                        f"device {'/'.join(rec.id)} because a claim constraint would not be "
                        "satisfied")
                for c2 in cons[:i]:
                    c2.remove(r)
                if rec.counters:
                    self._release_counters(rec, pool)
                return None
        self.allocating.setdefault(rec.id, set()).add(ci)
        n = len(self.results[ci])
        self.results[ci].append(_Result(r, rec, r.admin))

        def undo() -> None:
            for c in cons:
                c.remove(r)
            self.allocating[rec.id].discard(ci)
            if rec.counters:
                self._release_counters(rec, pool)
            del self.results[ci][n:]

        return undo

    # --- shared counters --------------------------------------------------------------------

    def _counters_fit(self, rec: DeviceRec, pool: Pool) -> bool:
        pid = pool.id
        avail = self.available_counters.get(pid)
        if avail is None:
            avail = {name: {k: exact_quantity(v) for k, v in cs.items()}
                     for name, cs in pool.counter_sets.items()}
            for rs in [*pool.slices, *pool.other_slices]:
                for d in rs.spec.devices:
                    if (rs.spec.driver, rs.spec.pool.name, d.name) not in self.a.allocated:
                        continue
                    for use in d.consumes_counters or ():
                        have = avail.get(use.counter_set, {})
                        for k, c in use.counters.items():
                            if k in have:
                                have[k] -= exact_quantity(c.value)
            self.available_counters[pid] = avail
        consumed = self.consumed.setdefault(pid, {})
        for use in rec.device.consumes_counters or ():
            mine = consumed.setdefault(use.counter_set, {})
            for k, c in use.counters.items():
                mine[k] = mine.get(k, Fraction(0)) + exact_quantity(c.value)
        for name, counters in avail.items():
            used = consumed.get(name, {})
            for k, value in counters.items():
                if value < used.get(k, 0):
                    self._release_counters(rec, pool)
                    return False
        return True

    def _release_counters(self, rec: DeviceRec, pool: Pool) -> None:
        consumed = self.consumed.get(pool.id, {})
        for use in rec.device.consumes_counters or ():
            mine = consumed.get(use.counter_set, {})
            for k, c in use.counters.items():
                mine[k] = mine.get(k, Fraction(0)) - exact_quantity(c.value)

    # --- results --------------------------------------------------------------------------

    def _result(self, ci: int) -> AllocationResult:
        chosen = {ri: self.selected_sub.get((ci, ri), 0)
                  for ri in range(len(self.claims[ci].spec.devices.requests))}
        return build_result(self.claims[ci], self.results[ci], self.reqs, ci, chosen)


_TOO_MANY = object()  # errAllocationResultMaxSizeExceeded
