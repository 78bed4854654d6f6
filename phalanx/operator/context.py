"""What every operator controller shares: the client, informer caches with their indexes,
the backend registry, the event recorder and a few knobs.

Indexes (all values are `namespace/name` keys):
    PodCliqueSet-owned objects   "pcs"          by the `app.kubernetes.io/part-of` label
    PodClique                    "owner"        by controller owner (`Kind:ns/name`)
    PodClique                    "podgang"      by the `grove.io/podgang` label
    PodClique                    "base-podgang" by the `grove.io/base-podgang` label
    Pod                          "podclique"    by the `grove.io/podclique` label
    Pod                          "podgang"      by the `grove.io/podgang` label
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Container, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from phalanx.api import labels as L
from phalanx.api.base import KubeModel, Resource
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodGang
from phalanx.api.grove_topology import explicit_topology_name
from phalanx.backends.base import Backend
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import Client, Conflict, NotFound
from phalanx.cluster.controller import Controller, Manager, Result
from phalanx.cluster.events import EventRecorder
from phalanx.cluster.informer import Informer
from phalanx.cluster.objects import object_key

from . import lifecycle_events, naming
from .plan import DomainKey, uses_topology
from .podgang_sync_state import BackendSyncState
from .recent_creates import RecentCreates
from .topologies import TopologyCache

T = TypeVar("T")
S = TypeVar("S", bound=KubeModel)

log = logging.getLogger(__name__)

IDX_PCS = "pcs"
IDX_OWNER = "owner"
IDX_PODGANG = "podgang"
IDX_BASE_PODGANG = "base-podgang"
IDX_PODCLIQUE = "podclique"

COMPONENT = "phalanx-operator"


def _label_index(label: str) -> Callable[[Resource], str | None]:
    def index(obj: Resource) -> str | None:
        value = obj.metadata.labels.get(label)
        return object_key(obj.metadata.namespace, value) if value else None

    return index


def _owner_index(obj: Resource) -> str | None:
    ref = obj.metadata.controller_ref()
    return f"{ref.kind}:{object_key(obj.metadata.namespace, ref.name)}" if ref else None


def owner_key(owner: Resource) -> str:
    return f"{owner.KIND}:{owner.key}"


@dataclass
class Tunables:
    # Pod creations / gate removals in flight per reconcile (bounded so a real API server
    # is not flooded; MemoryCluster does not care).
    write_concurrency: int = 32
    # Pod events are folded into one status write per object per batch period, as the
    # Job controller's syncJobBatchPeriod does: status writes per pod stay well below one.
    status_batch_period: float = 0.05
    # The PodClique and PodCliqueSet status controllers, which mostly only report, fold a
    # longer window: the Job controller's syncJobBatchPeriod is 1 s. At 500 replicas, 50 ms
    # left ~4.6 PodClique status writes per 2-pod clique.
    status_report_period: float = 1.0
    # ...except while its PodCliqueSet rolls: the rolling update waits on the PodClique's
    # ready count before each next replacement, twice a replica, and 1 s there doubled a
    # real-server roll (10 replicas: 23.2 s, against 10.6 s at 50 ms; bench/README.md).
    status_report_period_rolling: float = 0.05
    # A PodClique's status write waits until its pods have been quiet for
    # `status_report_period`, but no longer than this after the first change it holds: on a
    # real server a clique's pods are created, ungated, bound and started over seconds, and a
    # write per 1 s window was ~3.6 writes per 2-pod clique (ScaleTest_1000).
    status_settle_longest: float = 2.0
    # Status that tells a reader nothing new waits this long at most for a change that does
    # (a PodClique's first status before any of its pods exists, a PodClique change of
    # scheduleGatedReplicas alone): on a real server each of those was about one write per
    # clique, seconds before the one that mattered (ScaleTest_1000's audit log).
    status_hold_longest: float = 10.0
    # A new PodGang whose pods are still being created gets `Initialized=False` written only
    # if it is still incomplete this long after its creation: a gang whose pods all exist
    # sooner goes straight to `Initialized=True` in one status write (Grove writes both).
    # 1 s was too short on a loaded real server: creating 1,000 pods took 13-19 s, and most
    # gangs got the extra write (ScaleTest_1000's audit log).
    initialized_pending_grace: float = 1.0
    # A complete PodGang's `Initialized=True` waits this long at most for its backend's
    # first verdict, to go out with `BackendSynced` (nothing acts on Initialized alone; on a
    # loaded real server the verdicts trailed the pods by 4-12 s).
    backend_verdict_wait: float = 30.0


@dataclass
class OperatorContext:
    client: Client
    manager: Manager
    registry: BackendRegistry
    recorder: EventRecorder
    tunables: Tunables = field(default_factory=Tunables)
    topology_aware: bool = False

    def __post_init__(self) -> None:
        mgr = self.manager
        self.pcs: Informer[PodCliqueSet] = mgr.informer(PodCliqueSet)
        self.pcsgs: Informer[PodCliqueScalingGroup] = mgr.informer(PodCliqueScalingGroup)
        self.cliques: Informer[PodClique] = mgr.informer(PodClique)
        self.gangs: Informer[PodGang] = mgr.informer(PodGang)
        self.pods: Informer[Pod] = mgr.informer(Pod)
        # ClusterTopologyBindings (and legacy ClusterTopologies); None with topology-aware
        # scheduling off. Informers exist once OperatorManager.start() attached them.
        # BackendSynced verdicts, written by the PodGang controller (podgang_sync_state.py).
        self.backend_sync = BackendSyncState()
        # What the controllers created lately: a stale view creates none twice (recent_creates.py).
        self.creates = RecentCreates(lambda: self.client.clock.monotonic())
        for inf in (self.pcsgs, self.cliques, self.gangs):
            self.creates.watch(inf)
        self.topologies: TopologyCache | None = (
            TopologyCache(mgr) if self.topology_aware else None)
        by_pcs = _label_index(L.LABEL_PART_OF)
        for inf in (self.pcsgs, self.cliques, self.gangs):
            inf.add_index(IDX_PCS, by_pcs)
        self.cliques.add_index(IDX_OWNER, _owner_index)
        self.cliques.add_index(IDX_PODGANG, _label_index(L.LABEL_PODGANG))
        self.cliques.add_index(IDX_BASE_PODGANG, _label_index(L.LABEL_BASE_PODGANG))
        self.pods.add_index(IDX_PODCLIQUE, _label_index(L.LABEL_PODCLIQUE))
        self.pods.add_index(IDX_PODGANG, _label_index(L.LABEL_PODGANG))

    # ------------------------------------------------------------------ lookups

    def pcs_of(self, obj: Resource) -> PodCliqueSet | None:
        name = naming.pcs_of(obj.metadata.labels)
        return self.pcs.get(object_key(obj.metadata.namespace, name)) if name else None

    def pods_of(self, pclq_key: str) -> list[Pod]:
        return self.pods.by_index(IDX_PODCLIQUE, pclq_key)

    def backend_for(self, pcs: PodCliqueSet) -> Backend:
        """The backend the PodCliqueSet's pods name (admission made them all agree)."""
        return self.registry.get_or_default(pcs.spec.template.cliques[0].spec.pod_spec.scheduler_name)

    def topology_for(self, pcs: PodCliqueSet) -> tuple[DomainKey | None, str | None]:
        """(domain -> node-label key, topology name) for a PodCliqueSet's constraints, from
        the ClusterTopologyBinding (else legacy ClusterTopology) its topologyName names, as
        Grove resolves it; (None, None) when topology-aware scheduling is off, no
        constraint names a topology, or the named one does not exist."""
        if self.topologies is None or not uses_topology(pcs):
            return None, None
        name = explicit_topology_name(pcs)
        ct = self.topologies.get(name) if name else None
        if ct is None:
            return None, None
        return ct.key_for, ct.name


