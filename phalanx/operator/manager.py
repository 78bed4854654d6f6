"""OperatorManager: every operator controller, in-process, on one event loop.

    op = OperatorManager(client, config)      # config: OperatorConfiguration (None = defaults)
    await op.start()      # admission (MemoryCluster), backend init_all, caches, workers
    await op.wait_idle()  # tests / simulations: everything settled
    await op.stop()

Controllers (one module each; workers from `config.controllers`):
    podcliqueset          PodGangs first, then PodCliques and scaling groups  (spec, delete)
    podcliqueset-status   availableReplicas, SchedulerCompatible                 (status)
    podcliquescalinggroup a scaling group's PodCliques, its status
    podclique             pods, scheduling gates                                  (spec)
    podclique-status      replicas / ready / scheduled / gated, MinAvailableBreached
    podgang               pod references, Initialized, Scheduled / Ready / phase
    podgang-backend       finalizer, sync_podgang, on_podgang_delete (GREP-375)
    gang-termination      recreates a replica that stayed below minAvailable
    podcliqueset-update   generation hash, update progress, replica-at-a-time updates
    headless-service      one headless Service per PodCliqueSet replica
    hpa                   a HorizontalPodAutoscaler per autoscaled clique / scaling group
    pcs-serviceaccount,   the startup waiter's identity, one each per PodCliqueSet:
    pcs-satokensecret,    ServiceAccount, its token Secret, a pods-read-only Role and the
    pcs-role,             RoleBinding (Grove's grove-initc; startupwaiter.py)
    pcs-rolebinding
    resourceclaim         ResourceClaims shared by resourceSharing (resourceclaim.py)
    computedomain         auto-MNNVL ComputeDomains (only with network.autoMNNVLEnabled;
                          start() refuses to run when the server serves no ComputeDomain)
    clustertopology       backends' topology objects (KAI Topology) and each
                          ClusterTopologyBinding's status (SchedulerTopologyDrift)

Start-up also logs, once, each OperatorConfiguration field set to something Phalanx does
not do (`phalanx.api.config.ignored_fields`; `report_ignored=False` where the caller says
it itself: the service on every replica, `phalanx run`), and which topology kinds the
server serves.
"""

from __future__ import annotations

import asyncio
import logging

from phalanx.api.config import OperatorConfiguration, default_operator_config, ignored_fields
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodGang
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import Client
from phalanx.cluster.controller import Controller, Manager
from phalanx.cluster.events import EventRecorder

from .admission import install_admission
from .backend_cache import InformerCache
from .clustertopology import ClusterTopologyController
from .context import COMPONENT, OperatorContext, Tunables
from .errors import StatusErrorReporter
from .gangtermination import GangTerminationController
from .headless_service import HeadlessServiceController
from .hpa import HPAController
from .pcs_component import PodCliqueSetComponentController
from .role import ROLE
from .rolebinding import ROLE_BINDING
from .satokensecret import TOKEN_SECRET
from .serviceaccount import SERVICE_ACCOUNT
from .podclique import PodCliqueController
from .podclique_status import PodCliqueStatusController
from .podcliqueset import PodCliqueSetController
from .podcliqueset_status import PodCliqueSetStatusController
from .podgang import PodGangController
from .podgang_backend import PodGangBackendController
from .admission_mnnvl import preflight as mnnvl_preflight
from .computedomain import ComputeDomainController
from .resourceclaim import ResourceClaimController
from .rollingupdate import PodCliqueSetUpdateController
from .scalinggroup import ScalingGroupController

log = logging.getLogger(__name__)


