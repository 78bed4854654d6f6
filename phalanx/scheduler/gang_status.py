"""The gang status controller: why a gang is not running, on the gang object and its pods.

Koordinator's PreEnqueue holds the members of an incomplete gang silently: no scheduling
cycle runs, so no FailedScheduling Event is ever written. This controller closes that gap.
For every gang that changed it works out one verdict from the gang cache and writes it:

- on the gang object (PodGang, Workload, KAI / Volcano PodGroup), the condition
  `GangScheduled` (the scheduler's view, the same on every kind; distinct from the PodGang
  `Scheduled` condition the operator derives from bound pods), as the object's schema allows
  (gang/status_write.py: with the object where there is no status subresource, nowhere on
  the coscheduling PodGroups, whose schemas have no conditions; said once):
    False GangIncomplete       "3/8 members created, waiting for 5 more"
    False GangGroupIncomplete  a gang of its gang group is missing or incomplete
    False Unschedulable        "member ns/p-3: 0/512 nodes are available: 480 Insufficient ..."
    False GangScheduleTimeout  reservations released after the schedule timeout
    False Pending              complete, being scheduled (only to replace an earlier verdict)
    True  Scheduled            minMember placed and allowed to bind
- on each pending member, an Event with the same reason (Warning) and message; a gang whose
  object does not exist gets Events with reason GangNotFound (naming what is wrong with the
  pods' own declaration of it, if anything);
- after a failed attempt (Unschedulable, GangScheduleTimeout), the condition
  PodScheduled=False/Unschedulable with that message on every pending member, as
  Koordinator's GangPendingPodsConditionPatch writes it: controllers read the condition, and
  only the member that ran the cycle got one from the scheduler itself.

No storms: a gang is written at most once per `min_interval` seconds (a burst of 64 member
creations is one write, made after a short settle delay), only when its verdict changed,
a gang held back in PreEnqueue (members or its object still missing, members still gated)
is first reported only once it has been seen for `incomplete_grace` seconds: creating a
gang's pods takes a second or two on a real API server, and a Warning Event on every pod of
every healthy workload would be noise (a gang that stays incomplete is reported, and updated
as members arrive). A gang whose members all exist and wait only for their owner (a
scheduling gate such as the operator's, or its PodGang not yet Initialized and
BackendSynced) gets `owner_grace`
(30 s, the operator's own wait for a backend's verdict): under a deploy of thousands of pods
the operator takes longer than 5 s to finish a PodGang, and reporting each one on its pods
(0.9 Warning Events and a condition write per pod at 1,000 pods) only added to the writes
the API server was behind on,
Events go through the scheduler's aggregating recorder (one Event per pod and reason, its
count bumped), and at most `max_events_per_second` are handed to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from typing import TYPE_CHECKING, Any

from phalanx.scheduler.gang.model import GangId
from phalanx.scheduler.gang.state import GangState
from phalanx.scheduler.gang.status_write import ConditionWriter
from phalanx.scheduler.gang.verdict import (  # re-exported: the status vocabulary
    CONDITION_GANG_SCHEDULED,
    CONDITION_SCHEDULED,
    EVENT_REASONS,
    GANG_EVENT_REASON_UNSCHEDULABLE,
    REASON_GROUP_INCOMPLETE,
    REASON_INCOMPLETE,
    REASON_NOT_FOUND,
    REASON_PENDING,
    REASON_SCHEDULED,
    REASON_TIMEOUT,
    REASON_UNSCHEDULABLE,
    SCHEDULING_GATED,
    TRIED_REASONS,
    Verdict,
    stale_gated,
    verdict,
)

if TYPE_CHECKING:
    from phalanx.scheduler.framework.interface import Handle
    from phalanx.scheduler.gang.runtime import GangRuntime

log = logging.getLogger(__name__)

WRITES_IN_FLIGHT = 16  # gang condition writes at once


class GangStatusController:
    def __init__(
        self,
        handle: Handle,
        runtime: GangRuntime,
        *,
        min_interval: float = 2.0,
        settle: float | None = None,
        incomplete_grace: float = 5.0,
        owner_grace: float = 30.0,
        max_events_per_second: float = 1000.0,
        pending_pods_condition: bool = True,
    ) -> None:
        self.handle = handle
        self.runtime = runtime
        self.pending_pods_condition = pending_pods_condition
        self.min_interval = min_interval
        self.settle = settle if settle is not None else min(0.5, min_interval)
        self.incomplete_grace = incomplete_grace
        self.owner_grace = owner_grace
        self.max_events_per_second = max_events_per_second
        # Dirty gangs, each with the time it is queued for: a lower bound of when it is due
        # (settle / min_interval; the incomplete grace is checked only once that bound is
        # reached), kept in a heap so that a wake costs O(log n), not a pass over every gang.
        self._dirty: dict[GangId, float] = {}
        self._heap: list[tuple[float, int, GangId]] = []
        self._seq = itertools.count()
        self._last: dict[GangId, Verdict] = {}  # last verdict written (condition and events)
        self._last_time: dict[GangId, float] = {}
        self._first_seen: dict[GangId, float] = {}
        self._crashed: dict[GangId, None] = {}  # gangs whose report raised (logged once)
        self._running = False
        # Set by `mark` so a drain asleep until a later due time (e.g. a gated gang's grace)
        # looks again at once.
        self._wake = asyncio.Event()
        self._sleeping_until = float("-inf")  # when the asleep drain looks again; -inf: awake
        self._task: asyncio.Task[None] | None = None
        # Counters (tests and bench).
        self._writer = ConditionWriter()
        self._budget = 0  # Events the drain may still record this second
        self.events_recorded = 0
        self.pod_conditions_written = 0
        runtime.cache.add_change_listener(self.mark)

    # --- intake -------------------------------------------------------------------------

    def mark(self, gid: GangId) -> None:
        """A gang changed (called from the cache; cheap)."""
        if gid not in self._first_seen:
            self._first_seen[gid] = self._now()
        at = self._earliest(gid)
        self._queue(gid, at)
        if self._running:
            if at < self._sleeping_until:  # due before the drain would look: wake it
                self._wake.set()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (plain unit tests of the cache): `flush_now` is explicit
        self._running = True
        sched = getattr(self.handle, "scheduler", None)
        if sched is not None and hasattr(sched, "spawn"):
            sched.spawn(self._run(), "gang-status")  # tracked: wait_idle() waits for status writes
        else:
            self._task = loop.create_task(self._run(), name="gang-status")

    def _now(self) -> float:
        return self.handle.clock.now()

    def _earliest(self, gid: GangId) -> float:
        """When the gang may be written at the soonest: after its settle delay, and
        `min_interval` after its last write. Cheap: called on every change."""
        first = self._first_seen.get(gid)
        settle_until = (first if first is not None else self._now()) + self.settle
        last = self._last_time.get(gid)
        return settle_until if last is None else max(settle_until, last + self.min_interval)

    def _due(self, gid: GangId, earliest: float) -> float:
        """`earliest`, or the end of the grace for a gang never reported that is still held
        back in PreEnqueue (the owner's grace when only its owner holds it)."""
        if gid in self._last_time:
            return earliest
        st = self.runtime.cache.get(gid)
        if st is None or self.runtime.manager.blocked(st) is None:
            return earliest
        first = self._first_seen.get(gid, earliest)
        grace = self.owner_grace if st.held_by_owner() else self.incomplete_grace
        return max(earliest, first + grace)

    def _queue(self, gid: GangId, at: float) -> None:
        """Queue the gang for `at`, or sooner if it is already queued for later (a change to
        a gang in its grace is looked at again: it may have become complete)."""
        queued = self._dirty.get(gid)
        if queued is not None and queued <= at:
            return
        self._dirty[gid] = at
        heapq.heappush(self._heap, (at, next(self._seq), gid))

    def _pop_ready(self, now: float) -> list[GangId]:
        """The dirty gangs due by `now`, in due order; ones found still in their grace are
        queued again for its end."""
        ready: list[GangId] = []
        heap = self._heap
        while heap and heap[0][0] <= now + 1e-9:
            at, _, gid = heapq.heappop(heap)
            if self._dirty.get(gid) != at:
                continue  # stale entry: re-queued sooner, or already written
            due = self._due(gid, at)
            if due > now + 1e-9:
                self._dirty[gid] = due
                heapq.heappush(heap, (due, next(self._seq), gid))
                continue
            del self._dirty[gid]
            ready.append(gid)
        return ready

    def _next_due(self) -> float | None:
        heap = self._heap
        while heap and self._dirty.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    # --- the worker ---------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._drain()
        finally:
            self._running = False

    async def _drain(self) -> None:
        # Up to WRITES_IN_FLIGHT gangs are written at once, each as soon as a slot is free:
        # each write is a round trip, and one at a time (or in groups that wait for their
        # slowest) they fell behind the binds of a large burst. A gang that changes while
        # its write is in flight is looked at again once that write ends. The Events of one
        # pass over the due gangs share one budget per second.
        slots = asyncio.Semaphore(WRITES_IN_FLIGHT)
        writing: dict[GangId, asyncio.Task[None]] = {}
        again: set[GangId] = set()

        async def write(gid: GangId) -> None:
            try:
                await self._sync_guarded(gid)
            finally:
                slots.release()
                writing.pop(gid, None)
                if gid in again:
                    again.discard(gid)
                    self._queue(gid, self._now())
                self._wake.set()

        try:
            while self._dirty or writing:
                now = self._now()
                ready = self._pop_ready(now)
                if not ready:
                    nxt = self._next_due()
                    if nxt is None and not writing:
                        break
                    self._wake.clear()
                    self._sleeping_until = float("inf") if nxt is None else nxt
                    try:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(
                                self._wake.wait(), None if nxt is None else max(nxt - now, 1e-3))
                    finally:
                        self._sleeping_until = float("-inf")
                    continue
                self._budget = max(1, int(self.max_events_per_second))
                for gid in ready:
                    if gid in writing:
                        again.add(gid)
                        continue
                    if self._budget <= 0:
                        await asyncio.sleep(1.0)
                        self._budget = max(1, int(self.max_events_per_second))
                    await slots.acquire()
                    writing[gid] = asyncio.get_running_loop().create_task(
                        write(gid), name=f"gang-status-{gid}")
        finally:
            for task in list(writing.values()):
                task.cancel()

    async def flush_now(self) -> None:
        """Write every dirty gang immediately (tests, shutdown)."""
        gids = list(self._dirty)
        self._dirty.clear()
        self._heap.clear()
        self._budget = 1 << 30
        for gid in gids:
            await self._sync(gid)

    async def _sync_guarded(self, gid: GangId) -> None:
        """`_sync`, but a bug in one gang's report must not end the worker for every gang:
        logged with its traceback once per gang, that gang is skipped until it changes."""
        try:
            await self._sync(gid)
        except asyncio.CancelledError:
            raise
        except Exception:
            if gid not in self._crashed:
                self._crashed[gid] = None
                log.exception("gang status of %s could not be computed; skipping it", gid)

    async def _sync(self, gid: GangId) -> None:
        """Write one gang's verdict if it changed; its Events come out of the drain's
        budget."""
        st = self.runtime.cache.get(gid)
        if st is None:
            self._forget(gid)
            return
        v = verdict(st, self.runtime.manager)
        if v is None or self._last.get(gid) == v:
            return
        if v.reason == REASON_PENDING and gid not in self._last:
            return  # nothing was reported before: the happy path costs no write
        self._last[gid] = v
        self._last_time[gid] = self._now()
        if st.spec is not None and st.spec.object_ref is not None:
            if not await self._write_condition(st, v):
                # The API refused (e.g. a 500): forget the verdict so it is written again
                # after min_interval, instead of never (reliability engineer's fix).
                self._last.pop(gid, None)
                self._queue(gid, self._earliest(gid))
                return  # its Events come with the retry
        if v.status or v.reason == REASON_PENDING:
            return
        self._record_events(st, v)

    def _forget(self, gid: GangId) -> None:
        for d in (self._last, self._last_time, self._first_seen, self._crashed):
            d.pop(gid, None)

    def _record_events(self, st: GangState, v: Verdict) -> None:
        reason = v.reason if v.reason in EVENT_REASONS else GANG_EVENT_REASON_UNSCHEDULABLE
        name = st.spec.display if st.spec is not None else f"gang {st.id.partition(':')[2]}"
        message = f"{name}: {v.message}"
        tried = st.last_failure.attempted if st.last_failure is not None else frozenset()
        n = 0
        for m in st.pending_members():
            if self._budget <= 0:
                self._last.pop(st.id, None)
                self._queue(st.id, self._earliest(st.id))  # the rest next round
                break
            info = self.handle.pod_info(m.key)
            if info is None:
                continue
            self.handle.record_event(info.pod, "Warning", reason, message)
            if v.reason in TRIED_REASONS and self._needs_condition(info.pod, m.key, tried, message):
                self.handle.set_unschedulable(info.pod, message)
                self.pod_conditions_written += 1
            n += 1
            self._budget -= 1
        self.events_recorded += n

    def _needs_condition(self, pod: Any, key: str, tried: frozenset[str], message: str) -> bool:
        """Whether a pending member gets PodScheduled=False/Unschedulable with the gang's
        message: every member that ran no cycle in the failed attempt (the scheduler wrote
        the others' itself, as Koordinator skips its attempted pods), unless it already says
        exactly that; a stale SchedulingGated one always."""
        if stale_gated(pod):
            return True
        if not self.pending_pods_condition or key in tried:
            return False
        if getattr(pod.spec, "scheduling_gates", None):
            return False
        cond = pod.get_condition("PodScheduled")
        return cond is None or (cond.status, cond.reason, cond.message) != (
            "False", "Unschedulable", message
        )

    async def _write_condition(self, st: GangState, v: Verdict) -> bool:
        """Write the condition (status_write.py); False when it should be tried again."""
        ref = st.spec.object_ref if st.spec is not None else None
        if ref is None:
            return True
        return await self._writer.write(self.handle.client, ref, CONDITION_SCHEDULED, v.status,
                                        v.reason, v.message,
                                        cached=self.runtime.cached_object(ref))

    @property
    def condition_writes(self) -> int:
        return self._writer.writes

    @property
    def condition_refusals(self) -> int:
        """4xx answers to a condition write (each said once per kind and field)."""
        return self._writer.refusals

    # --- introspection (phalanx explain) ------------------------------------------------

    def explain(self, gid: GangId) -> dict[str, Any] | None:
        """The gang's verdict and counts, as `phalanx explain` shows them."""
        st = self.runtime.cache.get(gid)
        if st is None:
            return None
        v = verdict(st, self.runtime.manager)
        spec = st.spec
        out: dict[str, Any] = {
            "gang": gid,
            "object": str(spec.object_ref) if spec is not None and spec.object_ref else None,
            "minMember": spec.min_member if spec is not None else None,
            "created": st.created,
            "placed": st.placed,
            "bound": len(st.bound),
            "waiting": len(st.waiting),
            "resets": st.resets,
            "timeouts": st.timeouts,
            "mode": spec.mode.value if spec is not None else None,
            "matchPolicy": st.policy.value,
            "representative": self.runtime.manager.representative(gid),
        }
        if v is not None:
            out.update(status=v.status, reason=v.reason, message=v.message)
        if st.last_failure is not None and st.last_failure.diagnosis is not None:
            out["lastFailure"] = {"pod": st.last_failure.pod, "diagnosis": st.last_failure.diagnosis}
        if spec is not None and spec.warnings:
            out["warnings"] = list(spec.warnings)
        return out


__all__ = [
    "CONDITION_GANG_SCHEDULED",
    "CONDITION_SCHEDULED",
    "EVENT_REASONS",
    "GANG_EVENT_REASON_UNSCHEDULABLE",
    "REASON_GROUP_INCOMPLETE",
    "REASON_INCOMPLETE",
    "REASON_NOT_FOUND",
    "REASON_PENDING",
    "REASON_SCHEDULED",
    "REASON_TIMEOUT",
    "REASON_UNSCHEDULABLE",
    "SCHEDULING_GATED",
    "TRIED_REASONS",
    "GangStatusController",
    "Verdict",
    "verdict",
]