def copy_status(status: S) -> S:
    """A copy of a status that `set_condition` and counter assignments may change without
    touching the cached object: conditions are copied one by one, the rest is shallow
    (a deep copy costs ~0.5 ms per status, mostly copying datetimes)."""
    conditions = getattr(status, "conditions", None)
    if conditions is None:
        return status.model_copy()
    return status.model_copy(update={"conditions": [c.model_copy() for c in conditions]})


def requeue_on_conflict(reconcile: Callable[[str], Awaitable[Result | None]]
                        ) -> Callable[[str], Awaitable[Result | None]]:
    """Optimistic concurrency losing a race is routine, not an error: retry with backoff
    (without the controller logging a traceback)."""

    async def wrapped(key: str) -> Result | None:
        try:
            return await reconcile(key)
        except Conflict:
            return Result(requeue=True)

    wrapped.__qualname__ = getattr(reconcile, "__qualname__", "reconcile")
    return wrapped


def enqueue_batched(controller: Controller, informer: Informer[Any],
                    mapper: Callable[[Any], Iterable[str]],
                    delay: float | Callable[[str], float],
                    predicate: Callable[[Any, Any], bool] | None = None) -> None:
    """Like `controller.watch`, but each key is queued `delay` seconds after the first event
    (later events in that window fold into the same reconcile; a shorter delay asked for
    within it brings the reconcile forward). `delay` may depend on the key."""
    queue = controller.queue

    def add(obj: Any) -> None:
        for key in mapper(obj):
            queue.add_after(key, delay(key) if callable(delay) else delay)

    def update(old: Any, new: Any) -> None:
        if predicate is None or predicate(old, new):
            add(new)

    informer.add_handler(add, update, add)


# A hold shorter than this is over: a timer for a few ulps of the clock might not move it
# (float rounding), and the reconcile would requeue itself forever.
HOLD_EPSILON = 1e-6


