"""Whole-gang device placement: a gang's claims are allocated together, before any member
is placed.

Member by member, each pod's claims get the first devices that fit on its node, and a
later member can fail although another assignment of the earlier members' devices would
have fitted everyone (kubernetes #138765: a prioritized request takes its first choice, a
whole device, where its second choice, a half, would leave room for the next member).
`plan` assigns every needed member a node *and* its devices: it places members one at a
time (nodes the gang already uses first, then best fit), and on each node runs the
structured allocator on the claims of every member planned there at once, so the
allocator's own backtracking (over requests, alternatives and devices) covers the whole
gang's share of the node. When a member fits nowhere it backtracks over the earlier
members' nodes, within a budget; identical members are placed in node order only.
Candidate rows per member come from the member's own filters (its node selectors, taints,
and a device pre-check), and the caller plans once per domain of a required pack level, so
a `matchAttribute` on an NVLink clique composes with the gang's topology constraint.

Returns {member key: (row, allocations)} or None (no placement exists: the gang fails
fast), or UNKNOWN (budget spent: the gang is placed member by member as before).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.scheduler.gang.plan import UNKNOWN

_EPS = 1e-9
DEFAULT_BUDGET = 4_000  # allocator calls before giving up
GANG_RUNTIME_KEY = "phalanx.scheduler.gang.runtime"


@dataclass(slots=True)
class Member:
    key: str
    cols: np.ndarray
    vals: np.ndarray
    mask: np.ndarray  # bool over snapshot rows
    claims: Sequence[Any]  # the claims to allocate for it
    shape: object = None  # equal shapes (requests, filters and claim specs): interchangeable


Placement = dict[str, tuple[int, list[Any]]]
AllocFn = Callable[[int, list[Any]], "list[Any] | None"]


def plan(free: np.ndarray, members: Sequence[Member], allocate: AllocFn, *,
         budget: int = DEFAULT_BUDGET) -> Placement | None | Any:
    """A node and devices per member so that all fit together (see module docstring).
    `allocate(row, claims)` is the allocator on that row's node for those claims (None:
    they do not fit); `free` (rows x resource columns) is not modified."""
    if not members:
        return {}
    order = sorted(range(len(members)), key=lambda i: -float(members[i].vals.sum()))
    items = [members[i] for i in order]
    work = free.copy()
    on_row: dict[int, list[int]] = {}  # row -> positions in `items` placed there
    chosen: list[int] = []
    results: dict[int, list[Any]] = {}  # row -> allocations of its members (in order)
    calls = 0

    failed: dict[int, list[frozenset[object]]] = {}  # row -> shape multisets that failed

    def joint(row: int, positions: list[int]) -> list[Any] | None:
        nonlocal calls
        # A set of members that does not fit a node does not fit with more members either.
        shapes = frozenset(_multiset([items[p].shape or p for p in positions]))
        if any(f <= shapes for f in failed.get(row, ())):
            return None
        calls += 1
        claims = [c for p in positions for c in items[p].claims]
        got = allocate(row, claims)
        if got is None:
            failed.setdefault(row, []).append(shapes)
        return got

    def candidates(i: int) -> list[int]:
        it = items[i]
        fits = it.mask & np.all(work[:, it.cols] + _EPS >= it.vals, axis=1)
        rows = np.flatnonzero(fits)
        if i > 0 and it.shape is not None and items[i - 1].shape == it.shape:
            rows = rows[rows >= chosen[-1]]
        if rows.size == 0:
            return []
        allowed = set(rows.tolist())
        used = [r for r in on_row if r in allowed]
        rest = rows[~np.isin(rows, used)] if used else rows
        if rest.size and it.cols.size:  # no resources checked: any order
            left = (work[np.ix_(rest, it.cols)] - it.vals) / np.maximum(it.vals, _EPS)
            rest = rest[np.argsort(left.min(axis=1), kind="stable")]
        return sorted(used) + rest.tolist()

    def rec(i: int) -> bool | None:
        if i == len(items):
            return True
        it = items[i]
        for row in candidates(i):
            if calls >= budget:
                return None
            positions = [*on_row.get(row, []), i]
            got = joint(row, positions)
            if got is None:
                continue
            prev = results.get(row)
            on_row[row] = positions
            results[row] = got
            work[row, it.cols] -= it.vals
            chosen.append(row)
            r = rec(i + 1)
            if r:
                return True
            chosen.pop()
            work[row, it.cols] += it.vals
            positions.pop()
            if positions:
                results[row] = prev  # type: ignore[assignment]
            else:
                del on_row[row]
                del results[row]
            if r is None:
                return None
        return False

    found = rec(0)
    if found is None:
        return UNKNOWN
    if not found:
        return None
    out: Placement = {}
    for row, positions in on_row.items():
        allocs = results[row]
        k = 0
        for p in positions:
            n = len(items[p].claims)
            out[items[p].key] = (row, list(allocs[k:k + n]))
            k += n
    return out


def shares_gang(handle: Any, pod_key: str, owners: Sequence[str]) -> bool:
    """Whether `pod_key` and every pod in `owners` belong to one gang group (their pending
    claim allocations may be shared within one gang attempt)."""
    sched = getattr(handle, "scheduler", None)
    rt = getattr(sched, "_shared", {}).get(GANG_RUNTIME_KEY) if sched is not None else None
    if rt is None or not owners:
        return False
    st = rt.cache.gang_of(pod_key)
    if st is None:
        return False
    group = {k for g in rt.manager.group(st) for k in g.members}
    return all(k in group for k in owners)



# --- the coscheduling side ------------------------------------------------------------------


def device_members(handle: Any, infos: Sequence[Any]) -> list[Any] | None:
    """Per member (PodInfo), its claims to allocate, when planning devices for the gang
    makes sense: some member has claims to allocate, none of them is shared by two members
    (a shared claim is allocated once, by the first member, and joined by the others) and
    every member's claims resolve. None otherwise."""
    if not any(i.pod.spec.resource_claims for i in infos):
        return None
    from .podclaims import Unresolvable, prepare
    from .tracker import DraTracker

    tracker = DraTracker.for_handle(handle)
    out: list[Any] = []
    seen: set[str] = set()
    for info in infos:
        if not info.pod.spec.resource_claims:
            out.append([])
            continue
        try:
            cc = prepare(tracker, tracker.fresh_pod(info.pod))
        except Unresolvable:
            return None
        claims = cc.to_allocate_claims() if cc is not None else []
        for c in claims:
            uid = c.metadata.uid or c.key
            if uid in seen:
                return None
            seen.add(uid)
        out.append(claims)
    return out if any(out) else None


