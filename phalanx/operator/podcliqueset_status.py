"""PodCliqueSet status controller: replicas, availableReplicas, the HPA selector and the
`SchedulerCompatible` condition; `currentGenerationHash` on first sight and `updatedReplicas`
outside an update (during one, both are the update controller's, rollingupdate.py).

A replica is available when each of its standalone PodCliques has at least minAvailable
Ready pods and each of its scaling groups has at least minAvailable available replicas.
`SchedulerCompatible` comes from the backends' admission check: True (AllFeaturesSupported),
or False (UnsupportedFeaturesIgnored) naming each feature the backend ignores and its field.
`TopologyLevelsUnavailable` says whether the domains it packs into are levels of the
ClusterTopologyBinding it names (`topology_condition.py`); topology changes requeue every
PodCliqueSet.
PodClique and scaling group status changes are batched into one write; the replica counts
are kept per replica between looks (replica_counts.py).
"""

from __future__ import annotations

import logging

from phalanx.api import labels as L
from phalanx.api.base import set_condition
from phalanx.api.grove import PodClique, PodCliqueScalingGroup
from phalanx.backends.admission import check_podcliqueset
from phalanx.cluster.controller import Controller, Result, map_from_label

from . import naming, templatehash
from .context import copy_status, OperatorContext, enqueue_batched, requeue_on_conflict
from .replica_counts import ReplicaCounts
from .updateprogress import in_progress
from .topology_condition import TOPOLOGY_LEVELS_UNAVAILABLE, topology_levels_verdict

log = logging.getLogger(__name__)

CONDITION_SCHEDULER_COMPATIBLE = "SchedulerCompatible"



def _status_changed(old: PodClique | PodCliqueScalingGroup,
                    new: PodClique | PodCliqueScalingGroup) -> bool:
    return old.status != new.status


class PodCliqueSetStatusController:
    def __init__(self, ctx: OperatorContext, workers: int = 2) -> None:
        self.ctx = ctx
        self.controller = Controller("podcliqueset-status", requeue_on_conflict(self.reconcile),
                                     workers=workers)
        c = self.controller
        c.watch(ctx.pcs, predicate=lambda o, n: o.metadata.generation != n.metadata.generation)
        period = ctx.tunables.status_report_period
        by_pcs = map_from_label(L.LABEL_PART_OF)
        enqueue_batched(c, ctx.cliques, by_pcs, period, _status_changed)
        enqueue_batched(c, ctx.pcsgs, by_pcs, period, _status_changed)
        if ctx.topologies is not None:
            ctx.topologies.watch(c, lambda _: ctx.pcs.keys())
        self.replicas = ReplicaCounts(ctx.cliques, ctx.pcsgs)

    async def reconcile(self, key: str) -> Result | None:
        ctx = self.ctx
        pcs = ctx.pcs.get(key)
        if pcs is None or pcs.metadata.deletion_timestamp is not None:
            self.replicas.forget(key)
            return None
        status = copy_status(pcs.status)
        status.observed_generation = pcs.metadata.generation
        if status.current_generation_hash is None:  # first sight; changes are the update
            status.current_generation_hash = templatehash.generation_hash(pcs)  # controller's
        available, updated = self.replicas.counts(pcs)
        if not in_progress(pcs):  # during an update the update controller counts
            status.updated_replicas = updated
        status.replicas = pcs.spec.replicas
        status.available_replicas = available
        status.hpa_pod_selector = ",".join(
            f"{k}={v}" for k, v in sorted(naming.managed_labels(pcs.name).items()))
        check = check_podcliqueset(pcs, None, ctx.registry)
        if check.errors:  # admitted elsewhere (no webhook on a real server, say)
            ok, reason, message = False, "SchedulerIncompatible", check.error_message()
        else:
            ok, reason, message = check.condition()
        set_condition(status.conditions, CONDITION_SCHEDULER_COMPATIBLE, ok, reason, message,
                      now=ctx.client.clock.now_dt(), observed_generation=pcs.metadata.generation)
        verdict = topology_levels_verdict(pcs, ctx.topologies)
        if verdict is None:
            status.conditions = [c for c in status.conditions
                                 if c.type != TOPOLOGY_LEVELS_UNAVAILABLE]
        else:
            set_condition(status.conditions, TOPOLOGY_LEVELS_UNAVAILABLE, verdict[0], verdict[1],
                          verdict[2], now=ctx.client.clock.now_dt(),
                          observed_generation=pcs.metadata.generation)
        if status == pcs.status:
            return None
        updated = pcs.model_copy(update={"status": status})
        updated.metadata = pcs.metadata.model_copy()
        await ctx.client.update_status(updated, returning=False)
        return None
