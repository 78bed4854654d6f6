"""QueueCapacity: KAI's queues in the scheduling cycle (phalanx/scheduler/queues).

- PreFilter: a pod of a queue is refused, naming the queue and the numbers, when its queue
  does not exist or is not a leaf, when its job (the whole gang still to be placed) would
  take the queue or an ancestor above its limit ("queue team-a: 64 of its 64-GPU limit in
  use, the gang needs 8 more"), or, for a non-preemptible job, above its deserved quota.
  Unresolvable by preemption (evicting other queues' pods frees nothing of this queue's
  limit); the pod is retried when a pod of its queue tree leaves or a Queue changes.
- Reserve / Unreserve: the queue ledger counts assumed pods at once.
- Queue order: registers KAI's fair-share order with PrioritySort (the queue furthest below
  its share first, then priority within the queue); see plugins/prioritysort.py.
- Preemption stays within a queue, as KAI's preempt action: DefaultPreemption never evicts
  another queue's pods (QueueReclaim does, by fair share), a non-preemptible pod (its job's
  explicit preemptibility, else KAI's priority 100 and up), nor a pod still within its
  queue's preemptMinRuntime. Pods of profiles standing in for schedulers without KAI queues
  are outside all this (queues/kai_groups.py); a volcano pod with `volcano.sh/preemptable:
  "false"` is never a victim (Volcano's rule).
- A kai-scheduler pod asking for what this stand-in for KAI does not model (KAI GPU sharing,
  a node pool's scheduling shard) is refused as unresolvable, naming the key (queues/standin.py).

With no Queue in the cluster every hook returns at its first line (after those two checks,
which cost a look at the pod's scheduler name): PreFilter skips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.api.labels import SCHEDULER_KAI, SCHEDULER_VOLCANO
from phalanx.api.queue import Queue
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Handle, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    PreFilterResult,
    QueueingHint,
)
from phalanx.scheduler.queues import order as queue_order
from phalanx.scheduler.queues.jobs import JobNeeds
from phalanx.scheduler.queues.kai_groups import volcano_preemptable
from phalanx.scheduler.queues.minruntime import preempt_min_runtime
from phalanx.scheduler.queues.rules import over_capacity, over_limit
from phalanx.scheduler.queues.runtime import QueueRuntime, request_vec
from phalanx.scheduler.queues.settings import QueueArgs, parse_args
from phalanx.scheduler.queues.share import path_to_root
from phalanx.scheduler.queues.standin import kai_unmodelled
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.victim_protection import protections

from .preemption import eviction_listeners, room_checks, victim_filters
from .prioritysort import queue_orders

QUEUE_CAPACITY = "QueueCapacity"
# A Queue was created, changed or deleted (the runtime tells the scheduling queue).
EVENT_QUEUE_CHANGE = ClusterEvent(Queue.KIND, ActionType.ALL, "QueueChange")
_ASSIGNED_POD_GONE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
_UNQUEUED = ((2,),)  # pods outside the queue system: after every queue's pods


class FairShareOrder:
    """KAI's queue order as PrioritySort's leading key (one per scheduler)."""

    def __init__(self, runtime: QueueRuntime, jobs: JobNeeds) -> None:
        self.runtime = runtime
        self.jobs = jobs

    def changing(self) -> bool:
        return self.runtime.active

    def key(self, pod: PodInfo) -> tuple[Any, ...]:
        rt = self.runtime
        if not rt.active:
            return ()
        shares = rt.shares()
        queue = rt.pod_queue(pod.pod)
        if queue is None or queue not in shares:
            return _UNQUEUED
        path = path_to_root(shares, queue)
        heads = rt.heads()
        jobs: dict[str, tuple[float, float, float]] = {}
        for q in path:
            head = heads.get(q.name)
            info = self.jobs.handle.pod_info(head) if head is not None else None
            if info is not None:
                jobs[q.name] = self.jobs.need(info)
        held = {q.name: q.allocated() for q in path}
        own = self._own_assumed(pod)
        if own is not None:  # the pod's own gang, mid-attempt, does not push it back
            for q in path:
                held[q.name] = [held[q.name][r] - own[r] for r in range(3)]
        return queue_order.sort_key(path, held, jobs, rt.total_now())

    def _own_assumed(self, pod: PodInfo) -> list[float] | None:
        g = self.jobs.gang_of(pod)
        if g is None or not g.assumed:
            return None
        entries = self.runtime.ledger.entries
        out = [0.0, 0.0, 0.0]
        for key in g.assumed:
            e = entries.get(key)
            if e is not None and e.allocated and not e.bound:
                out = [out[r] + e.vec[r] for r in range(3)]
        return out


@register_plugin
class QueueCapacity(Plugin):
    NAME = QUEUE_CAPACITY
    Args = QueueArgs

    def __init__(self, handle: Handle, args: Any = None) -> None:
        args = parse_args(args)
        super().__init__(handle, args)
        self.runtime = QueueRuntime.for_handle(handle, args, QUEUE_CAPACITY)
        self.jobs = JobNeeds(handle)
        rt = self.runtime
        if not getattr(rt, "_hooks_installed", False):
            rt._hooks_installed = True  # type: ignore[attr-defined]
            queue_orders(handle).append(FairShareOrder(rt, self.jobs))
            victim_filters(handle).append(self._may_preempt)
            room_checks(handle).append(self._room_after)
            rt.listeners.append(self._on_change)
        hook_releases(handle, rt)

    async def start(self) -> None:
        await self.runtime.start(self.handle.client, self.handle.informers)
        from phalanx.scheduler.queues.status import QueueStatusWriter

        QueueStatusWriter.for_runtime(self.runtime, self.handle.client)

    def _on_change(self, what: str) -> None:
        if what == "queues":
            self.handle.on_cluster_event(EVENT_QUEUE_CHANGE)

    # --- PreFilter ------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot
                   ) -> tuple[PreFilterResult | None, Status]:
        rt = self.runtime
        if pod.pod.spec.scheduler_name == SCHEDULER_KAI:
            why = kai_unmodelled(pod.pod, rt.groups.of(pod.pod))
            if why:
                return None, Status.unresolvable(why)
        if not rt.active:
            return None, Status.skip()
        queue = rt.pod_queue(pod.pod)
        if queue is None:
            return None, Status.skip()
        why = self.queue_problem(queue)
        if why:
            return None, Status.unresolvable(why)
        shares = rt.shares()
        verdict = over_capacity(shares, queue, self.jobs.need(pod), rt.is_preemptible(pod.pod))
        if verdict is not None:
            message = verdict.message(shares, queue)
            if verdict.kind == "limit" and self._may_free_in_queue(queue, pod):
                return None, Status.unschedulable(message)  # preemption within the queue
            return None, Status.unresolvable(message)
        return None, Status.skip()

    def queue_problem(self, queue: str) -> str:
        """Why no pod of `queue` can run at all ("" when it can)."""
        rt = self.runtime
        if queue not in rt.objects:
            return (f"queue {queue!r} does not exist (the pod's kai.scheduler/queue label, "
                    "or its KAI PodGroup's spec.queue, names it): create the Queue")
        shares = rt.shares()
        if queue not in shares:
            return (f"queue {queue!r} is not in the queue tree: a queue above it does not "
                    "exist (spec.parentQueue)")
        children = shares[queue].children
        if children:
            return (f"queue {queue!r} has child queues ({', '.join(sorted(children))}); "
                    "only leaf queues hold workloads")
        return ""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(_ASSIGNED_POD_GONE, self._same_tree, gated=False),
            ClusterEventWithHint(EVENT_QUEUE_CHANGE, None, gated=False),
        ]

    def _same_tree(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A pod leaving frees limit room only for the queues above it."""
        rt = self.runtime
        gone = old if old is not None else new
        if not rt.active or gone is None:
            return QueueingHint.QUEUE
        mine, theirs = rt.pod_queue(pod.pod), rt.pod_queue(gone)
        if mine is None or theirs is None:
            return QueueingHint.QUEUE
        shares = rt.shares()
        above = {q.name for q in path_to_root(shares, theirs)}
        mine_path = {q.name for q in path_to_root(shares, mine)}
        return QueueingHint.QUEUE if above & mine_path else QueueingHint.QUEUE_SKIP

    # --- Reserve --------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        self.runtime.assume(pod)
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self.runtime.unassume(pod.key)

    # --- preemption stays within a queue ------------------------------------------------------

    def _may_free_in_queue(self, queue: str, pod: PodInfo) -> bool:
        """Whether the queue holds a job this pod could preempt (preemptible, lower
        priority): only then can preemption make room under its limit."""
        priority = -float(pod.priority)
        return any(e.queue == queue and e.allocated and e.preemptible and e.order[0] > priority
                   for e in self.runtime.ledger.entries.values())

    def _room_after(self, preemptor: PodInfo, victims: list[PodInfo]) -> str | None:
        """The preemptor's queue limits with `victims` gone (a room check of
        DefaultPreemption): only its own queue's victims free room under them."""
        rt = self.runtime
        if not rt.active:
            return None
        queue = rt.pod_queue(preemptor.pod)
        shares = rt.shares()
        if queue is None or queue not in shares:
            return None
        freed = [0.0, 0.0, 0.0]
        for v in victims:
            if rt.pod_queue(v.pod) == queue:
                vec = request_vec(v.requests)
                freed = [freed[r] + vec[r] for r in range(3)]
        after = dict(shares)
        for q in path_to_root(shares, queue):
            q = after[q.name] = q.copy()
            for r in range(3):
                q.share(r).allocated -= freed[r]
        verdict = over_limit(after, queue, self.jobs.need(preemptor))
        return verdict.message(after, queue) if verdict is not None else None

    def _may_preempt(self, preemptor: PodInfo, victim: PodInfo) -> bool:
        rt = self.runtime
        pod = victim.pod
        if rt.active and rt.ledger.is_releasing(victim.key):
            return False  # already evicted
        spared = protections(self.handle)
        if pod.spec.scheduler_name == SCHEDULER_VOLCANO and not volcano_preemptable(pod):
            spared.spare()
            return False  # Volcano's volcano.sh/preemptable: "false"
        kai = pod.spec.scheduler_name in rt.default_queues
        if kai and rt.explicit_preemptibility(pod) is False:
            spared.spare()
            return False  # KAI skips non-preemptible victims, with or without queues
        if not rt.active:
            return True
        if kai and not rt.is_preemptible(pod):
            spared.spare()
            return False  # not preemptible: KAI's priority 100 and up
        theirs = rt.pod_queue(pod)
        if rt.pod_queue(preemptor.pod) != theirs:
            return False
        if theirs is None:
            return True
        default = _seconds(rt.settings.default_preempt_min_runtime)
        need = preempt_min_runtime(rt.objects, theirs, default)
        now = self.handle.clock.now()
        if _protected(victim, need, now):
            spared.spare((started_at(victim) or now) + need)
            return False
        return True


def hook_releases(handle: Handle, rt: QueueRuntime) -> None:
    """Evicted pods leave their queue's accounts at once (once per scheduler)."""
    if not getattr(rt, "_releases_hooked", False):
        rt._releases_hooked = True  # type: ignore[attr-defined]
        eviction_listeners(handle).append(rt.release)


def _seconds(value: str) -> float:
    from phalanx.api.duration import parse_duration

    return parse_duration(value)


def started_at(victim: PodInfo) -> float | None:
    start = victim.pod.status.start_time
    return start.timestamp() if start is not None else None


def _protected(victim: PodInfo, min_runtime: float, now: float) -> bool:
    if min_runtime <= 0:
        return False
    start = started_at(victim)
    return start is not None and now < start + min_runtime
