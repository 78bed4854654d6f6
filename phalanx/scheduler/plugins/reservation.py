"""GangReservation: a large gang behind a stream of small ones gets a bounded wait.

All-or-nothing placement starves big gangs: whenever some room frees up, a small gang that
fits takes it, so a gang needing 32 whole nodes may wait for ever. Like the EASY-backfill
reservation of batch schedulers, the gang that has waited longest (the head) reserves the
room it needs, and everyone else backfills around it:

- PostFilter (after DefaultPreemption found nothing to evict): when a gang's minimum (or a
  plain pod) cannot be placed, has been unschedulable for `minWaitSeconds` (an hour by
  default) and fewer than `maxReservations` (1) reservations exist, it picks
  nodes for its needed members: nodes that would take them if they were empty (its filters,
  without NodeResourcesFit), the ones with most room now first (they drain soonest), within
  one domain of a whole-gang required pack level. The reservation is that room: node -> the
  requests of the members planned there. It stays fixed until the gang is placed (or its
  pods are gone, or `maxReservationSeconds` pass), so the nodes drain towards it.
- Filter, for every other pod of equal or lower priority: on a reserved node only the room
  beyond the reservation is usable (allocatable - requested - reserved). Higher-priority
  pods ignore reservations (they could preempt anyway).

Backfill never delays the head: nothing can take the room it reserved, and what other pods
use elsewhere was never part of its plan. Its wait is bounded by the time the pods on its
reserved nodes take to finish. Cheap when nothing is reserved (PreFilter skips).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from phalanx.api.base import KubeModel
from phalanx.scheduler.framework.config import GANG_RESERVATION, NODE_RESOURCES_FIT
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    FilterResult,
    FitError,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
)
from phalanx.scheduler.gang.fit import Need, capacity
from phalanx.scheduler.gang.manager import GangManager
from phalanx.scheduler.gang.runtime import GangRuntime
from phalanx.scheduler.gang.state import GangState
from phalanx.scheduler.snapshot import Snapshot

from .coscheduling import STATE_PER_POD_ONLY

SHARED_KEY = "phalanx.scheduler.reservations"
REASON = "node(s) reserved for a gang that has waited longer"


class GangReservationArgs(KubeModel):
    # How many gangs may hold a reservation at once (the longest-waiting first).
    max_reservations: int = Field(default=1, ge=0)
    # A gang must have been unschedulable this long before it may reserve (0: at once). An
    # hour by default: gangs that a few finishing jobs would let in anyway do not make the
    # cluster drain for them (bench/README.md: the trade-off measured on the sample trace).
    min_wait_seconds: float = Field(default=3600.0, ge=0)
    # Drop a reservation still unmet after this long (0: keep it until the gang is placed).
    max_reservation_seconds: float = Field(default=0.0, ge=0)


@dataclass(slots=True)
class Reservation:
    unit: str  # gang unit key (GangManager.unit_key) or pod key
    what: str  # for messages
    priority: int
    since: float
    nodes: dict[str, np.ndarray]  # node name -> reserved amount per snapshot resource column
    gangs: tuple[str, ...]  # the unit's gang ids (empty for a plain pod)


class Reservations:
    """Scheduler-wide: the reservations every profile's plugin instance sees."""

    def __init__(self) -> None:
        self.active: dict[str, Reservation] = {}
        self.waiting_since: dict[str, float] = {}
        self.made = 0  # reservations made (bench, tests)