def node_allocator(handle: Any, own: Sequence[str] = ()) -> AllocFn:
    """`allocate(row, claims)` on the scheduler's current devices (None: no fit). Devices
    that another starting gang planned for its members (`own` are this gang's) count as
    taken: two gangs planned at once would otherwise take the same free room, fail on each
    other and retry together."""
    from .allocator import AllocationError, Allocator
    from .pools import gather_pools
    from .tracker import DraTracker

    tracker = DraTracker.for_handle(handle)
    snap = handle.snapshot()
    held = planned_elsewhere(handle, tracker, set(own))
    taken: Any = tracker.users if not held else _Either(tracker.users, held)
    allocator = Allocator(tracker.device_class, taken)
    pools: dict[int, Any] = {}
    inv = tracker.ready_inventory()
    # Free devices per row, when every device is indexed: more devices than that cannot fit,
    # and the allocator would try every assignment before saying so.
    free = inv.free_per_row(snap, inv.every_device).copy() \
        if not inv.unindexed else None
    if free is not None:
        for dev in held:
            i = inv.index.get(dev)
            if i is not None and not inv.in_use[i] and inv.rows(snap)[i] >= 0:
                free[inv.rows(snap)[i]] -= 1

    def allocate(row: int, claims: list[Any]) -> list[Any] | None:
        node = snap.node(row)
        if node is None:
            return None
        if free is not None and sum(min_devices(c) for c in claims) > free[row]:
            return None
        if row not in pools:
            pools[row] = gather_pools(tracker.slice_list(node.name), node)
        try:
            return allocator.allocate(node, claims, pools[row])
        except AllocationError:
            return None

    return allocate


def min_devices(claim: Any) -> int:
    """The fewest devices a claim can be given (each request's smallest alternative; a
    request for all devices counts none)."""
    total = 0
    for req in claim.spec.devices.requests:
        if req.exactly is not None:
            total += (req.exactly.count or 0) if req.exactly.allocation_mode == "ExactCount" \
                else 0
        elif req.first_available:
            total += min((s.count or 0) if s.allocation_mode == "ExactCount" else 0
                         for s in req.first_available)
    return total


def remember(handle: Any, placement: Placement, names: Sequence[str]) -> None:
    """Hand the planned devices to DynamicResources (checked again when used)."""
    from .tracker import DraTracker

    tracker = DraTracker.for_handle(handle)
    group = frozenset(placement)
    for key, (row, allocs) in placement.items():
        tracker.plans[key] = {names[row]: allocs} if allocs else {}
        tracker.plan_groups[key] = group


def forget(handle: Any, keys: Sequence[str]) -> None:
    from .tracker import DraTracker

    tracker = DraTracker.for_handle(handle)
    for k in keys:
        tracker.plans.pop(k, None)
        tracker.plan_groups.pop(k, None)


