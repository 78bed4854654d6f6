"""QueueReclaim: a queue below its fair share takes room back from queues above theirs, by
evicting whole gangs (KAI's reclaim action, with the proportion plugin's rules).

A PostFilter, run before DefaultPreemption as KAI runs reclaim before preempt: fairness
between queues first, then priority within a queue. For a pod whose job (its gang's pending
minimum) does not fit:

1. The job's queue may reclaim only if, with the job, it stays within its fair share (a
   non-preemptible job also within its deserved quota); otherwise the failure says so.
2. Victims are the running jobs of other leaf queues, whole gangs only (a gang with one
   member that may not go stays whole), that are preemptible (KAI: priority below 100,
   whatever the reclaimer's priority) and past their queues' reclaimMinRuntime. They are
   tried from the queue most over its share, lowest priority first within a queue.
3. DefaultPreemption's planning then finds the fewest of them that make the whole job fit
   (its filters, topology, gang packing all count); that set must pass KAI's reclaim rules:
   each victim queue over its fair share (or over its quota, for a reclaimer within its
   own), and the reclaimer not ending above an affected sibling's saturation.
4. The victims are evicted (a "Preempted" Event naming the reclaiming queue) and every
   member the job needs is nominated to the node planned for it (KAI pipelines the whole
   job onto the room it frees); while they terminate, the job waits for them instead of
   evicting more, and the victims' replacements cannot take that room back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from phalanx.api.duration import format_duration
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import FitError, PodInfo, PostFilterResult
from phalanx.scheduler.queues.jobs import JobNeeds
from phalanx.scheduler.queues.minruntime import reclaim_min_runtime
from phalanx.scheduler.queues.order import L_FIRST, compare
from phalanx.scheduler.queues.rules import Reclaimer, can_reclaim, describe, reclaimable
from phalanx.scheduler.queues.runtime import QueueRuntime, request_vec
from phalanx.scheduler.queues.settings import QueueArgs, parse_args
from phalanx.scheduler.queues.share import QueueShare, add
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.victim_protection import protections

from .preemption import DefaultPreemption, Unit
from .queuecapacity import _protected, _seconds, hook_releases, started_at

QUEUE_RECLAIM = "QueueReclaim"


@register_plugin
class QueueReclaim(DefaultPreemption):
    NAME = QUEUE_RECLAIM
    Args = QueueArgs  # type: ignore[assignment]
    NO_VICTIMS = "no job of a queue over its fair share to reclaim for {what}"

    def __init__(self, handle: Handle, args: Any = None) -> None:
        qargs = parse_args(args)
        super().__init__(handle, {"victimGraceSeconds": qargs.victim_grace_seconds})
        self.queues = QueueRuntime.for_handle(handle, qargs, QUEUE_RECLAIM)
        self.jobs = JobNeeds(handle)
        hook_releases(handle, self.queues)
        self._victim_filters = [self._reclaimable_victim]  # not preemption's (same queue)
        self._reclaimer: Reclaimer | None = None
        self._shares: dict[str, QueueShare] = {}
        # Victims of other queues left out only for their minimum runtime: queue -> (the
        # runtime, the earliest end of a protection).
        self._protected: dict[str, tuple[float, float]] = {}
        self.reclaims = 0  # successful reclaims (tests and bench)

    @property
    def qargs(self) -> QueueArgs:
        """The scheduler-wide arguments, from whichever profile's queue plugin set them."""
        return self.queues.settings

    async def start(self) -> None:
        # Every profile's plugins exist by now: take the grace any of them set.
        self.args = self.args.model_copy(
            update={"victim_grace_seconds": self.qargs.victim_grace_seconds})
        await super().start()
        await self.queues.start(self.handle.client, self.handle.informers)

    # --- PostFilter ---------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo, fit: FitError
                    ) -> tuple[PostFilterResult | None, Status]:
        rt = self.queues
        silent = None, Status(Code.UNSCHEDULABLE)
        if not rt.active:
            return silent
        queue = rt.pod_queue(pod.pod)
        shares = rt.shares()
        if queue is None or queue not in shares or shares[queue].children:
            return silent
        reclaimer = Reclaimer(queue, list(self.jobs.need(pod)), rt.is_preemptible(pod.pod))
        if not can_reclaim(shares, reclaimer):
            q = shares[queue]
            held = add(q.allocated(), reclaimer.required)
            return None, Status.unschedulable(
                f"queue {q.label} reclaims nothing: with this job it would hold "
                f"{describe(held)}, beyond its fair share of {describe(q.fair_share())}")
        waiting = self._still_terminating(self.jobs.unit_key(pod), self.handle.snapshot())
        if waiting:
            # Unresolvable stops the PostFilter chain: preemption must not add evictions
            # while the room reclaimed for this job is still being freed.
            return None, Status.unresolvable(
                f"waiting for {waiting} reclaimed pod(s) to terminate")
        self._reclaimer, self._shares, self._protected = reclaimer, shares, {}
        try:
            result, st = super().post_filter(state, pod, fit)
            protected = self._protected_message(st)
        finally:
            self._reclaimer, self._shares = None, {}
        if st.is_success:
            self.reclaims += 1
        elif st.message:
            why = protected or st.message
            st = Status(st.code, [f"reclaim for queue {shares[queue].label}: {why}"])
        return result, st

    def _protected_message(self, st: Status) -> str:
        """When no victim was left but jobs over their fair share sat out their minimum
        runtime: which queues, for how long, and how much longer ("" otherwise)."""
        if st.is_success or not self._protected or "no job of a queue" not in (st.message or ""):
            return ""
        over = {q: v for q, v in self._protected.items()
                if (share := self._shares.get(q)) is not None and _over_fair_share(share)}
        if not over:
            return ""
        now = self.handle.clock.now()
        parts = [f"queue {self._shares[q].label}'s run within their minimum runtime "
                 f"(reclaimMinRuntime {format_duration(need)}); the first may be reclaimed in "
                 f"{format_duration(max(0.0, until - now))}"
                 for q, (need, until) in sorted(over.items())]
        return "the only jobs over their queue's fair share are protected: " + "; ".join(parts)

    # --- victims --------------------------------------------------------------------------

    def _reclaimable_victim(self, preemptor: PodInfo, victim: PodInfo) -> bool:
        rt, reclaimer = self.queues, self._reclaimer
        if reclaimer is None:
            return False
        vq = rt.pod_queue(victim.pod)
        q = self._shares.get(vq) if vq is not None else None
        if q is None or q.children or vq == reclaimer.queue:
            return False
        if not rt.is_preemptible(victim.pod) or rt.ledger.is_releasing(victim.key):
            return False
        need = reclaim_min_runtime(rt.objects, reclaimer.queue, q.name,
                                   _seconds(self.qargs.default_reclaim_min_runtime),
                                   self.qargs.reclaim_resolve_method)
        now = self.handle.clock.now()
        if _protected(victim, need, now):
            until = (started_at(victim) or now) + need
            seen = self._protected.get(q.name)
            self._protected[q.name] = (need, min(until, seen[1]) if seen else until)
            protections(self.handle).spare(until)
            return False
        return True

    def _victim_units(self, snap: Snapshot, rows: Any, priority: int, own: set[str]
                      ) -> list[Unit]:
        # Priority does not protect a job from another queue's reclaim (KAI); preemptibility
        # and the minimum runtime do (the victim filter).
        units = super()._victim_units(snap, rows, math.inf, own)  # type: ignore[arg-type]
        return self._victim_order(units)

    def _victim_order(self, units: list[Unit]) -> list[Unit]:
        """KAI's victim order (its queue order reversed, as JobsOrderByQueues walks victim
        queues): the queue KAI would serve last gives first -- over its fair share, then
        over its deserved quota, then the lower queue priority, then the larger dominant
        share once its victims so far and its next one are gone, and so on (order.compare).
        Each pick ranks the queues again, so victims alternate between queues; within a
        queue the lowest priority, smallest, newest job goes first."""
        total = self.queues.total_now()
        by_queue: dict[str, list[Unit]] = {}
        for u in units:
            by_queue.setdefault(self._unit_queue(u) or "", []).append(u)
        taken = {q: [0.0, 0.0, 0.0] for q in by_queue}  # what each queue has given so far
        none = (0.0, 0.0, 0.0)
        out: list[Unit] = []
        while by_queue:
            def gone(q: str) -> list[float]:
                return add(taken[q], _unit_vec(by_queue[q][0]))  # popped + next, as KAI

            ranked = [q for q in by_queue if q in self._shares]
            if ranked:
                q = ranked[0]
                for other in ranked[1:]:
                    # The queue served later in KAI's order gives first.
                    if compare(self._shares[q], self._shares[other], none, none, total,
                               gone(q), gone(other)) == L_FIRST:
                        q = other
            else:
                q = min(by_queue)
            u = by_queue[q].pop(0)
            taken[q] = add(taken[q], _unit_vec(u))
            if not by_queue[q]:
                del by_queue[q]
            out.append(u)
        return out

    def _unit_queue(self, u: Unit) -> str | None:
        return self.queues.pod_queue(u.pods[0][0].pod) if u.pods else None

    def _accept(self, chosen: Sequence[Unit]) -> str | None:
        reclaimer = self._reclaimer
        if reclaimer is None:
            return "no reclaimer"
        by_queue: dict[str, list[list[float]]] = {}
        for u in chosen:
            queue = self._unit_queue(u)
            if queue is None:
                return "a victim has no queue"
            by_queue.setdefault(queue, []).append(_unit_vec(u))
        if reclaimable(self._shares, reclaimer, by_queue, self.qargs.reclaimer_saturation_multiplier):
            return None
        names = ", ".join(sorted(by_queue))
        return (f"taking {len(chosen)} job(s) of queue(s) {names} would leave them below "
                f"their fair share or queue {reclaimer.queue} above theirs; nothing evicted")

    def _eviction_message(self, pod: PodInfo, what: str) -> str:
        queue = self._reclaimer.queue if self._reclaimer is not None else "?"
        return f"reclaimed by {what} of queue {queue} (fair share)"


def _unit_vec(u: Unit) -> list[float]:
    """(cpu, memory, gpu) a victim job's pods hold."""
    vec = [0.0, 0.0, 0.0]
    for info, _row in u.pods:
        vec = add(vec, request_vec(info.requests))
    return vec


def _over_fair_share(q: QueueShare) -> bool:
    held, fair = q.allocated(), q.fair_share()
    return any(held[r] > fair[r] + 1e-9 for r in range(3))