@register_plugin
class GangReservation(Plugin):
    NAME = GANG_RESERVATION
    Args = GangReservationArgs

    def __init__(self, handle: Handle, args: Any = None) -> None:
        args = (
            args
            if isinstance(args, GangReservationArgs)
            else GangReservationArgs.model_validate(args or {})
        )
        super().__init__(handle, args)
        self.runtime = GangRuntime.for_handle(handle)
        self.book: Reservations = handle.shared(SHARED_KEY, Reservations)

    async def start(self) -> None:
        await self.runtime.start(self.handle.client)

    # --- who is who ---------------------------------------------------------------------

    def _unit_of(self, pod: PodInfo) -> tuple[str, GangState | None]:
        st = self.runtime.cache.gang_of(pod.key)
        if st is not None and st.spec is not None and not GangManager.free(st):
            return self.runtime.manager.unit_key(st), st
        return pod.key, None

    def _expire(self, now: float) -> None:
        """Drop reservations whose gang is placed, gone, or out of time."""
        snap = self.handle.snapshot()
        cache = self.runtime.cache
        for key, r in list(self.book.active.items()):
            if r.gangs:
                states = [cache.get(g) for g in r.gangs]
                done = all(g is None or g.once_satisfied or not g.members for g in states)
            else:
                done = self.handle.pod_info(key) is None or snap.pod_row(key) is not None
            if done or (
                self.args.max_reservation_seconds
                and now - r.since > self.args.max_reservation_seconds
            ):
                del self.book.active[key]
                self.book.waiting_since.pop(key, None)

    # --- Filter ---------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.book.active:
            return None, Status.skip()
        self._expire(self.handle.clock.now())
        if not self.book.active:
            return None, Status.skip()
        unit, _ = self._unit_of(pod)
        if all(r.unit == unit or pod.priority > r.priority for r in self.book.active.values()):
            return None, Status.skip()
        return None, Status()

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        if not self.book.active or state.read(STATE_PER_POD_ONLY):
            return FilterResult.all_pass(idx.size)
        unit, _ = self._unit_of(pod)
        others = [
            r for r in self.book.active.values() if r.unit != unit and pod.priority <= r.priority
        ]
        if not others:
            return FilterResult.all_pass(idx.size)
        reserved: dict[int, np.ndarray] = {}
        for r in others:
            for node, vec in r.nodes.items():
                row = snap.row(node)
                if row is not None:
                    acc = reserved.setdefault(row, np.zeros(len(snap.resources)))
                    acc[: vec.size] += vec
        if not reserved:
            return FilterResult.all_pass(idx.size)
        res_rows = np.fromiter(sorted(reserved), dtype=np.int64, count=len(reserved))
        amount = np.stack([reserved[int(r)] for r in res_rows])
        sel = np.isin(idx, res_rows)
        if not sel.any():
            return FilterResult.all_pass(idx.size)
        rows = idx[sel]
        cols, vals = self.handle.fit_vector(pod)
        mine = amount[np.searchsorted(res_rows, rows)]
        width = min(mine.shape[1], snap.allocatable.shape[1])
        held = np.zeros((rows.size, snap.allocatable.shape[1]))
        held[:, :width] = mine[:, :width]
        left = snap.allocatable[rows][:, cols] - snap.requested[rows][:, cols] - held[:, cols]
        ok = np.ones(idx.size, dtype=bool)
        ok[np.flatnonzero(sel)] = np.all(left + 1e-9 >= vals, axis=1)
        return FilterResult.from_mask(ok, REASON)

    # --- PostFilter -------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, fit: FitError
    ) -> tuple[PostFilterResult | None, Status]:
        now = self.handle.clock.now()
        unit, st = self._unit_of(pod)
        since = self.book.waiting_since.setdefault(unit, now)
        self._expire(now)
        if unit in self.book.active:
            r = self.book.active[unit]
            return None, Status.unschedulable(
                f"waiting for the {len(r.nodes)} node(s) reserved for {r.what} to drain"
            )
        if (
            len(self.book.active) >= self.args.max_reservations
            or now - since < self.args.min_wait_seconds
        ):
            return None, Status.unschedulable("")
        shapes = self._shapes(pod, st)
        snap = self.handle.snapshot()
        nodes = self._choose(snap, pod, st, shapes)
        what = st.spec.display if st is not None and st.spec is not None else pod.key
        if nodes is None:
            return None, Status.unschedulable(
                f"no reservation: {what} does not fit even on empty nodes"
            )
        gangs = tuple(g.id for g in self.runtime.manager.group(st)) if st is not None else ()
        self.book.active[unit] = Reservation(unit, what, pod.priority, now, nodes, gangs)
        self.book.made += 1
        return None, Status.unschedulable(
            f"reserved {len(nodes)} node(s) for {what}; other pods backfill around them"
        )

    def _shapes(self, pod: PodInfo, st: GangState | None) -> list[tuple[PodInfo, int]]:
        if st is None:
            return [(pod, 1)]
        out: dict[Any, list[Any]] = {}
        for g in self.runtime.manager.group(st):
            for m in g.needed_members(first=pod.key):
                info = (
                    pod
                    if m.key == pod.key
                    else (
                        self.handle.pod_info(m.key)
                        or (PodInfo(m.pod) if m.pod is not None else None)
                    )
                )
                if info is None:
                    continue
                entry = out.setdefault(info.signature, [info, 0])
                entry[1] += 1
        return [(i, n) for i, n in out.values()] or [(pod, 1)]

    def _choose(
        self,
        snap: Snapshot,
        pod: PodInfo,
        st: GangState | None,
        shapes: Sequence[tuple[PodInfo, int]],
    ) -> dict[str, np.ndarray] | None:
        rows = snap.valid_rows()
        state = CycleState()
        state.write(STATE_PER_POD_ONLY, True)
        state.skip_filter_plugins.add(NODE_RESOURCES_FIT)  # room is what we reserve
        state.skip_filter_plugins.add(self.NAME)
        masks = [self.handle.run_filter_plugins(state, info, rows).feasible for info, _ in shapes]
        domains: list[np.ndarray | None] = [None]
        req = (
            next((p.required for p in st.spec.packs if p.groups is None and p.required), None)
            if st and st.spec
            else None
        )
        if req is not None:
            col = snap.label_column(req.topology_key)[rows]
            domains = [col == v for v in np.unique(col[col > 0]).tolist()]
        alloc = snap.allocatable[rows]
        free = snap.free(rows)
        best: tuple[float, dict[str, np.ndarray]] | None = None
        for dom in domains:
            picked: dict[int, np.ndarray] = {}
            room_now = 0.0
            work_alloc = alloc.copy()
            ok = True
            for (info, count), mask in zip(shapes, masks, strict=True):
                cols, vals = self.handle.fit_vector(info)
                m = mask if dom is None else mask & dom
                cap_empty = capacity(work_alloc, Need(cols, vals, count, m))
                cap_now = capacity(free, Need(cols, vals, count, m))
                # Nodes that hold most of the shape now first (they drain soonest), then by row.
                order = np.lexsort((np.arange(rows.size), -cap_now, cap_empty <= 0))
                left = count
                for i in order.tolist():
                    if left <= 0 or cap_empty[i] <= 0:
                        break
                    take = int(min(cap_empty[i], left))
                    vec = picked.setdefault(i, np.zeros(len(snap.resources)))
                    vec[cols] += take * vals
                    work_alloc[i, cols] -= take * vals
                    room_now += min(take, int(cap_now[i]))
                    left -= take
                if left > 0:
                    ok = False
                    break
            if ok and (best is None or room_now > best[0]):
                best = (room_now, {snap.names[int(rows[i])]: v for i, v in picked.items()})
        return best[1] if best is not None else None
