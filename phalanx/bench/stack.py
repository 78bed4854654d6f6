"""The embedded control plane as separate processes: API server (MemoryCluster), operator,
scheduler and simulated kubelets, each component with its own killable connection.

    stack = EmbeddedStack(gpu_cluster(64))
    await stack.start()
    await stack.cluster.create(job_podcliqueset("job-0", pods=8))
    await stack.settle()
    await stack.restart_scheduler(kill=True)     # SIGKILL and a fresh process
    await stack.stop()

Admission (the operator's webhook) is installed once on the API server: it is a separate
service in a real cluster, so it outlives operator restarts. The kubelets talk to the API
directly and are never restarted (they are the nodes).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import ClusterTopology, ClusterTopologySpec, TopologyLevel
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.admission import install_admission
from phalanx.operator.manager import OperatorManager
from phalanx.scheduler import Scheduler
from phalanx.sim.clusterspec import ClusterSpec, build_nodes
from phalanx.sim.kubelet import Kubelet
from phalanx.sim.runner import DEFAULT_TOPOLOGY_NAME
from phalanx.sim.workload import embedded_default_config

from .fence import FencedClient

log = logging.getLogger(__name__)


class NotSettled(AssertionError):
    """The stack still had work after the settle timeout (names what was busy)."""


class EmbeddedStack:
    def __init__(self, cluster_spec: ClusterSpec, config: OperatorConfiguration | None = None,
                 *, cluster: MemoryCluster | None = None, record_events: bool = True,
                 topology: bool = True) -> None:
        self.spec = cluster_spec
        self.config = config or embedded_default_config()
        self.cluster = cluster or MemoryCluster()
        self.record_events = record_events
        self.topology = topology
        self.operator: OperatorManager | None = None
        self.scheduler: Scheduler | None = None
        self.operator_client: FencedClient | None = None
        self.scheduler_client: FencedClient | None = None
        self.kubelet = Kubelet(self.cluster, start_delay=cluster_spec.spec.kubelet.start_delay_seconds)
        self.restarts = {"operator": 0, "scheduler": 0}
        self.kills = {"operator": 0, "scheduler": 0}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Nodes (and a ClusterTopology from the spec's levels), then the components."""
        for node in build_nodes(self.spec):
            await self.cluster.create(node)
        if self.topology and self.spec.spec.topology:
            await self.cluster.create(ClusterTopology(
                metadata=ObjectMeta(name=DEFAULT_TOPOLOGY_NAME),
                spec=ClusterTopologySpec(levels=[TopologyLevel(domain=t.domain, key=t.key)
                                                 for t in self.spec.spec.topology])))
        await self.start_operator()
        await self.start_scheduler()
        await self.kubelet.start()

    async def stop(self) -> None:
        await self.kubelet.stop()
        await self.stop_scheduler()
        await self.stop_operator()

    async def __aenter__(self) -> EmbeddedStack:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ operator

    async def start_operator(self) -> OperatorManager:
        if self.operator is not None:
            raise RuntimeError("the operator is already running")
        client = FencedClient(self.cluster, "operator")
        # The fenced client has no register_admission: the webhook is installed below, on
        # the API server itself, once (a restart must not stack a second copy of it).
        op = OperatorManager(client, self.config)  # type: ignore[arg-type]
        install_admission(self.cluster, op.registry)
        await op.start()
        self.operator, self.operator_client = op, client
        return op

    async def stop_operator(self, *, kill: bool = False) -> None:
        """Stop gracefully, or `kill`: cut its connection first, so nothing it would still
        write (events, status) reaches the API."""
        op, client = self.operator, self.operator_client
        if op is None or client is None:
            return
        self.operator = self.operator_client = None
        if kill:
            client.kill()
            self.kills["operator"] += 1
        await _quietly(op.stop(), "operator")
        client.kill()

    async def restart_operator(self, *, kill: bool = True, downtime: float = 0.0) -> None:
        await self.stop_operator(kill=kill)
        if downtime > 0:
            await asyncio.sleep(downtime)
        await self.start_operator()
        self.restarts["operator"] += 1

    # ------------------------------------------------------------------ scheduler

    async def start_scheduler(self) -> Scheduler:
        if self.scheduler is not None:
            raise RuntimeError("the scheduler is already running")
        client = FencedClient(self.cluster, "scheduler")
        sched = Scheduler(client, record_events=self.record_events)  # type: ignore[arg-type]
        await sched.start()
        self.scheduler, self.scheduler_client = sched, client
        return sched

    async def stop_scheduler(self, *, kill: bool = False) -> None:
        sched, client = self.scheduler, self.scheduler_client
        if sched is None or client is None:
            return
        self.scheduler = self.scheduler_client = None
        if kill:
            client.kill()
            self.kills["scheduler"] += 1
        await _quietly(sched.stop(), "scheduler")
        client.kill()

    async def restart_scheduler(self, *, kill: bool = True, downtime: float = 0.0) -> None:
        await self.stop_scheduler(kill=kill)
        if downtime > 0:
            await asyncio.sleep(downtime)
        await self.start_scheduler()
        self.restarts["scheduler"] += 1

    # ------------------------------------------------------------------ quiescence

    def busy(self) -> list[str]:
        """What still has work now (empty when the whole stack is idle)."""
        out: list[str] = []
        if self.operator is not None:
            out += [f"operator: {b}" for b in self.operator.manager.busy()]
        if self.scheduler is not None and not self.scheduler.is_idle():
            out.append("scheduler: " + repr(self.scheduler.queue.counts()))
        out += [f"kubelet: {b}" for b in self.kubelet.manager.busy()]
        return out

    async def settle(self, timeout: float = 3600.0) -> None:
        """Until operator, scheduler and kubelets are all idle at once (loop time)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = max(deadline - loop.time(), 0.0)
            if self.operator is not None:
                await self.operator.wait_idle(timeout=left)
            if self.scheduler is not None:
                await self.scheduler.wait_idle(timeout=max(deadline - loop.time(), 0.0))
            await self.kubelet.wait_idle(timeout=max(deadline - loop.time(), 0.0))
            busy = self.busy()
            if not busy:
                return
            if loop.time() >= deadline:
                raise NotSettled(f"not settled after {timeout:g}s: {busy[:5]}")


async def _quietly(stopping: Any, what: str) -> None:
    """Stopping a killed component: its own failed requests are expected, not news."""
    try:
        await stopping
    except Exception as err:  # noqa: BLE001 - a dead process's errors go nowhere
        log.debug("%s stopped with %s: %s", what, type(err).__name__, err)
