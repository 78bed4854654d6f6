"""QueueRuntime: one per scheduler, shared by every profile's queue plugins.

It watches KAI Queues (when the server serves them), KAI PodGroups (a kai-scheduler pod's
queue is its PodGroup's `spec.queue`, as in KAI) and pods, keeps the ledger of what each
queue holds and asks for (ledger.py), and divides the cluster among the queues on demand
(division.py), again only when what the division depends on changed: the queues, their
requests, the nodes, or (time-based fair share) the usage, refreshed every few seconds.

Nothing is tracked while no Queue exists: a cluster without queues pays one check per pod
event. The first Queue switches tracking on (the ledger is rebuilt from the informer's
pods); deleting the last one switches it off.

A pod's queue (kai_groups.py): none for a pod of a profile standing in for a scheduler that
does not read KAI queues (volcano, koord-scheduler, default-scheduler, scheduler-plugins); for
a kai-scheduler pod in a KAI PodGroup, the PodGroup's queue; else its `kai.scheduler/queue`
label; else its profile's `defaultQueue`; else none (its room is then outside the queue
system, like another scheduler's pods, and is taken off what the queues divide). A pod is
preemptible as its job says (the PodGroup's `spec.preemptibility`, else the
`kai.scheduler/preemptibility` label), else when its priority is below the threshold (KAI: 100).

The scheduler-wide arguments come from every profile's queue plugins (settings.merge).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.duration import parse_duration
from phalanx.api.queue import Queue
from phalanx.scheduler.resources import CPU as CPU_NAME
from phalanx.scheduler.resources import GPU as GPU_NAME
from phalanx.scheduler.resources import MEMORY as MEMORY_NAME
from phalanx.scheduler.resources import pod_requests

from . import tree
from .division import set_fair_share
from .kai_groups import KaiGroups, explicit_preemptibility, reads_kai_queues
from .ledger import Ledger, Vec
from .settings import QueueArgs, merge
from .share import QueueShare, path_to_root
from .usage import UsageTracker

if TYPE_CHECKING:
    from phalanx.cluster.informer import Informer
    from phalanx.cluster.informer_factory import InformerFactory
    from phalanx.scheduler.framework.interface import Handle
    from phalanx.scheduler.framework.types import PodInfo

log = logging.getLogger(__name__)

SHARED_KEY = "phalanx.scheduler.queues.runtime"
USAGE_REFRESH_SECONDS = 10.0


def request_vec(requests: dict[str, float]) -> Vec:
    """(cpu millicores, memory bytes, gpus) from scheduler-unit requests."""
    return (requests.get(CPU_NAME, 0.0), requests.get(MEMORY_NAME, 0.0),
            requests.get(GPU_NAME, 0.0))


class QueueRuntime:
    def __init__(self, profiles: dict[str, QueueArgs], snapshot: Callable[[], Any],
                 now: Callable[[], float]) -> None:
        self.settings = QueueArgs()
        self._set_by: dict[str, str] = {}  # scheduler-wide argument -> who set it
        self.default_queues: dict[str, str | None] = {}  # profiles that read KAI queues
        self._snapshot = snapshot
        self._now = now
        self.objects: dict[str, Queue] = {}
        self.objects_version = 0
        self.ledger = Ledger()
        self.groups = KaiGroups()
        self._pods: Informer[Pod] | None = None
        self._attached = False
        self.usage: UsageTracker | None = None
        self._usage_params: object = None
        for name, args in profiles.items():
            self.configure(name, "QueueCapacity", args)
        self._shares: dict[str, QueueShare] = {}
        self._division_key: object = None
        self._alloc_version = -1
        self._total: list[float] = [0.0, 0.0, 0.0]
        self._heads: dict[str, str] = {}
        self._heads_key: object = None
        self.listeners: list[Callable[[str], None]] = []  # "queues" / "allocation"
        self.due: list[Callable[[], float | None]] = []  # pending writes' loop times
        self.ranks_version = 0  # bumps whenever shares may order queues differently

    # --- wiring -------------------------------------------------------------------------

    @classmethod
    def for_handle(cls, handle: Handle, args: QueueArgs, plugin: str = "QueueCapacity"
                   ) -> QueueRuntime:
        sched = getattr(handle, "scheduler", None)
        if sched is None or not hasattr(sched, "shared"):
            return cls({handle.profile_name: args}, handle.snapshot, handle.clock.now)

        def build() -> QueueRuntime:
            return cls({}, handle.snapshot, lambda: sched.client.clock.now())

        rt: QueueRuntime = sched.shared(SHARED_KEY, build)
        rt.configure(handle.profile_name, plugin, args)
        return rt

    def configure(self, profile: str, plugin: str, args: QueueArgs) -> None:
        """One queue plugin's arguments: its profile's defaultQueue, and the scheduler-wide
        ones it sets (ProfileError naming the profile and plugin when they clash)."""
        from phalanx.scheduler.framework.resolve import ProfileError

        where = f"profile {profile!r} {plugin}"
        try:
            if reads_kai_queues(profile):
                have = self.default_queues.get(profile)
                if have and args.default_queue and have != args.default_queue:
                    raise ValueError(f"defaultQueue: {args.default_queue!r} differs from "
                                     f"{have!r} set by the profile's other queue plugin")
                self.default_queues[profile] = have or args.default_queue
            elif args.default_queue:
                raise ValueError(
                    f"defaultQueue: profile {profile!r} stands in for a scheduler that does "
                    "not read KAI queues; its pods are in no queue (set it on a kai-scheduler "
                    "or phalanx-scheduler profile)")
            self.settings = merge(self.settings, self._set_by, args, where)
        except ValueError as e:
            raise ProfileError(f"profile {profile!r}: pluginConfig for {plugin}: {e}") from None
        usage = self.settings.usage
        if usage is not None and (self.usage is None or self._usage_params != usage):
            half = usage.half_life_period
            self.usage = UsageTracker(parse_duration(usage.window_size),
                                      parse_duration(half) if half else None)
        self._usage_params = usage

    async def start(self, client: Any, informers: InformerFactory) -> None:
        """Watch Queues and KAI PodGroups if served (idempotent); pods always."""
        if self._attached:
            return
        self._attached = True
        from phalanx.api.scheduling import KaiPodGroup

        serves = getattr(client, "serves", None)
        kinds = {Queue: True, KaiPodGroup: True}
        if serves is not None:
            for kind in kinds:
                try:
                    kinds[kind] = bool(await serves(kind))
                except Exception:  # discovery failed: try to watch anyway
                    kinds[kind] = True
        self.attach(informers, queues=kinds[Queue], pod_groups=kinds[KaiPodGroup], served=serves)

    def attach(self, informers: InformerFactory, *, queues: bool = True,
               pod_groups: bool = True,
               served: Callable[[type], Awaitable[bool]] | None = None) -> None:
        """Handlers on pods, Queues and KAI PodGroups. A kind not served (False) is read once
        it is, given `served` to ask (its CRD installed later: deferred_informers.py)."""
        from phalanx.api.scheduling import KaiPodGroup

        self._attached = True
        self._pods = informers.informer(Pod)
        self._pods.add_handler(self._on_pod, lambda _o, n: self._on_pod(n), self._on_pod_gone)

        if not queues:
            log.info("%s %s is not served: no queues, quotas or fair share until it is",
                     Queue.API_VERSION, Queue.KIND)
        inf = informers.informer_if_served(Queue, queues, served)
        if inf is not None:
            inf.add_handler(self._on_queue, self._on_queue_update,
                            lambda q: self._on_queue(q, deleted=True))
        groups = informers.informer_if_served(KaiPodGroup, pod_groups, served)
        if groups is not None:
            groups.add_handler(self._on_group, lambda _o, n: self._on_group(n),
                               lambda g: self._on_group(g, deleted=True))

    @property
    def active(self) -> bool:
        return bool(self.objects)

    def _notify(self, what: str) -> None:
        for fn in list(self.listeners):
            try:
                fn(what)
            except Exception:  # a listener must not break the informer
                log.exception("queue listener failed")

    # --- informer handlers ----------------------------------------------------------------

    def _on_queue(self, q: Queue, deleted: bool = False) -> None:
        name = q.metadata.name or ""
        was_active = self.active
        if deleted:
            self.objects.pop(name, None)
        else:
            self.objects[name] = q
        self.objects_version += 1
        if self.active and not was_active:
            self._rebuild()
        elif not self.active:
            self.ledger.clear()
        self._notify("queues")

    def _on_queue_update(self, old: Queue, new: Queue) -> None:
        if old.spec == new.spec and old.metadata.creation_timestamp == \
                new.metadata.creation_timestamp:
            self.objects[new.metadata.name or ""] = new  # status or annotations: no new shares
            return
        self._on_queue(new)

    def _on_group(self, group: Any, deleted: bool = False) -> None:
        changed = self.groups.update(group, deleted)
        if changed and self.active and self._pods is not None:
            for pod_key in sorted(changed):
                pod = self._pods.get(pod_key)
                if pod is not None:
                    self._on_pod(pod)

    def _rebuild(self) -> None:
        self.ledger.clear()
        if self._pods is not None:
            for pod in self._pods.list():
                self._on_pod(pod)

    def _on_pod(self, pod: Pod) -> None:
        if not self.active:
            return
        key = pod.key
        meta = pod.metadata
        if pod.is_terminal or (meta.deletion_timestamp is not None and not pod.spec.node_name):
            self._on_pod_gone(pod)
            return
        bound = bool(pod.spec.node_name)
        ours = pod.spec.scheduler_name in self.default_queues  # a profile reading KAI queues
        if not ours and not bound:
            self.ledger.forget(key)
            return
        entry = self.ledger.entries.get(key)
        uid = meta.uid or key
        vec = entry.vec if entry is not None and entry.uid == uid else \
            request_vec(pod_requests(pod))
        queue = self.pod_queue(pod) if ours else None
        pending = not bound and not pod.spec.scheduling_gates
        self._advance_usage()
        created = meta.creation_timestamp.timestamp() if meta.creation_timestamp else 0.0
        self.ledger.observe(key, uid, queue, vec, self.is_preemptible(pod), bound=bound,
                            pending=pending, order=(-float(pod.spec.priority or 0), created))
        self._usage_state()
        self._notify("allocation")

    def _on_pod_gone(self, pod: Pod) -> None:
        self.groups.forget(pod)
        if not self.active or pod.key not in self.ledger.entries:
            return
        self._advance_usage()
        self.ledger.forget(pod.key)
        self._usage_state()
        self._notify("allocation")

    # --- what a pod is -----------------------------------------------------------------------

    def pod_queue(self, pod: Pod) -> str | None:
        name = pod.spec.scheduler_name
        if name not in self.default_queues:
            return None  # not a profile reading KAI queues (or no queue plugin in it)
        group = self.groups.of(pod)
        if group is not None and group.queue:
            return group.queue
        return pod.metadata.labels.get(labels.LABEL_KAI_QUEUE) or self.default_queues[name]

    def explicit_preemptibility(self, pod: Pod) -> bool | None:
        """What the pod's job says (PodGroup, label), None when the priority decides."""
        return explicit_preemptibility(pod, self.groups.of(pod))

    def is_preemptible(self, pod: Pod) -> bool:
        """KAI's CalculatePreemptibility: the explicit value, else priority below 100."""
        explicit = self.explicit_preemptibility(pod)
        if explicit is not None:
            return explicit
        return int(pod.spec.priority or 0) < self.settings.non_preemptible_priority_threshold

    # --- scheduler-side changes --------------------------------------------------------------

    def assume(self, info: PodInfo) -> None:
        if not self.active:
            return
        self._advance_usage()
        self.ledger.assume(info.key, info.uid, self.pod_queue(info.pod),
                           request_vec(info.requests), self.is_preemptible(info.pod))
        self._usage_state()

    def release(self, keys: list[str]) -> None:
        """Pods evicted by preemption or reclaim: out of their queues' accounts now."""
        if not self.active:
            return
        self._advance_usage()
        for key in keys:
            self.ledger.release(key)
        self._usage_state()
        self._notify("allocation")

    def unassume(self, key: str) -> None:
        if self.active:
            self._advance_usage()
            self.ledger.unassume(key)
            self._usage_state()

    # --- shares ----------------------------------------------------------------------------

    def total(self) -> list[float]:
        """What the queues divide: every node's allocatable, less what pods outside the
        queue system hold."""
        snap = self._snapshot()
        rows = snap.valid_rows()
        out = []
        for name in (CPU_NAME, MEMORY_NAME, GPU_NAME):
            col = snap.resource_index.get(name)
            out.append(float(snap.allocatable[rows, col].sum()) if col is not None else 0.0)
        foreign = self.ledger.allocated.get(None)
        if foreign is not None:
            out = [max(0.0, out[r] - foreign[r]) for r in range(3)]
        return out

    def shares(self) -> dict[str, QueueShare]:
        """Every queue's shares now (fair share recomputed only when its inputs changed).
        Read-only for callers; copy a QueueShare before changing it."""
        if not self.active:
            return {}
        total = self.total()
        now_bucket = None
        if self.usage is not None:
            now_bucket = int(self._now() // USAGE_REFRESH_SECONDS)
        key = (self.objects_version, self.ledger.request_version, tuple(total), now_bucket)
        if key != self._division_key:
            shares = tree.build(self.objects)
            tree.account(shares, self.ledger.allocated, self.ledger.allocated_np,
                         self.ledger.requested)
            if self.usage is not None:
                self._advance_usage()
                tree.set_usage(shares, self.usage.usage(self._now()))
            set_fair_share(shares, total, self.settings.k_value)
            self._shares, self._division_key, self._total = shares, key, total
            self._alloc_version = self.ledger.version
            self.ranks_version += 1
        elif self._alloc_version != self.ledger.version:
            tree.account(self._shares, self.ledger.allocated, self.ledger.allocated_np,
                         self.ledger.requested)
            self._alloc_version = self.ledger.version
            self.ranks_version += 1
        return self._shares

    def heads(self) -> dict[str, str]:
        """Per queue, the pending pod that goes first in its subtree (KAI's job order:
        priority, then age): the job a queue is compared with."""
        shares = self.shares()
        key = (self.ledger.version, self.ledger.request_version, self.objects_version)
        if self._heads_key != key:
            best: dict[str, tuple[tuple[float, float], str]] = {}
            for name in shares:
                head = self.ledger.head(name)
                if head is None:
                    continue
                rank = (self.ledger.entries[head].order, head)
                for q in path_to_root(shares, name):
                    if q.name not in best or rank < best[q.name]:
                        best[q.name] = rank
            self._heads = {q: v[1] for q, v in best.items()}
            self._heads_key = key
        return self._heads

    def total_now(self) -> list[float]:
        self.shares()
        return list(self._total)

    def next_due(self) -> float | None:
        """Loop time of the earliest write still pending (the queue status pass)."""
        return min((t for fn in self.due if (t := fn()) is not None), default=None)

    def _advance_usage(self) -> None:
        """Integrate usage up to now, before the ledger changes."""
        if self.usage is not None:
            self.usage.advance(self._now())

    def _usage_state(self) -> None:
        """What is held from now on, after the ledger changed."""
        if self.usage is not None:
            held = {q: v for q, v in self.ledger.allocated.items() if q is not None}
            self.usage.set_state(held, self.total())
