"""Fake Nodes that kube-scheduler and `phalanx scheduler` both accept, as a kubelet leaves them.

A kubelet registers its Node with capacity, allocatable and conditions, and the
TaintNodesByCondition admission plugin adds `node.kubernetes.io/not-ready:NoSchedule` to
every new Node; the controller-manager's node lifecycle controller removes that taint once
the Ready condition is True. The harness runs no node lifecycle controller (its fake nodes
send no heartbeats, see components.py), so `create_nodes` removes the taint itself, leaving
each Node Ready and untainted. Capacity, GPUs and topology labels come from a
`phalanx.sim.clusterspec.ClusterSpec`, the same shape `phalanx run` simulates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node
from phalanx.sim.clusterspec import (
    GPU,
    ClusterSpec,
    ClusterSpecSpec,
    NodePool,
    build_nodes,
    default_topology,
)

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
_KUBELET_CONDITIONS = (  # what a healthy kubelet reports besides Ready
    ("MemoryPressure", "KubeletHasSufficientMemory"),
    ("DiskPressure", "KubeletHasNoDiskPressure"),
    ("PIDPressure", "KubeletHasSufficientPID"),
)


def gpu_cluster_spec(nodes: int, *, gpus: int = 8, cpu: str = "128", memory: str = "2Ti",
                     pods: int = 110, nodes_per_rack: int = 8, racks_per_block: int = 4,
                     name_prefix: str = "node") -> ClusterSpec:
    """`nodes` GPU nodes in racks and blocks of one zone (labels per topology level)."""
    return ClusterSpec(metadata=ObjectMeta(name=f"envtest-{nodes}"), spec=ClusterSpecSpec(
        topology=default_topology(),
        node_pools=[NodePool(
            name="gpu", name_prefix=name_prefix, count=nodes,
            allocatable={"cpu": cpu, "memory": memory, GPU: str(gpus), "pods": str(pods)},
            # One zone holds the pool (unsized); blocks of racks, racks of nodes.
            nodes_per={"block": nodes_per_rack * racks_per_block, "rack": nodes_per_rack})]))


def _as_registered(node: Node, now: str) -> dict[str, Any]:
    data = node.to_dict()
    status = data.setdefault("status", {})
    conditions = [{"type": t, "status": "False", "reason": r, "lastHeartbeatTime": now,
                   "lastTransitionTime": now, "message": ""} for t, r in _KUBELET_CONDITIONS]
    conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                       "message": "kubelet is posting ready status (phalanx envtest)",
                       "lastHeartbeatTime": now, "lastTransitionTime": now})
    status["conditions"] = conditions
    status.setdefault("nodeInfo", {"kubeletVersion": "v1.36.0", "architecture": "amd64",
                                   "operatingSystem": "linux"})
    return data


async def create_nodes(kube: Any, nodes: Iterable[Node] | ClusterSpec, *,
                       concurrency: int = 32) -> list[Node]:
    """Create the Nodes (a list, or every node of a ClusterSpec) Ready and untainted."""
    items = build_nodes(nodes) if isinstance(nodes, ClusterSpec) else list(nodes)
    now = kube.clock.now_dt().replace(microsecond=0).isoformat().replace("+00:00", "Z")
    gate = asyncio.Semaphore(concurrency)

    async def one(node: Node) -> Node:
        async with gate:
            created = await kube.create(Node.model_validate(_as_registered(node, now)))
            taints = [t.to_dict() for t in created.spec.taints or ()
                      if t.key != NOT_READY_TAINT]
            if len(taints) != len(created.spec.taints or ()):
                created = await kube.patch(Node, created.name, {
                    "metadata": {"resourceVersion": created.metadata.resource_version},
                    "spec": {"taints": taints or None}})
            return created

    return list(await asyncio.gather(*(one(n) for n in items)))


async def delete_nodes(kube: Any, names: Iterable[str]) -> None:
    from phalanx.cluster.client import NotFound

    for name in names:
        try:
            await kube.delete(Node, name)
        except NotFound:
            pass
