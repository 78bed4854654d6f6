"""ClusterTopology controller: hands every ClusterTopology to the scheduler backends that keep
their own copy of it (Grove's operator does the same for KAI: the Topology exists as soon as
the ClusterTopology does, before any workload asks for it).

Runs only with topology-aware scheduling on. A backend opts in by having
`sync_cluster_topology(ct)` (idempotent); what it creates should be owned by the
ClusterTopology, so deleting that removes it through garbage collection.
"""

from __future__ import annotations

import logging

from phalanx.cluster.controller import Controller, Result

from .context import OperatorContext, requeue_on_conflict

log = logging.getLogger(__name__)


class ClusterTopologyController:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.controller = Controller("clustertopology", requeue_on_conflict(self.reconcile))
        if ctx.topologies is not None:
            self.controller.watch(
                ctx.topologies,
                predicate=lambda old, new: old.metadata.generation != new.metadata.generation)

    async def reconcile(self, key: str) -> Result | None:
        topologies = self.ctx.topologies
        ct = topologies.get(key) if topologies is not None else None
        if ct is None or ct.metadata.deletion_timestamp is not None:
            return None
        for backend in self.ctx.registry.enabled():
            sync = getattr(backend, "sync_cluster_topology", None)
            if sync is not None:
                await sync(ct.copy_deep())
        return None
