"""PodGang controller: pod references, `Initialized`, and the gang's scheduling status.

Initialization (GREP-375): a PodGang is created with empty references. Once every group's
PodClique exists and has all its pods, each carrying the `grove.io/podgang` label of this
gang, the references are written (one spec update) and `Initialized=True`
(PodGangPodsCreated) is set; that is what lets the PodClique
controller lift the gates. Afterwards the references follow the pods (scale out/in).
`Initialized=False` (PodGangPodsCreationPending, Grove's reason) is written only for a gang
still incomplete `initialized_pending_grace` after this controller first saw it: Grove
writes it at once, which costs a status write per gang that is stale a moment later.

This controller is the PodGang status's only writer in the operator: the backend
controller's `BackendSynced` verdict reaches it through `ctx.backend_sync` and goes out in
the same write (podgang_sync_state.py). `Initialized=True` waits for that verdict, at most
`backend_verdict_wait`: gates are lifted (and the gate-free scheduler releases pods)
only once both are True, so writing the first alone changed nothing anyone acts on and cost
a second write when the verdict came (on a real server the backend's objects often take
longer than the gang's pods).

Status: per group, pods bound (not failed) and pods Ready against minReplicas give
`Scheduled`, `Ready` (whose lastTransitionTime says when the gang was last scheduled / became
ready: `PodGang.true_since`) and the phase (phalanx/api/gangphase.py, the rule reports use too:
Pending, Starting, Running, and Succeeded / Failed once every pod ended).
A PodGang whose PodCliqueSet is gone or being deleted gets no reference or status write:
the garbage collector is about to remove it, and as its pods go first each would be one more
write no one reads (about one a pod in ScaleTest_1000's delete on a real server). An orphaned
gang (the PodCliqueSet deleted with orphan propagation) loses that owner reference and is
written again.
Pod events are batched (one status write per burst). A write that would change only the
wording of conditions (a count in a message: "1/2 scheduled", then "2/2") and no condition's
status nor the phase waits up to `status_report_period` for the next transition, which
carries it: at 500 gangs those count-only writes were about one per gang. So does the step
to `Scheduled=True` / phase Starting alone: `Ready` mostly follows within a fraction of a
second (the audit log of a real server's ScaleTest_1000: 0.15-0.35 s), and no controller
acts on the gang's Scheduled condition (the scaled PodGangs read their PodCliques').
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.base import set_condition
from phalanx.api.gangphase import PodState, podgang_phase
from phalanx.api.core import Pod
from phalanx.api.grove import (
    PODGANG_INITIALIZED,
    PODGANG_READY,
    PODGANG_SCHEDULED,
    REASON_PODS_PENDING,
    REASON_READY,
    NamespacedName,
    PodClique,
    PodCliqueSet,
    PodGang,
    PodGangStatus,
)
from phalanx.cluster.client import NotFound
from phalanx.cluster.controller import Controller, Result, map_from_label
from phalanx.cluster.objects import object_key

from . import naming
from .conditions import (
    BACKEND_SYNCED,
    REASON_PODS_NOT_READY,
    REASON_PODS_READY,
    REASON_PODS_SCHEDULED,
    REASON_PODS_UNSCHEDULED,
)
from .context import copy_status, OperatorContext, enqueue_batched, hold_left, requeue_on_conflict
from .podclique import owned_pods


def _new_or_spec(old: PodGang, new: PodGang) -> bool:
    return old.metadata.generation != new.metadata.generation


def _transitions(status: PodGangStatus) -> tuple[object, ...]:
    """What readers act on: the phase, the score and each condition's status."""
    return (status.phase, status.placement_score,
            tuple(sorted((c.type, c.status) for c in status.conditions)))


def _only_started(old: PodGangStatus, new: PodGangStatus) -> bool:
    """The change is the gang's step to Starting (Scheduled=True) and nothing else."""
    if new.phase != "Starting" or old.phase == "Starting":
        return False
    before = {c.type: c.status for c in old.conditions}
    after = {c.type: c.status for c in new.conditions}
    changed = {t for t in before.keys() | after.keys() if before.get(t) != after.get(t)}
    return changed <= {PODGANG_SCHEDULED} and old.placement_score == new.placement_score


