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
from collections.abc import Callable, Coroutine
from typing import Any, Self

from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration
from phalanx.scheduler.framework.config import SchedulerConfiguration
from phalanx.api.grove import ClusterTopologyBinding, ClusterTopologyBindingSpec, TopologyLevel
from phalanx.cluster.client import Client
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator.admission import install_admission
from phalanx.operator.manager import OperatorManager
from phalanx.scheduler import Scheduler
from phalanx.sim.clusterspec import ClusterSpec, build_nodes
from phalanx.sim.kubelet import Kubelet
from phalanx.sim.runner import DEFAULT_TOPOLOGY_NAME
from phalanx.sim.workload import embedded_default_config

from .fence import Process, track_tasks

Connect = Callable[[str], Client]


class NotSettled(AssertionError):
    """The stack still had work after the settle timeout (names what was busy)."""


class EmbeddedStack:
    def __init__(self, cluster_spec: ClusterSpec, config: OperatorConfiguration | None = None,
                 *, cluster: MemoryCluster | None = None, record_events: bool = True,
                 topology: bool = True, connect: Connect | None = None,
                 scheduler_config: SchedulerConfiguration | None = None) -> None:
        self.spec = cluster_spec
        self.config = config or embedded_default_config()
        self.cluster = cluster or MemoryCluster()
        # Each process's own connection to the API server: the MemoryCluster itself by
        # default; e.g. a KubeCluster over HTTP to exercise the wire client.
        self.connect: Connect = connect or (lambda _name: self.cluster)
        self.record_events = record_events
        self.topology = topology
        self.scheduler_config = scheduler_config
        self.operator: OperatorManager | None = None
        self.scheduler: Scheduler | None = None
        self.operator_process: Process | None = None
        self.scheduler_process: Process | None = None
        self.kubelet = Kubelet(self.connect("kubelet"),
                               start_delay=cluster_spec.spec.kubelet.start_delay_seconds)
        self.restarts = {"operator": 0, "scheduler": 0}
        self.kills = {"operator": 0, "scheduler": 0}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Nodes (and a ClusterTopologyBinding from the spec's levels), then the components."""
        track_tasks(asyncio.get_running_loop())
        for node in build_nodes(self.spec):
            await self.cluster.create(node)
        if self.topology and self.spec.spec.topology:
            await self.cluster.create(ClusterTopologyBinding(
                metadata=ObjectMeta(name=DEFAULT_TOPOLOGY_NAME),
                spec=ClusterTopologyBindingSpec(levels=[
                    TopologyLevel(domain=t.domain, key=t.key) for t in self.spec.spec.topology])))
        await self.start_operator()
        await self.start_scheduler()
        await self.kubelet.start()

    async def stop(self) -> None:
        await self.kubelet.stop()
        await self.stop_scheduler()
        await self.stop_operator()
        await self._close(self.kubelet.client)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ operator

    async def start_operator(self) -> OperatorManager:
        if self.operator is not None:
            raise RuntimeError("the operator is already running")
        process = Process("operator", self.connect("operator"))
        # The fenced client has no register_admission: the webhook is installed below, on
        # the API server itself, once (a restart must not stack a second copy of it).
        op = OperatorManager(process.client, self.config)  # type: ignore[arg-type]
        install_admission(self.cluster, op.registry)
        with process.running():
            await op.start()
        self.operator, self.operator_process = op, process
        return op

    async def stop_operator(self, *, kill: bool = False) -> None:
        """Stop gracefully, or `kill` (SIGKILL: nothing it would still do reaches the API)."""
        op, process = self.operator, self.operator_process
        if op is None or process is None:
            return
        self.operator = self.operator_process = None
        await self._end(process, op.stop(), kill)

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
        process = Process("scheduler", self.connect("scheduler"))
        sched = Scheduler(process.client, self.scheduler_config,  # type: ignore[arg-type]
                          record_events=self.record_events)
        with process.running():
            await sched.start()
        self.scheduler, self.scheduler_process = sched, process
        return sched

    async def stop_scheduler(self, *, kill: bool = False) -> None:
        sched, process = self.scheduler, self.scheduler_process
        if sched is None or process is None:
            return
        self.scheduler = self.scheduler_process = None
        await self._end(process, sched.stop(), kill)

    async def restart_scheduler(self, *, kill: bool = True, downtime: float = 0.0) -> None:
        await self.stop_scheduler(kill=kill)
        if downtime > 0:
            await asyncio.sleep(downtime)
        await self.start_scheduler()
        self.restarts["scheduler"] += 1

    async def _end(self, process: Process, graceful_stop: Coroutine[Any, Any, None],
                   kill: bool) -> None:
        if kill or process.dead:
            graceful_stop.close()  # never run: a killed process has no shutdown path
            if not process.dead:
                process.kill()
            self.kills[process.name] += 1
        else:
            with process.running():
                await graceful_stop
            process.kill()  # whatever is left (e.g. timers) dies with the process
        await process.reap()
        await self._close(process.client.inner)

    async def _close(self, client: Any) -> None:
        """Close a connection of our own making (never the shared MemoryCluster)."""
        close = getattr(client, "close", None)
        if client is not self.cluster and close is not None:
            await close()

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

    async def settle(self, timeout: float = 3600.0, *, horizon: float | None = None) -> None:
        """Until operator, scheduler and kubelets are all idle at once (loop time), counting
        kubelet start delays and anything else due within `horizon` seconds (default: the
        start delay plus a minute), but not timers further out (e.g. a 4h terminationDelay)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if horizon is None:
            horizon = self.kubelet.start_delay + 60.0
        while True:
            left = lambda: max(deadline - loop.time(), 0.0)
            if self.operator is not None:
                await self.operator.wait_idle(timeout=left())
            if self.scheduler is not None:
                await self.scheduler.wait_idle(timeout=left())
            await self.kubelet.wait_idle(timeout=left())
            busy = self.busy()
            due = self.next_due()
            if not busy and (due is None or due > loop.time() + horizon):
                return
            if loop.time() >= deadline:
                raise NotSettled(f"not settled after {timeout:g}s: {busy[:5] or f'a timer at {due}'}")
            if not busy and due is not None:
                await asyncio.sleep(max(due - loop.time(), 0.0) + 1e-3)

    def next_due(self) -> float | None:
        """Loop time of the earliest delayed reconcile of the operator or the kubelets, or
        of a write the scheduler has scheduled (a queue status pass)."""
        controllers = list(self.kubelet.manager.controllers)
        if self.operator is not None:
            controllers += self.operator.controllers
        times = [t for c in controllers if (t := c.queue.next_delayed()) is not None]
        if self.scheduler is not None and (t := self.scheduler.next_due()) is not None:
            times.append(t)
        return min(times, default=None)

