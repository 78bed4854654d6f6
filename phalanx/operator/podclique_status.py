"""PodClique status controller: replicas, readyReplicas, scheduledReplicas,
scheduleGatedReplicas and the PodCliqueScheduled / MinAvailableBreached conditions.

Pod events settle before a write (`SettleWindow`): the write waits until the clique's pods
have been quiet for `Tunables.status_report_period`, at most `status_settle_longest` after
the first change it holds, so pods created, ungated, bound and started in quick succession
become one status write, not one per step. Grove's status is eventually consistent too.
While the PodCliqueSet rolls, both are `status_report_period_rolling` (the update waits on
the ready count).

Two kinds of write wait longer, up to `status_hold_longest`, for the next change that
carries them: a new PodClique's first status while none of its pods exists yet (it would
say only "0 scheduled"), and a change of `scheduleGatedReplicas` alone (the gates lifted;
the binds follow). Neither is something the operator acts on: gang termination reads the
conditions, the scaled PodGangs `scheduledReplicas`, the PodCliqueSet `readyReplicas`, and a
change of any of them is written at once (after the settle window). On a real server these
were two of a 2-pod clique's four status writes (ScaleTest_1000's audit log).
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodCliqueStatus
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import lifecycle_events, naming
from .conditions import podclique_status
from .context import IDX_PCS, OperatorContext, SettleWindow, enqueue_settled, hold_left, requeue_on_conflict
from .podclique import owned_pods
from .updateprogress import expected_hash, in_progress, pcs_rolling, pod_hash_target


def _spec_changed(old: PodClique, new: PodClique) -> bool:
    return old.metadata.generation != new.metadata.generation or \
        old.status.update_progress != new.status.update_progress


def update_hashes(pcs: PodCliqueSet, pclq: PodClique, pods: list[Pod],
                  status: PodCliqueStatus) -> None:
    """`updatedReplicas` and the current hashes, as Grove's mutateUpdatedReplica and
    mutateCurrentHashes: pods carrying the target hash count as updated; the current hashes
    move once no update is running and every pod is updated."""
    target = pod_hash_target(pclq)
    if target:
        status.updated_replicas = sum(
            1 for p in pods if p.metadata.deletion_timestamp is None
            and p.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == target)
    if in_progress(pclq) or status.updated_replicas != status.replicas:
        return
    up = pclq.status.update_progress
    if up is None:
        want = expected_hash(pcs, pclq)
        if want is not None and pclq.metadata.labels.get(L.LABEL_POD_TEMPLATE_HASH) == want:
            status.current_pod_template_hash = want
            status.current_pod_clique_set_generation_hash = pcs.status.current_generation_hash
    else:
        status.current_pod_template_hash = up.pod_template_hash
        status.current_pod_clique_set_generation_hash = up.pod_clique_set_generation_hash


def _uninformative(pclq: PodClique, pods: list[Pod], new: PodCliqueStatus) -> bool:
    """A write that can wait for the next one: the first status of a clique none of whose
    pods exists yet, or a change of scheduleGatedReplicas alone."""
    old = pclq.status
    if not old.conditions:
        return not pods and pclq.spec.replicas > 0
    return (new.schedule_gated_replicas != old.schedule_gated_replicas and
            new.model_copy(update={"schedule_gated_replicas": old.schedule_gated_replicas})
            == old)


class PodCliqueStatusController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podclique-status", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        tunables = ctx.tunables

        def rolling(key: str) -> bool:
            pclq = ctx.cliques.get(key)
            pcs = ctx.pcs_of(pclq) if pclq is not None else None
            return pcs is not None and pcs_rolling(pcs)

        def quiet(key: str) -> float:
            return (tunables.status_report_period_rolling if rolling(key)
                    else tunables.status_report_period)

        def longest(key: str) -> float:
            return (tunables.status_report_period_rolling if rolling(key)
                    else tunables.status_settle_longest)

        self.settle = SettleWindow(ctx.client.clock, quiet, longest)
        self._hold_due: dict[str, float] = {}  # key -> when a held write goes out regardless
        # A new PodClique's first status folds into the one for its first pods.
        enqueue_settled(c, ctx.cliques, lambda pclq: [pclq.key], self.settle, _spec_changed)
        enqueue_settled(c, ctx.pods, map_from_label(L.LABEL_PODCLIQUE), self.settle)
        # A new generation hash may make PodCliques current without any pod changing.
        c.watch(ctx.pcs, lambda pcs: ctx.cliques.keys_by_index(IDX_PCS, pcs.key),
                predicate=lambda o, n: o.status.current_generation_hash !=
                n.status.current_generation_hash)

    def _hold(self, key: str) -> float:
        return hold_left(self._hold_due, key, self.ctx.client.clock.monotonic(),
                         self.ctx.tunables.status_hold_longest)

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pclq = ctx.cliques.get(key)
        if pclq is None:
            self.settle.forget(key)
            self._hold_due.pop(key, None)
            return None
        if (wait := self.settle.wait(key)) > 0:
            return Result(requeue_after=wait)
        pods = list(owned_pods(ctx, pclq).values())
        # Always published, autoscaled or not: every PodClique is a scale target (Grove #591).
        pcs_name = naming.pcs_of(pclq.metadata.labels) or ""
        selector = ",".join(f"{k}={v}" for k, v in sorted(
            {**naming.managed_labels(pcs_name), L.LABEL_PODCLIQUE: pclq.name}.items()))
        status = podclique_status(pclq, pods, ctx.client.clock.now_dt(), selector)
        pcs = ctx.pcs_of(pclq)
        if pcs is not None:
            update_hashes(pcs, pclq, pods, status)
        if status == pclq.status:
            self._hold_due.pop(key, None)
            return None
        if (pcs is None or not pcs_rolling(pcs)) and _uninformative(pclq, pods, status):
            if (wait := self._hold(key)) > 0:
                return Result(requeue_after=wait)
        self._hold_due.pop(key, None)
        updated = pclq.model_copy(update={"status": status})
        updated.metadata = pclq.metadata.model_copy()
        await ctx.client.update_status(updated, returning=False)
        lifecycle_events.all_scheduled_lost(ctx.recorder, pclq, pclq.status.scheduled_replicas,
                                            status.scheduled_replicas)
        return None