class GroupView:
    """One PodGang group: its PodClique and the pods that belong to this gang."""

    __slots__ = ("name", "min_replicas", "clique", "pods")

    def __init__(self, name: str, min_replicas: int, clique: PodClique | None,
                 pods: list[Pod]) -> None:
        self.name, self.min_replicas, self.clique, self.pods = name, min_replicas, clique, pods

    @property
    def wanted(self) -> int | None:
        return self.clique.spec.replicas if self.clique is not None else None

    @property
    def complete(self) -> bool:
        wanted = self.wanted
        return wanted is not None and len(self.pods) >= wanted  # Grove: pods, not indices

    def references(self, namespace: str) -> list[NamespacedName]:
        ordered = sorted(self.pods, key=lambda p: (naming.pod_index(p) or 0, p.name))
        return [NamespacedName(namespace=namespace, name=p.name) for p in ordered]


class PodGangController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podgang", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.gangs, predicate=_new_or_spec)
        period = ctx.tunables.status_batch_period
        enqueue_batched(c, ctx.pods, map_from_label(L.LABEL_PODGANG), period)
        enqueue_batched(c, ctx.cliques, map_from_label(L.LABEL_PODGANG), period,
                        lambda o, n: o.metadata.generation != n.metadata.generation)
        ctx.backend_sync.on_change(c.queue.add)
        # key -> when this controller first saw the gang incomplete (monotonic clock)
        self._pending_since: dict[str, float] = {}
        # key -> when a held wording-only status change is written at the latest
        self._report_due: dict[str, float] = {}
        # key -> when a complete gang's Initialized=True is written without a backend verdict
        self._verdict_due: dict[str, float] = {}

    def _groups(self, gang: PodGang) -> list[GroupView]:
        ns = gang.namespace
        views = []
        for g in gang.spec.pod_groups:
            clique = self.ctx.cliques.get(object_key(ns, g.name))
            pods: list[Pod] = []
            if clique is not None and clique.metadata.deletion_timestamp is None:
                pods = [p for p in owned_pods(self.ctx, clique).values()
                        if p.metadata.deletion_timestamp is None
                        and p.metadata.labels.get(L.LABEL_PODGANG) == gang.name]
            else:
                clique = None
            views.append(GroupView(g.name, g.min_replicas, clique, pods))
        return views

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        gang = ctx.gangs.get(key)
        if gang is None or gang.metadata.deletion_timestamp is not None:
            self._pending_since.pop(key, None)
            self._report_due.pop(key, None)
            self._verdict_due.pop(key, None)
            return None
        if self._collected(gang):
            return None
        views = self._groups(gang)
        complete = bool(views) and all(v.complete for v in views)
        initialized = gang.is_initialized
        if complete or initialized:
            self._pending_since.pop(key, None)
            gang = await self._sync_references(gang, views)
            if gang is None:
                return None
            if not gang.is_initialized and (wait := self._verdict_wait(gang)) > 0:
                return Result(requeue_after=wait)
        elif gang.condition(PODGANG_INITIALIZED) is None:
            wait = self._grace_left(key)
            if wait > 0:
                return Result(requeue_after=wait)
        status = self._status(gang, views, complete or initialized)
        if status != gang.status:
            wait = self._report_wait(key, gang.status, status)
            if wait > 0:
                return Result(requeue_after=wait)
            updated = gang.model_copy(update={"status": status})
            updated.metadata = gang.metadata.model_copy()
            try:
                await ctx.client.update_status(updated, returning=False)
            except NotFound:
                pass
        return None

    def _collected(self, gang: PodGang) -> bool:
        """The gang's controlling PodCliqueSet is gone or being deleted (its collection is
        due); a gang with no such owner reference is written as usual."""
        ref = gang.metadata.controller_ref()
        if ref is None or ref.kind != PodCliqueSet.KIND:
            return False
        pcs = self.ctx.pcs.get(object_key(gang.namespace, ref.name))
        return pcs is None or pcs.metadata.uid != ref.uid or \
            pcs.metadata.deletion_timestamp is not None

    def _report_wait(self, key: str, old: PodGangStatus, new: PodGangStatus) -> float:
        """Seconds to hold a status write that changes only condition wording, or only
        starts the gang (0: write)."""
        if _transitions(old) != _transitions(new) and not _only_started(old, new):
            self._report_due.pop(key, None)
            return 0.0
        return hold_left(self._report_due, key, self.ctx.client.clock.monotonic(),
                         self.ctx.tunables.status_report_period)

    def _verdict_wait(self, gang: PodGang) -> float:
        """Seconds to hold `Initialized=True` for the backend's first verdict (0: write)."""
        key = gang.key
        if self.ctx.backend_sync.verdict(key) is not None or \
                gang.condition(BACKEND_SYNCED) is not None:
            self._verdict_due.pop(key, None)
            return 0.0
        return hold_left(self._verdict_due, key, self.ctx.client.clock.monotonic(),
                         self.ctx.tunables.backend_verdict_wait)

    def _grace_left(self, key: str) -> float:
        """Seconds until an incomplete gang's `Initialized=False` is due, unless a failed
        backend verdict is waiting (that goes out at once)."""
        verdict = self.ctx.backend_sync.verdict(key)
        if verdict is not None and not verdict.ok:
            return 0.0
        now = self.ctx.client.clock.monotonic()
        since = self._pending_since.setdefault(key, now)
        return since + self.ctx.tunables.initialized_pending_grace - now

    async def _sync_references(self, gang: PodGang, views: list[GroupView]) -> PodGang | None:
        ns = gang.namespace or "default"
        want = {v.name: v.references(ns) for v in views}
        if all(g.pod_references == want[g.name] for g in gang.spec.pod_groups):
            return gang
        updated = gang.copy_deep()
        for g in updated.spec.pod_groups:
            g.pod_references = want[g.name]
        try:
            return await self.ctx.client.update(updated)
        except NotFound:
            return None

    def _status(self, gang: PodGang, views: list[GroupView], initialized: bool) -> PodGangStatus:
        status = copy_status(gang.status)
        now = self.ctx.client.clock.now_dt()
        verdict = self.ctx.backend_sync.verdict(gang.key)
        if verdict is not None:
            set_condition(status.conditions, BACKEND_SYNCED, verdict.ok, verdict.reason,
                          verdict.message, now=now)
        created = sum(min(len(v.pods), v.wanted or 0) for v in views)
        wanted = sum(v.wanted or 0 for v in views)
        if initialized:
            set_condition(status.conditions, PODGANG_INITIALIZED, True, REASON_READY,
                          "every pod exists and is referenced", now=now)
        else:
            set_condition(status.conditions, PODGANG_INITIALIZED, False, REASON_PODS_PENDING,
                          f"{created}/{wanted} pods created", now=now)
        if not initialized:
            # Scheduling conditions mean something once the gang can be scheduled.
            status.phase = "Pending"
            return status
        short_sched = [(v, n) for v in views
                       if (n := sum(1 for p in v.pods if p.spec.node_name
                                    and p.status.phase != "Failed")) < v.min_replicas]
        short_ready = [(v, n) for v in views
                       if (n := sum(1 for p in v.pods if p.is_ready)) < v.min_replicas]
        if short_sched:
            msg = "; ".join(f"{v.name}: {n}/{v.min_replicas} scheduled" for v, n in short_sched)
            set_condition(status.conditions, PODGANG_SCHEDULED, False, REASON_PODS_UNSCHEDULED,
                          msg, now=now)
        else:
            set_condition(status.conditions, PODGANG_SCHEDULED, True, REASON_PODS_SCHEDULED,
                          "every group has minReplicas pods scheduled", now=now)
        if short_ready or short_sched:
            msg = "; ".join(f"{v.name}: {n}/{v.min_replicas} ready" for v, n in short_ready)
            set_condition(status.conditions, PODGANG_READY, False, REASON_PODS_NOT_READY,
                          msg or "not every group is scheduled yet", now=now)
        else:
            set_condition(status.conditions, PODGANG_READY, True, REASON_PODS_READY,
                          "every group has minReplicas pods ready", now=now)
        status.phase = podgang_phase(  # type: ignore[assignment]
            [(v.min_replicas, [PodState(p.status.phase, bool(p.spec.node_name), p.is_ready)
                               for p in v.pods]) for v in views])
        return status