def hold_left(dues: dict[str, float], key: str, now: float, longest: float) -> float:
    """Seconds a held write of `key` may still wait: at most `longest` from the first time it
    was held (0: write now, and the hold ends)."""
    due = dues.setdefault(key, now + longest)
    if due - now < HOLD_EPSILON:
        del dues[key]
        return 0.0
    return due - now


class SettleWindow:
    """Per key: the first and the latest change not yet written. `wait(key)` is how long a
    reconcile should still hold its write: until the key has been quiet for `quiet(key)`,
    but never longer than `longest(key)` after the first change held (0: write now, and the
    window closes)."""

    def __init__(self, clock: Any, quiet: Callable[[str], float],
                 longest: Callable[[str], float]) -> None:
        self.clock, self.quiet, self.longest = clock, quiet, longest
        self._window: dict[str, tuple[float, float]] = {}  # key -> (first, latest)

    def touch(self, key: str) -> float:
        """Record a change; returns the delay to queue the key after (its quiet period)."""
        now = self.clock.monotonic()
        first, _ = self._window.get(key, (now, now))
        self._window[key] = (first, now)
        return self.quiet(key)

    def forget(self, key: str) -> None:
        self._window.pop(key, None)

    def wait(self, key: str) -> float:
        window = self._window.get(key)
        if window is None:
            return 0.0
        first, latest = window
        due = min(latest + self.quiet(key), first + max(self.longest(key), self.quiet(key)))
        left = due - self.clock.monotonic()
        if left < HOLD_EPSILON:
            del self._window[key]
            return 0.0
        return left


def enqueue_settled(controller: Controller, informer: Informer[Any],
                    mapper: Callable[[Any], Iterable[str]], window: SettleWindow,
                    predicate: Callable[[Any, Any], bool] | None = None) -> None:
    """Like `enqueue_batched`, but each event also extends the key's settle window (the
    reconcile asks `window.wait(key)` before writing)."""
    queue = controller.queue

    def add(obj: Any) -> None:
        for key in mapper(obj):
            queue.add_after(key, window.touch(key))

    def update(old: Any, new: Any) -> None:
        if predicate is None or predicate(old, new):
            add(new)

    informer.add_handler(add, update, add)


# The semaphores `bounded` jobs of the running task hold (tasks inherit their parent's).
_HELD: ContextVar[tuple[asyncio.Semaphore, ...]] = ContextVar("bounded_held", default=())


async def bounded(jobs: Iterable[Callable[[], Awaitable[T]]],
                  limit: int | asyncio.Semaphore) -> list[T | BaseException]:
    """Run the jobs with at most `limit` in flight; results (or exceptions) in order.

    A semaphore as `limit` is shared with whoever else holds it: calls side by side (a
    replica's PodGangs, then its PodCliques, for every replica at once) then bound their
    writes in flight altogether. A job must not pass the semaphore it runs under to a
    `bounded` of its own: with every permit held by waiting jobs, their jobs could never
    start. That raises RuntimeError instead of hanging."""
    sem = asyncio.Semaphore(limit) if isinstance(limit, int) else limit
    held = _HELD.get()
    if any(s is sem for s in held):
        raise RuntimeError("bounded(): a job running under this semaphore passed it to a "
                           "nested bounded(), which can wait forever for its own permits; "
                           "give the nested call its own limit")

    async def run(job: Callable[[], Awaitable[T]]) -> T:
        async with sem:
            token = _HELD.set((*held, sem))
            try:
                return await job()
            finally:
                _HELD.reset(token)

    return await asyncio.gather(*(run(j) for j in jobs), return_exceptions=True)


def first_error(results: Iterable[object]) -> BaseException | None:
    for r in results:
        if isinstance(r, BaseException):
            return r
    return None


def raise_first_error(results: Iterable[object]) -> None:
    """Raise the first exception among `bounded`'s results, if there is one."""
    err = first_error(results)
    if err is not None:
        raise err


async def delete_excess(ctx: OperatorContext, owner: Resource, existing: Mapping[str, Resource],
                        planned: Container[str], kind: type[Resource], *,
                        newest_first: bool = False) -> BaseException | None:
    """Delete the children in `existing` that are not `planned` (and not being deleted yet),
    concurrently within the write bound; one already gone is fine. One Event on `owner`
    names those deleted. Returns the first error (the others were still tried).
    `newest_first`: in descending name order (a scaling group's highest replicas first)."""
    doomed = sorted((name for name, obj in existing.items()
                     if name not in planned and obj.metadata.deletion_timestamp is None),
                    reverse=newest_first)
    if not doomed:
        return None
    log.info("%s: deleting %d %s no longer in the spec", owner.key, len(doomed), kind.KIND)

    async def delete(name: str) -> str | None:
        try:
            await ctx.client.delete(kind, name, owner.namespace)
        except NotFound:
            return None
        return name

    results = await bounded([lambda n=n: delete(n) for n in doomed],
                            ctx.tunables.write_concurrency)
    lifecycle_events.children_deleted(ctx.recorder, owner, kind.KIND,
                                      [r for r in results if isinstance(r, str)])
    return first_error(results)
