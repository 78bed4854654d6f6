"""PodClique status controller: replicas, readyReplicas, scheduledReplicas,
scheduleGatedReplicas and the PodCliqueScheduled / MinAvailableBreached conditions.

Pod events are batched (see `Tunables.status_report_period`): a burst of pods of one clique
being created, bound or started becomes one status write, not one per pod.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodCliqueStatus
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import lifecycle_events, naming
from .conditions import podclique_status
from .context import IDX_PCS, OperatorContext, enqueue_batched, requeue_on_conflict
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


class PodCliqueStatusController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podclique-status", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        tunables = ctx.tunables

        def period(key: str) -> float:
            pclq = ctx.cliques.get(key)
            pcs = ctx.pcs_of(pclq) if pclq is not None else None
            rolling = pcs is not None and pcs_rolling(pcs)
            return (tunables.status_report_period_rolling if rolling
                    else tunables.status_report_period)

        # A new PodClique's first status folds into the one for its first pods.
        enqueue_batched(c, ctx.cliques, lambda pclq: [pclq.key], period, _spec_changed)
        enqueue_batched(c, ctx.pods, map_from_label(L.LABEL_PODCLIQUE), period)
        # A new generation hash may make PodCliques current without any pod changing.
        c.watch(ctx.pcs, lambda pcs: ctx.cliques.keys_by_index(IDX_PCS, pcs.key),
                predicate=lambda o, n: o.status.current_generation_hash !=
                n.status.current_generation_hash)

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pclq = ctx.cliques.get(key)
        if pclq is None:
            return None
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
            return None
        updated = pclq.model_copy(update={"status": status})
        updated.metadata = pclq.metadata.model_copy()
        await ctx.client.update_status(updated)
        lifecycle_events.all_scheduled_lost(ctx.recorder, pclq, pclq.status.scheduled_replicas,
                                            status.scheduled_replicas)
        return None
