"""PodClique status controller: replicas, readyReplicas, scheduledReplicas,
scheduleGatedReplicas and the PodCliqueScheduled / MinAvailableBreached conditions.

Pod events are batched (see `Tunables.status_batch_period`): a burst of pods of one clique
being created, bound or started becomes one status write, not one per pod.
"""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.grove import PodClique
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import naming
from .conditions import podclique_status
from .context import OperatorContext, enqueue_batched, requeue_on_conflict
from .podclique import owned_pods


def _spec_changed(old: PodClique, new: PodClique) -> bool:
    return old.metadata.generation != new.metadata.generation


class PodCliqueStatusController:
    def __init__(self, ctx: OperatorContext, workers: int = 4) -> None:
        self.ctx = ctx
        self.controller = Controller("podclique-status", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        period = ctx.tunables.status_batch_period
        # A new PodClique's first status folds into the one for its first pods.
        enqueue_batched(c, ctx.cliques, lambda pclq: [pclq.key], period, _spec_changed)
        enqueue_batched(c, ctx.pods, map_from_label(L.LABEL_PODCLIQUE), period)

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pclq = ctx.cliques.get(key)
        if pclq is None:
            return None
        pods = list(owned_pods(ctx, pclq).values())
        selector = None
        if pclq.spec.auto_scaling_config is not None:
            pcs = naming.pcs_of(pclq.metadata.labels) or ""
            selector = ",".join(f"{k}={v}" for k, v in sorted(
                {**naming.managed_labels(pcs), L.LABEL_PODCLIQUE: pclq.name}.items()))
        status = podclique_status(pclq, pods, ctx.client.clock.now_dt(), selector)
        if status == pclq.status:
            return None
        updated = pclq.model_copy(update={"status": status})
        updated.metadata = pclq.metadata.model_copy()
        await ctx.client.update_status(updated)
        return None