class OperatorManager:
    def __init__(
        self,
        client: Client,
        config: OperatorConfiguration | None = None,
        *,
        registry: BackendRegistry | None = None,
        tunables: Tunables | None = None,
        admission: bool = True,
        report_ignored: bool = True,
    ) -> None:
        import phalanx.backends  # noqa: F401  (registers every backend module)

        cfg = default_operator_config((config or OperatorConfiguration()).model_copy(deep=True))
        self.client = client
        self.config = cfg
        self.registry = registry or BackendRegistry.from_config(cfg)
        self.tunables = tunables or Tunables()
        self.install_admission = admission
        self.report_ignored = report_ignored
        self.manager = Manager(client)
        self.recorder = EventRecorder(client, COMPONENT)
        self.ctx = OperatorContext(client, self.manager, self.registry, self.recorder,
                                   self.tunables,
                                   topology_aware=cfg.topology_aware_scheduling.enabled)
        workers = cfg.controllers
        ctx = self.ctx
        self.podcliqueset = PodCliqueSetController(ctx, workers.pod_clique_set.concurrent_syncs)
        self.podcliqueset_status = PodCliqueSetStatusController(ctx)
        self.scalinggroup = ScalingGroupController(
            ctx, workers.pod_clique_scaling_group.concurrent_syncs)
        self.podclique = PodCliqueController(ctx, workers.pod_clique.concurrent_syncs)
        self.podclique_status = PodCliqueStatusController(ctx, workers.pod_clique.concurrent_syncs)
        self.podgang = PodGangController(ctx, workers.pod_gang.concurrent_syncs)
        self.backend = PodGangBackendController(ctx, workers.pod_gang.concurrent_syncs)
        self.gang_termination = GangTerminationController(ctx)
        self.update = PodCliqueSetUpdateController(ctx)
        self.cluster_topology = ClusterTopologyController(ctx)
        self.headless_service = HeadlessServiceController(ctx)
        self.hpa = HPAController(ctx)
        self.waiter_identity = [PodCliqueSetComponentController(ctx, c) for c in (
            SERVICE_ACCOUNT, TOKEN_SECRET, ROLE, ROLE_BINDING)]
        self.resource_claims = ResourceClaimController(ctx)
        # Only with network.autoMNNVLEnabled: a server without the CRD serves no such kind.
        self.compute_domains = (ComputeDomainController(ctx)
                                if cfg.network.auto_mnnvl_enabled else None)
        # Permanent errors are reported on the object each controller reconciles.
        reported_on = {
            self.podcliqueset: (PodCliqueSet, ctx.pcs),
            self.podcliqueset_status: (PodCliqueSet, ctx.pcs),
            self.gang_termination: (PodCliqueSet, ctx.pcs),
            self.update: (PodCliqueSet, ctx.pcs),
            self.headless_service: (PodCliqueSet, ctx.pcs),
            self.hpa: (PodCliqueSet, ctx.pcs),
            **{c: (PodCliqueSet, ctx.pcs) for c in self.waiter_identity},
            self.resource_claims: (PodCliqueSet, ctx.pcs),
            **({self.compute_domains: (PodCliqueSet, ctx.pcs)}
               if self.compute_domains is not None else {}),
            self.scalinggroup: (PodCliqueScalingGroup, ctx.pcsgs),
            self.podclique: (PodClique, ctx.cliques),
            self.podclique_status: (PodClique, ctx.cliques),
            self.podgang: (PodGang, ctx.gangs),
            self.backend: (PodGang, ctx.gangs),
        }
        for owner, (kind, cache) in reported_on.items():
            owner.controller.reporter = StatusErrorReporter(ctx, kind, cache)
        for c in self.controllers:
            self.manager.add(c)

    @property
    def controllers(self) -> list[Controller]:
        return [x.controller for x in (
            self.podcliqueset, self.podcliqueset_status, self.scalinggroup, self.podclique,
            self.podclique_status, self.podgang, self.backend, self.gang_termination,
            self.update,
            self.cluster_topology, self.headless_service, self.hpa, *self.waiter_identity,
            self.resource_claims,
            *((self.compute_domains,) if self.compute_domains is not None else ()))]

    async def start(self) -> None:
        for line in ignored_fields(self.config) if self.report_ignored else ():
            log.warning("OperatorConfiguration %s", line)
        await mnnvl_preflight(self.client, self.config.network.auto_mnnvl_enabled)
        if self.install_admission and hasattr(self.client, "register_admission"):
            install_admission(self.client, self.registry,
                              topology_aware=self.config.topology_aware_scheduling.enabled,
                              auto_mnnvl=self.config.network.auto_mnnvl_enabled)
        self.registry.use_cache(InformerCache({PodCliqueSet: self.ctx.pcs},
                                              self.ctx.topologies))
        await self.registry.init_all(self.client)
        if self.ctx.topologies is not None:
            await self.ctx.topologies.attach(self.client)
            await self.cluster_topology.attach(self.client)
        await self.manager.start()
        log.info("operator started: %d controllers, scheduler backends %s",
                 len(self.controllers), ", ".join(self.registry.names()))

    async def stop(self) -> None:
        await self.manager.stop()
        await self.recorder.flush()

    async def __aenter__(self) -> OperatorManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Return when the operator has nothing left to do now, counting status updates
        that are only waiting out their batch period (timers further out, such as a gang
        termination delay, do not count)."""
        loop = asyncio.get_running_loop()
        horizon = 2 * max(self.tunables.status_batch_period,
                          self.tunables.status_report_period)
        while True:
            await self.manager.wait_idle(until=loop.time() + horizon, timeout=timeout)
            soon = loop.time() + horizon
            if not any((t := c.queue.next_delayed()) is not None and t <= soon
                       for c in self.controllers):
                return