def plan_members(handle: Any, infos: Sequence[Any], claims: Sequence[Any], pod: Any,
                 snap: Any, idx: np.ndarray, domains: Sequence[np.ndarray | None],
                 per_pod_key: str) -> Placement | None | Any:
    """Plan a starting gang's needed members (PodInfos; `pod` is the one in its cycle,
    `idx` its feasible rows) in the first domain that holds them all; remembers the devices
    for DynamicResources. Candidate rows of the other members come from their own filters
    (a what-if with `per_pod_key` set, so the gang check stays out of it)."""
    from phalanx.scheduler.framework.cycle_state import CycleState

    rows = snap.valid_rows()
    masks: dict[Any, np.ndarray] = {}
    members: list[Member] = []
    for info, mine in zip(infos, claims, strict=True):
        shape = (info.signature, tuple(c.spec.model_dump_json() for c in mine))
        if shape not in masks:
            mask = np.zeros(snap.n, dtype=bool)
            if info is pod:
                mask[idx] = True
            else:
                ps = CycleState()
                ps.write(per_pod_key, True)
                mask[rows[handle.run_filter_plugins(ps, info, rows).feasible]] = True
            masks[shape] = mask
        cols, vals = handle.fit_vector(info)
        members.append(Member(info.key, cols, vals, masks[shape], mine, shape))
    free = snap.free()
    allocate = node_allocator(handle, [i.key for i in infos])
    result: Any = None
    for domain in domains:
        attempt = members if domain is None else [
            Member(x.key, x.cols, x.vals, x.mask & domain, x.claims, x.shape) for x in members]
        result = plan(free, attempt, allocate)
        if isinstance(result, dict):
            remember(handle, result, snap.names)
            break
    return result


def _multiset(keys: Sequence[object]) -> list[tuple[object, int]]:
    """(key, n) for the n-th occurrence of each key: subset tests on multisets."""
    seen: dict[object, int] = {}
    out = []
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
        out.append((k, seen[k]))
    return out


def _simple_group(handle: Any, info: Any) -> Any:
    """The one exact vectorised device group of a pod's claims (podclaims.Group), or None."""
    from .podclaims import Unresolvable, prepare
    from .tracker import DraTracker

    if not info.pod.spec.resource_claims:
        return None
    tracker = DraTracker.for_handle(handle)
    try:
        cc = prepare(tracker, tracker.fresh_pod(info.pod))
    except Unresolvable:
        return None
    if cc is None or cc.pending or cc.selectors or cc.groups is None or len(cc.groups) != 1:
        return None
    return cc.groups[0]


def interchangeable(handle: Any, infos: Sequence[Any], claims: Sequence[Any]) -> bool:
    """Members all alike whose claims are plain counts of one device class (no constraint,
    no alternatives): any member fits wherever another would, and devices of a node are
    interchangeable, so placing them one by one loses nothing; the gang's room is then
    counted with its devices (`with_devices`) instead of planned."""
    if len({i.signature for i in infos}) != 1:
        return False
    if len({tuple(c.spec.model_dump_json() for c in mine) for mine in claims}) != 1:
        return False
    group = _simple_group(handle, infos[0])
    return group is not None and group.attribute is None


def with_devices(handle: Any, pod: Any, snap: Any, rows: np.ndarray,
                 needs: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """The free-resource matrix of `rows` and the gang's needs, with the pod's devices as
    one more column (free devices of its class per node; each member needs its count)."""
    free = snap.free(rows)
    if not pod.pod.spec.resource_claims or not needs:
        return free, needs
    group = _simple_group(handle, pod)
    if group is None or group.attribute is not None:
        return free, needs
    from phalanx.scheduler.gang.fit import Need

    from .tracker import DraTracker

    devices = DraTracker.for_handle(handle).ready_inventory().free_per_row(snap, group.usable)
    col = free.shape[1]
    free = np.column_stack([free, devices[rows].astype(free.dtype)])
    out = [Need(np.append(n.cols, col), np.append(n.vals, float(group.need)), n.count, n.mask,
                n.spread) for n in needs]
    return free, out


class _Either:
    """Membership in either of two collections (devices in use, or planned elsewhere)."""

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b

    def __contains__(self, item: object) -> bool:
        return item in self.a or item in self.b


def planned_elsewhere(handle: Any, tracker: Any, own: set[str]) -> set[Any]:
    """Devices planned for the members still to come of other gangs being placed right now
    (some member assumed: a gang that failed and waits for its retry holds nothing; a
    member already assumed or bound holds its devices in flight or in its claim)."""
    out: set[Any] = set()
    stale: list[str] = []
    sched = getattr(handle, "scheduler", None)
    cache = getattr(sched, "cache", None)
    if cache is None:
        return out
    for key, by_node in tracker.plans.items():
        if key in own:
            continue
        if handle.pod_info(key) is None:
            stale.append(key)  # gone
            continue
        if cache.is_assumed(key) or key in cache.bound:
            continue
        if not any(cache.is_assumed(k) for k in tracker.plan_groups.get(key, ())):
            continue
        for allocs in by_node.values():
            for a in allocs:
                out.update((r.driver, r.pool, r.device) for r in a.devices.results
                           if not r.admin_access)
    for key in stale:
        tracker.plans.pop(key, None)
        tracker.plan_groups.pop(key, None)
    return out
