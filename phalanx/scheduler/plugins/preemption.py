"""DefaultPreemption, gang-aware: make room for a whole gang, or evict nothing.

PostFilter runs after the Coscheduling BeforePostFilter has released the failed gang's
waiting members, so the snapshot shows the room the gang really has. For a pod of a gang
(not yet satisfied) the *preemptor* is every member still needed to reach minMember across
its gang group (per sub-group too); for any other pod it is the pod alone. Then:

1. Victims: pods with lower priority than the preemptor, grouped into eviction units. A
   victim that belongs to a gang brings its whole gang (group) with it: evicting part of a
   gang would leave it partly running, which is worse than useless.
2. Candidate nodes, per shape of pod to place (members with different requests, selectors or
   tolerations): a what-if on the snapshot with every victim removed runs the profile's
   filters once per shape, so taints, selectors, topology rules all count, and nodes no
   eviction can fix are left out. With a required pack constraint over the whole gang, each
   domain of that level is planned on its own.
3. If the preemptor fits without evicting anyone (the release freed enough and its next
   attempt, led by the failed pod, can place it), nothing is evicted. If it does not fit even
   with every unit evicted, nothing is evicted and the failure says by how much it falls short.
4. Otherwise the smallest prefix of units (lowest priority first, then fewest pods, then
   newest) that makes the whole preemptor fit (and frees the room any room check asks for:
   under its queue's limit), found by bisection; then a reprieve pass puts
   back every unit not actually needed (highest priority first).
5. Eviction: bound victims are deleted (a "Preempted" Event each); victims still waiting at
   Permit are rejected (their reservations released). Every member the plan places is
   nominated to its node (the failed pod, and for a gang each needed member, as one group
   in the nominator), so pods of equal or lower priority, the victims' replacements among
   them, do not take the freed room while the gang waits. While those victims terminate,
   further failures of the same gang wait for them instead of evicting more.

Fit is checked on the snapshot's resource columns (vectorised, greedy per shape). Members
that keep apart (a required anti-affinity term matching themselves) count one per domain.
A group's own required pack scope (a PodGang group's or a scaling-group replica's
constraint) must fit within one domain of its level. When inter-pod (anti-)affinity is in
play anywhere, which nodes pass the filters depends on which victims go, so every candidate
set of victims is checked with the filters re-run on the snapshot without exactly those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from phalanx.api.duration import format_duration
from phalanx.scheduler.framework.config import DEFAULT_PREEMPTION
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import FitError, PodInfo, PostFilterResult
from phalanx.scheduler.affinity import NO_TERMS, self_spread_key
from phalanx.scheduler.gang.fit import Need, fits_scoped, max_placeable
from phalanx.scheduler.gang.model import PackScope
from phalanx.scheduler.gang.manager import GangManager
from phalanx.scheduler.gang.runtime import GangRuntime
from phalanx.scheduler.gang.state import GangState
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.victim_protection import Protections, protections

from phalanx.scheduler.dra.tracker import devices_released

from .coscheduling import STATE_PER_POD_ONLY



# Scheduler-wide list of `fn(preemptor, victim) -> bool`: a victim any of them refuses is
# never evicted (with its gang). The queue plugins keep preemption within a queue (KAI).
VICTIM_FILTERS_KEY = "phalanx.scheduler.preemption.victim_filters"


def victim_filters(handle: Any) -> list[Callable[[PodInfo, PodInfo], bool]]:
    shared = getattr(handle, "shared", None)
    return shared(VICTIM_FILTERS_KEY, list) if callable(shared) else []


# Scheduler-wide list of `fn(victim keys)`, told of every eviction (queue accounting).
EVICTION_LISTENERS_KEY = "phalanx.scheduler.preemption.eviction_listeners"


def eviction_listeners(handle: Any) -> list[Callable[[list[str]], None]]:
    shared = getattr(handle, "shared", None)
    return shared(EVICTION_LISTENERS_KEY, list) if callable(shared) else []


# Scheduler-wide list of `fn(preemptor, victims) -> reason or None`: room besides node room
# that the victims must free for the preemptor (a queue at its limit: KAI preempts within
# the queue to make room under it). A set of victims any of them refuses is not enough.
ROOM_CHECKS_KEY = "phalanx.scheduler.preemption.room_checks"


def room_checks(handle: Any) -> list[Callable[[PodInfo, list[PodInfo]], str | None]]:
    shared = getattr(handle, "shared", None)
    return shared(ROOM_CHECKS_KEY, list) if callable(shared) else []


class DefaultPreemptionArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    # Seconds to wait for victims to terminate before the same gang may preempt again.
    victim_grace_seconds: float = Field(default=60.0, ge=0)


@dataclass(slots=True)
class Unit:
    """Pods evicted together: one pod, or every placed member of a gang (group)."""

    name: str
    priority: int
    pods: list[tuple[PodInfo, int]] = field(default_factory=list)  # (pod, snapshot row)
    created: float = 0.0

    def order(self) -> tuple[Any, ...]:
        return (self.priority, len(self.pods), -self.created, self.name)


def _spared_note(spared: Protections, now: float) -> str:
    """" (2 lower-priority pod(s) protected: ...)" when victim filters kept pods out."""
    if not spared.spared:
        return ""
    note = (f" ({spared.spared} lower-priority pod(s) protected: not preemptible, or within "
            "their minimum runtime")
    if spared.until is not None:
        note += f"; the first protection ends in {format_duration(max(0.0, spared.until - now))}"
    return note + ")"


@register_plugin
class DefaultPreemption(Plugin):
    NAME = DEFAULT_PREEMPTION
    Args = DefaultPreemptionArgs
    NO_VICTIMS = "no lower-priority pods to preempt for {what}"

    def __init__(self, handle: Handle, args: Any = None) -> None:
        args = args if isinstance(args, DefaultPreemptionArgs) else DefaultPreemptionArgs.model_validate(args or {})
        super().__init__(handle, args)
        self.runtime = GangRuntime.for_handle(handle)
        # preemptor unit -> (victim keys still terminating, when evicted)
        self._pending: dict[str, tuple[set[str], float]] = {}
        self.evictions = 0  # pods evicted (tests and bench)
        self._victim_filters = victim_filters(handle)
        self._eviction_listeners = eviction_listeners(handle)
        self._room_checks = room_checks(handle)
        self._preemptor_pod: PodInfo | None = None  # the failed pod, for the victim filters

    async def start(self) -> None:
        """Watch the gang kinds the server serves (shared with the other gang plugins)."""
        await self.runtime.start(self.handle.client)

    # --- PostFilter ---------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo, fit: FitError) -> tuple[PostFilterResult | None, Status]:
        spared = protections(self.handle)
        spared.reset()
        result, st = self._preempt(state, pod, fit)
        if not st.is_success and spared.until is not None:
            # A victim kept out only for a while (a minimum runtime): try again when it ends.
            self.handle.activate_later([pod], spared.until - self.handle.clock.now())
        # As kube's DefaultPreemption: its own answer carries the "preemption: " prefix, so
        # other PostFilter plugins' reasons (DynamicResources') read before it, unprefixed.
        if not st.is_success and st.message:
            st = Status(st.code, [f"preemption: {st.message}"], plugin=st.plugin)
        return result, st

    def _preempt(self, state: CycleState, pod: PodInfo, fit: FitError) -> tuple[PostFilterResult | None, Status]:
        if getattr(pod.pod.spec, "preemption_policy", None) == "Never":
            return None, Status.unschedulable("preemptionPolicy is Never")
        snap = self.handle.snapshot()
        gang = self.runtime.cache.gang_of(pod.key)
        if gang is not None and (gang.spec is None or GangManager.free(gang)):
            gang = None
        unit_key = self.runtime.manager.unit_key(gang) if gang is not None else pod.key
        waiting = self._still_terminating(unit_key, snap)
        if waiting:
            return None, Status.unschedulable(f"waiting for {waiting} preempted pod(s) to terminate")

        shapes, own, members = self._preemptor(pod, gang)
        self._preemptor_pod = pod
        if not shapes:
            return None, Status.unschedulable("nothing to place")
        rows = snap.valid_rows()
        # Victims already evicted and still terminating: their room is counted as being
        # freed (`_promised`), so they are not victims a second time.
        releasing = self._releasing()
        units = self._victim_units(snap, rows, pod.priority, own | releasing)
        what = f"{gang.spec.display} ({sum(n for _, n in shapes)} members)" if gang is not None and gang.spec else pod.key
        if not units:
            return None, Status.unschedulable(self.NO_VICTIMS.format(what=what)
                                              + _spared_note(protections(self.handle),
                                                             self.handle.clock.now()))
        masks = self._feasible_without(snap, rows, units, [info for info, _ in shapes])
        candidate = np.zeros(rows.size, dtype=bool)
        for m in masks:
            candidate |= m
        if not candidate.any():
            return None, Status.unresolvable(f"preemption cannot help {what}: no node passes its filters even without lower-priority pods")
        best: tuple[tuple[Any, ...], list[Unit], list[list[int]]] | None = None
        shortfall = ""
        infos = [info for info, _ in shapes]
        # Inter-pod (anti-)affinity makes a node's verdict depend on which victims go, so the
        # filters are re-run for each candidate set; without it the masks above hold for all.
        affine = bool(snap.with_affinity) or any(i.pod_terms is not NO_TERMS for i in infos)
        scoped = [self._scope_of(gang, info) for info in infos]
        reserved = self._promised(snap, pod.priority, own, releasing)
        for dsel in self._domains(gang, snap, rows, candidate):
            drows = rows[dsel]
            dset = set(drows.tolist())
            dunits = [u for u in units if any(r in dset for _, r in u.pods)]

            def needs_for(chosen: Sequence[Unit], dsel: np.ndarray = dsel, drows: np.ndarray = drows) -> list[Need]:
                m = self._feasible_without(snap, rows, chosen, infos) if affine else masks
                out = []
                for (info, count), mask in zip(shapes, m, strict=True):
                    key = self_spread_key(info)
                    spread = snap.label_column(key)[drows] if key else None
                    out.append(Need(*self.handle.fit_vector(info), count, mask[dsel], spread))
                return out

            cols = {
                sc.name: snap.label_column(sc.required.topology_key)[drows]
                for sc in scoped
                if sc is not None and sc.required
            }
            plan = self._plan(
                snap,
                drows,
                needs_for,
                [sc.name if sc is not None else None for sc in scoped],
                cols,
                dunits,
                reserved,
            )
            if isinstance(plan, str):
                shortfall = shortfall or plan
                continue
            chosen, placed = plan
            if not chosen:
                # The gang fits without evicting anyone (a different placement order works,
                # which its next attempt, led by this pod, tries): evict nothing.
                return None, Status.unschedulable(f"{what} fits without preemption; retrying")
            cost = (max(u.priority for u in chosen), sum(len(u.pods) for u in chosen), len(chosen))
            if best is None or cost < best[0]:
                best = (cost, chosen, placed)
        if best is None:
            return None, Status.unschedulable(
                f"preemption cannot make room for {what}: {shortfall}; nothing evicted"
            )
        _, chosen, placed = best
        self._evict(pod, what, chosen, unit_key)
        # Every needed member keeps the room planned for it, not only the failed pod: a
        # pod of equal priority (a victim's replacement) must not take a member's node
        # while the gang waits for the victims to go (KAI pipelines the whole job there).
        for shape_members, rows in zip(members, placed, strict=True):
            for member, row in zip(shape_members, rows, strict=True):
                if member.key == pod.key or self.handle.pod_info(member.key) is not None:
                    self.handle.nominate(member, snap.names[row], unit_key if gang else None)
        return PostFilterResult(nominated_node=snap.names[placed[0][0]]), Status()

    # --- the preemptor ------------------------------------------------------------------

    def _preemptor(
        self, pod: PodInfo, gang: GangState | None
    ) -> tuple[list[tuple[PodInfo, int]], set[str], list[list[PodInfo]]]:
        """What must fit, as (a pod of each signature, how many), the failed pod's first; the
        pods that must not be victims; and the members of each shape (the failed pod first)."""
        if gang is None:
            return [(pod, 1)], {pod.key}, [[pod]]
        group = [g for g in self.runtime.cache.group_states(gang) if g is not None]
        own = {k for g in group for k in g.members}
        chosen: list[PodInfo] = []
        for g in group:
            chosen.extend(self._members_needed(g, pod))
        chosen.sort(key=lambda i: i.key != pod.key)  # nominated where the plan puts it
        shapes: dict[Any, list[PodInfo]] = {}
        for info in chosen:
            shapes.setdefault(info.signature, []).append(info)
        return [(m[0], len(m)) for m in shapes.values()], own, list(shapes.values())

    def _feasible_without(
        self, snap: Snapshot, rows: np.ndarray, units: list[Unit], shapes: list[PodInfo]
    ) -> list[np.ndarray]:
        """Per shape, the rows where one such pod passes every filter once all victims are
        gone (a what-if on the live snapshot, restored before returning; the cycle is
        synchronous, so nothing else sees it)."""
        removed: list[tuple[PodInfo, str]] = []
        for u in units:
            for info, row in u.pods:
                if snap.remove_pod(info.key) is not None:
                    removed.append((info, snap.names[row]))
        state = CycleState()
        state.write(STATE_PER_POD_ONLY, True)
        try:
            # The victims' DRA claims count as deallocated too (the resourceclaim controller
            # frees them once the victims are gone).
            with devices_released(self.handle, [i for u in units for i, _ in u.pods]):
                return [self.handle.run_filter_plugins(state, info, rows).feasible
                        for info in shapes]
        finally:
            for info, node in removed:
                snap.add_pod(info, node)

    def _members_needed(self, g: GangState, failed: PodInfo) -> list[PodInfo]:
        """Pending members that bring the gang to minMember (each short sub-group first);
        the failed pod first, so it is part of the plan it gets nominated for."""
        spec = g.spec
        if spec is None or GangManager.free(g):
            return []
        picked = [m.key for m in g.needed_members(first=failed.key)]
        out: list[PodInfo] = []
        for key in picked:
            if key == failed.key:
                out.append(failed)
                continue
            # Released members may be between queue and binding task: size them by their object.
            info = self.handle.pod_info(key)
            m = g.members.get(key)
            if info is None and m is not None and m.pod is not None:
                info = PodInfo(m.pod)
            if info is not None:
                out.append(info)
        return out

    def _domains(
        self, gang: GangState | None, snap: Snapshot, rows: np.ndarray, candidate: np.ndarray
    ) -> list[np.ndarray]:
        """Row selections (bool over `rows`) to try: one per domain of the gang's required
        whole-gang pack level, else all candidate rows."""
        req = None
        if gang is not None and gang.spec is not None:
            req = next(
                (p.required for p in gang.spec.packs if p.groups is None and p.required), None
            )
        if req is None:
            return [candidate]
        col = snap.label_column(req.topology_key)[rows]
        return [candidate & (col == v) for v in np.unique(col[candidate & (col > 0)])]

    # --- victims --------------------------------------------------------------------------

    def _victim_units(
        self, snap: Snapshot, rows: np.ndarray, priority: int, own: set[str]
    ) -> list[Unit]:
        units: dict[str, Unit] = {}
        lowest = snap.lowest_priority()
        if lowest is None or lowest >= priority:
            return []  # no pod anywhere that this one may preempt: no walk over every node
        cache = self.runtime.cache
        for row in rows.tolist():
            for key, info in snap.pods_on(row).items():
                if key in own or info.priority >= priority or not self._may_evict(info):
                    continue
                st = cache.gang_of(key)
                if st is not None and st.spec is not None and st.spec.is_gang:
                    self._add_gang_unit(units, st, snap, priority, own)
                else:
                    units[key] = Unit(key, info.priority, [(info, row)], info.created)
        return sorted((u for u in units.values() if u.pods), key=Unit.order)

    def _add_gang_unit(
        self, units: dict[str, Unit], st: GangState, snap: Snapshot, priority: int, own: set[str]
    ) -> None:
        name = self.runtime.manager.unit_key(st)
        if name in units:
            return
        unit = Unit(name, priority)
        group = [g for g in self.runtime.cache.group_states(st) if g is not None]
        top: int | None = None  # the unit ranks as its highest-priority member
        for g in group:
            for key in sorted(set(g.assumed) | set(g.bound)):
                row = snap.pod_row(key)
                info = snap.pods_on(row).get(key) if row is not None else None
                if info is None:
                    continue
                if key in own or info.priority >= priority or not self._may_evict(info):
                    unit.pods = []  # a member outranks the preemptor: the gang cannot be broken up
                    units[name] = unit
                    return
                unit.pods.append((info, row))
                top = info.priority if top is None else max(top, info.priority)
                unit.created = max(unit.created, info.created)
        unit.priority = top if top is not None else priority
        units[name] = unit

    def _may_evict(self, victim: PodInfo) -> bool:
        pod = self._preemptor_pod
        return pod is None or all(fn(pod, victim) for fn in self._victim_filters)

    # --- planning ------------------------------------------------------------------------

    def _room_refused(self, chosen: Sequence[Unit]) -> str | None:
        """Why evicting `chosen` would not free the room besides node room the preemptor
        needs (room_checks), or None."""
        pod = self._preemptor_pod
        if pod is None or not self._room_checks:
            return None
        victims = [info for u in chosen for info, _ in u.pods]
        for fn in self._room_checks:
            why = fn(pod, victims)
            if why:
                return why
        return None

    def _accept(self, chosen: Sequence[Unit]) -> str | None:
        """Why a set of victims that makes room may still not be taken (None: it may).
        Subclasses add rules (reclaim: the queues' fair shares)."""
        return None

    def _scope_of(self, gang: GangState | None, info: PodInfo) -> PackScope | None:
        """The required pack scope over some groups (not the whole gang: `_domains` plans
        per domain of that) that the member falls under, if any."""
        if gang is None or gang.spec is None:
            return None
        ref = self.runtime.cache.member_ref(info.key)
        group = ref.group if ref is not None else None
        return next(
            (p for p in gang.spec.packs_for(group) if p.groups is not None and p.required), None
        )

    def _plan(
        self,
        snap: Snapshot,
        rows: np.ndarray,
        needs_for: Callable[[Sequence[Unit]], list[Need]],
        scopes: list[str | None],
        cols: dict[str, np.ndarray],
        units: list[Unit],
        reserved: np.ndarray | None = None,
    ) -> tuple[list[Unit], list[list[int]]] | str:
        """The victims to evict and the rows planned for each shape's pods (the failed pod's
        first), or why it cannot work.

        `needs_for(victims)` gives the shapes to place with those victims gone (their masks
        re-checked when inter-pod affinity is in play); `scopes[i]` names the required
        per-group pack scope of shape i (its pods must share one domain of `cols[scope]`)."""
        pos = {int(r): i for i, r in enumerate(rows.tolist())}
        base = snap.free(rows)
        if reserved is not None:  # held for nominated pods of at least this priority
            base = base - reserved[rows]

        def freed(chosen: Sequence[Unit]) -> np.ndarray:
            out = base.copy()
            for u in chosen:
                for info, row in u.pods:
                    i = pos.get(row)
                    if i is not None:
                        cols_, vals = snap.request_vector(info)
                        out[i, cols_] += vals
            return out

        def check(chosen: Sequence[Unit], placed: list[list[int]] | None = None) -> int | None:
            if self._room_refused(chosen) is not None:
                return None  # monotone too: more victims never free less room
            return fits_scoped(freed(chosen), needs_for(chosen), scopes, cols, placed)

        if check([]) is not None:
            return [], []
        room = self._room_refused(units)
        if room is not None:
            return f"{room}, even after evicting every lower-priority pod"
        if check(units) is None:
            needs = needs_for(units)
            total = sum(n.count for n in needs)
            room = max_placeable(freed(units), needs)
            where = f"{rows.size} candidate node(s)"
            if room >= total:
                return f"the gang's pack constraints cannot be met on {where} even after evicting every lower-priority pod"
            return (
                f"only {room}/{total} fit on {where} even after evicting every lower-priority pod"
            )
        lo, hi = 0, len(units)
        while lo < hi:  # smallest prefix that fits (fit is monotone in the prefix)
            mid = (lo + hi) // 2
            if check(units[:mid]) is not None:
                hi = mid
            else:
                lo = mid + 1
        chosen = list(units[:lo])
        for u in sorted(chosen, key=Unit.order, reverse=True):  # reprieve
            trial = [x for x in chosen if x is not u]
            if check(trial) is not None and (not trial or self._accept(trial) is None):
                chosen = trial
        placed: list[list[int]] = []
        if check(chosen, placed) is None:  # cannot happen: `chosen` passed `check` above
            return "the planned victims no longer make room"
        refused = self._accept(chosen) if chosen else None
        if refused is not None:
            return refused
        return chosen, [[int(rows[i]) for i in at] for at in placed]

    def _promised(self, snap: Snapshot, priority: int, own: set[str],
                  releasing: set[str]) -> np.ndarray | None:
        """Per row, room this preemptor must not count as free: what is nominated to pods of
        at least its priority (kube's addNominatedPods; two gangs must not plan on one
        victim's room), less what the victims already evicted are still freeing (kube would
        take them as victims again at no cost, KAI counts releasing room as future idle)."""
        out = self.handle.nominated_reserved(priority, own)
        if out is None:
            return None
        for key in releasing:
            row = snap.pod_row(key)
            info = snap.pods_on(row).get(key) if row is not None else None
            if info is not None:
                cols, vals = snap.request_vector(info)
                out[row, cols] -= vals
        return out

    def _releasing(self) -> set[str]:
        """The victims this plugin evicted that may still be terminating. Evictions older
        than the victims' grace are forgotten here too (as `_still_terminating` does for its
        own preemptor), so a preemptor scheduled long ago leaves nothing behind."""
        now = self.handle.clock.now()
        for unit, (_victims, at) in list(self._pending.items()):
            if now - at > self.args.victim_grace_seconds:
                del self._pending[unit]
        return {k for victims, _at in self._pending.values() for k in victims}

    # --- eviction --------------------------------------------------------------------------

    def _evict(self, pod: PodInfo, what: str, chosen: list[Unit], unit_key: str) -> None:
        victims: set[str] = set()
        msg = self._eviction_message(pod, what)
        cache = self.runtime.cache
        for u in chosen:
            for info, _row in u.pods:
                victims.add(info.key)
                st = cache.gang_of(info.key)
                if st is not None and info.key in st.waiting:
                    # Not bound yet: releasing the reservation is the eviction.
                    self.handle.reject_waiting_pod(info.uid, self.NAME, msg)
                    cache.forget(info.key)
                    continue
                self.handle.evict(info, preemptor=pod, message=msg)
                self.evictions += 1
        self._pending[unit_key] = (victims, self.handle.clock.now())
        for fn in self._eviction_listeners:
            fn(sorted(victims))

    def _eviction_message(self, pod: PodInfo, what: str) -> str:
        return f"preempted by {what} (priority {pod.priority})"

    def _still_terminating(self, unit_key: str, snap: Snapshot) -> int:
        entry = self._pending.get(unit_key)
        if entry is None:
            return 0
        victims, at = entry
        left = {k for k in victims if snap.pod_row(k) is not None}
        if not left or self.handle.clock.now() - at > self.args.victim_grace_seconds:
            self._pending.pop(unit_key, None)
            return 0
        self._pending[unit_key] = (left, at)
        return len(left)
