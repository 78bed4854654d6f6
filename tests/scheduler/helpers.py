"""Builders for scheduler tests: nodes, pods, a MemoryCluster with a running Scheduler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.core import (
    Container,
    Node,
    NodeSpec,
    NodeStatus,
    Pod,
    PodSpec,
    ResourceRequirements,
    Taint,
    Toleration,
)
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler


def node(
    name: str,
    *,
    cpu: str | int = "8",
    memory: str = "32Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[tuple[str, str, str]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, Any] | None = None,
) -> Node:
    alloc: dict[str, Any] = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    alloc.update(extra or {})
    return Node(
        metadata=ObjectMeta(name=name, labels=dict(labels or {})),
        spec=NodeSpec(
            unschedulable=unschedulable,
            taints=[Taint(key=k, value=v or None, effect=e) for k, v, e in taints or []] or None,
        ),
        status=NodeStatus(allocatable=alloc, capacity=alloc),
    )


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpu: int = 0,
    priority: int | None = None,
    scheduler: str = "phalanx-scheduler",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[Toleration] | None = None,
    gates: list[str] | None = None,
    affinity: Any = None,
    extra: dict[str, Any] | None = None,
) -> Pod:
    req: dict[str, Any] = {}
    if cpu:
        req["cpu"] = cpu
    if memory:
        req["memory"] = memory
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    req.update(extra or {})
    spec: dict[str, Any] = {
        "containers": [Container(name="main", image="x", resources=ResourceRequirements.from_requests(req or {}))],
        "scheduler_name": scheduler,
        "priority": priority,
        "node_selector": node_selector,
        "tolerations": tolerations,
        "affinity": affinity,
    }
    if gates:
        spec["scheduling_gates"] = [{"name": g} for g in gates]
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace, labels=dict(labels or {}), annotations=dict(annotations or {})),
        spec=PodSpec(**spec),
    )


async def bound_nodes(client: MemoryCluster, namespace: str = "default") -> dict[str, str | None]:
    """pod name -> node name (None when unbound)."""
    pods = (await client.list(Pod, namespace)).items
    return {p.name: p.spec.node_name for p in pods}


def run_scheduler(
    body: Callable[[MemoryCluster, Scheduler], Awaitable[Any]],
    *,
    nodes: list[Node] = (),  # type: ignore[assignment]
    pods: list[Pod] = (),  # type: ignore[assignment]
    scheduler_factory: Callable[[MemoryCluster], Scheduler] | None = None,
) -> Any:
    """Create nodes and pods, start a Scheduler on a MemoryCluster, run `body`, stop."""

    async def main() -> Any:
        client = MemoryCluster()
        for n in nodes:
            await client.create(n)
        for p in pods:
            await client.create(p)
        sched = scheduler_factory(client) if scheduler_factory else Scheduler(client)
        await sched.start()
        try:
            return await body(client, sched)
        finally:
            await sched.stop()

    return run_virtual(main)
