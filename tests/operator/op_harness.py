"""Test harness for the operator (imported by the tests as `op_harness`): a MemoryCluster, the OperatorManager, a simple binder
standing in for the scheduler, and the simulated kubelet, all on virtual time.

    def test_something():
        async def scenario(env: Env) -> None:
            await env.create(make_pcs("web", cliques=[("a", 2)]))
            await env.settle()
            assert ...
        run(scenario)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Container, Node, NodeCondition, Pod, PodSpec
from phalanx.api.grove import (
    PodClique,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSetSpec,
    PodCliqueSetTemplateSpec,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
    PodGang,
)
from phalanx.cluster.client import Client, Conflict, Invalid, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.controller import Controller, Manager, Result
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.sim.kubelet import Kubelet

T = TypeVar("T")
NS = "default"


class Binder:
    """Binds every ungated, unbound pod to one of `nodes` Ready nodes, round-robin.

    No gang logic, no resources: it only stands in for a scheduler so the operator's
    lifecycle can be tested. `paused` stops binding (pods stay Pending).
    """

    def __init__(self, client: Client, nodes: int = 4) -> None:
        self.client = client
        self.node_names = [f"node-{i}" for i in range(nodes)]
        self.manager = Manager(client)
        self.pods = self.manager.informer(Pod)
        self.controller = self.manager.add(Controller("test-binder", self._bind, workers=2))
        self.controller.watch(self.pods)
        self.paused = False
        self.bound = 0
        self._next = 0

    async def start(self) -> None:
        for name in self.node_names:
            node = Node(metadata=ObjectMeta(name=name))
            node.status.conditions.append(NodeCondition(type="Ready", status="True"))
            await self.client.create(node)
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()

    async def resume(self) -> None:
        self.paused = False
        for key in self.pods.keys():
            self.controller.queue.add(key)

    async def _bind(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if self.paused or pod is None or pod.spec.node_name or pod.spec.scheduling_gates \
                or pod.metadata.deletion_timestamp is not None or pod.is_terminal:
            return None
        node = self.node_names[self._next % len(self.node_names)]
        self._next += 1
        try:
            await self.client.bind(pod.name, pod.namespace or NS, node)
            self.bound += 1
        except (Conflict, NotFound, Invalid):
            pass
        return None


class Env:
    def __init__(self, cluster: MemoryCluster, op: OperatorManager, binder: Binder | None,
                 kubelet: Kubelet | None) -> None:
        self.cluster, self.op, self.binder, self.kubelet = cluster, op, binder, kubelet

    async def create(self, obj: Any) -> Any:
        return await self.cluster.create(obj)

    async def settle(self, timeout: float = 3600) -> None:
        """Until the operator, the binder and the kubelet all have nothing left to do now."""
        others = [m for m in (self.binder and self.binder.manager,
                              self.kubelet and self.kubelet.manager) if m is not None]
        for _ in range(100):
            await self.op.wait_idle(timeout=timeout)
            if not any(m.busy() for m in others):
                return
            for m in others:
                await m.wait_idle(timeout=timeout)
        raise AssertionError("the system did not settle")

    async def run_for(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass (timers such as start delays fire), then settle."""
        await asyncio.sleep(seconds)
        await self.settle()

    async def pods(self, **labels: str) -> list[Pod]:
        return (await self.cluster.list(Pod, NS, label_selector=labels or None)).items

    async def pod_name(self, hostname: str) -> str:
        """The generated name of the live pod with hostname `<podclique>-<index>`."""
        found = [p.name for p in await self.pods() if p.spec.hostname == hostname
                 and p.metadata.deletion_timestamp is None]
        assert len(found) == 1, f"{len(found)} live pods with hostname {hostname}"
        return found[0]

    async def delete_pod(self, hostname: str) -> None:
        await self.cluster.delete(Pod, await self.pod_name(hostname), NS)

    async def gangs(self) -> dict[str, PodGang]:
        return {g.name: g for g in (await self.cluster.list(PodGang, NS)).items}

    async def cliques(self) -> dict[str, PodClique]:
        return {c.name: c for c in (await self.cluster.list(PodClique, NS)).items}

    async def pcs(self, name: str) -> PodCliqueSet:
        return await self.cluster.get(PodCliqueSet, name, NS)


def run(scenario: Callable[[Env], Awaitable[T]], *, binder: bool = True, kubelet: bool = True,
        start_delay: float = 0.0, config: OperatorConfiguration | None = None,
        nodes: int = 4, before_start: Callable[[MemoryCluster], Awaitable[Any]] | None = None
        ) -> T:
    """`before_start(cluster)`: objects that exist before the operator (and its admission)
    starts, such as ones created under an earlier configuration."""
    async def main() -> T:
        cluster = MemoryCluster()
        if before_start is not None:
            await before_start(cluster)
        op = OperatorManager(cluster, config)
        await op.start()
        b = Binder(cluster, nodes) if binder else None
        k = Kubelet(cluster, start_delay=start_delay) if kubelet else None
        if b is not None:
            await b.start()
        if k is not None:
            await k.start()
        env = Env(cluster, op, b, k)
        try:
            return await scenario(env)
        finally:
            for m in (k, b):
                if m is not None:
                    await m.stop()
            await op.stop()

    return run_virtual(main)


def pod_spec(scheduler: str | None = None) -> PodSpec:
    spec = PodSpec(containers=[Container(name="main", image="busybox")])
    if scheduler:
        spec.scheduler_name = scheduler
    return spec


def make_pcs(name: str, cliques: list[tuple[str, int] | tuple[str, int, int]], *,
             replicas: int = 1, groups: list[tuple[str, list[str], int, int]] | None = None,
             startup: str | None = None, starts_after: dict[str, list[str]] | None = None,
             termination_delay: str | None = None, scheduler: str | None = None,
             autoscaled: tuple[str, ...] = ()) -> PodCliqueSet:
    """cliques: (name, replicas[, minAvailable]); groups: (name, cliques, replicas, minAvailable)."""
    from phalanx.api.grove import AutoScalingConfig

    templates = []
    for entry in cliques:
        cname, reps = entry[0], entry[1]
        spec = PodCliqueSpec(role_name=cname, pod_spec=pod_spec(scheduler), replicas=reps,
                             min_available=entry[2] if len(entry) > 2 else None,  # type: ignore[misc]
                             starts_after=(starts_after or {}).get(cname))
        if cname in autoscaled:
            spec.auto_scaling_config = AutoScalingConfig(max_replicas=reps * 4)
        templates.append(PodCliqueTemplateSpec(name=cname, spec=spec))
    template = PodCliqueSetTemplateSpec(
        cliques=templates, clique_startup_type=startup, termination_delay=termination_delay,
        pod_clique_scaling_groups=[
            PodCliqueScalingGroupConfig(name=g, clique_names=names, replicas=r, min_available=m)
            for g, names, r, m in groups or ()] or None,
    )
    return PodCliqueSet(metadata=ObjectMeta(name=name, namespace=NS),
                        spec=PodCliqueSetSpec(replicas=replicas, template=template))


def gated(pod: Pod) -> bool:
    return pod.has_gate(L.GATE_PODGANG_PENDING_CREATION)
