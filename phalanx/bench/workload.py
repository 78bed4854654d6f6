"""Workloads for benchmarks and reliability runs: GPU clusters and gang jobs as PodCliqueSets.

    spec = gpu_cluster(nodes=500)                       # ClusterSpec: 8-GPU nodes in racks
    pcs = job_podcliqueset("job-7", pods=16, gpus_per_pod=8, scheduler="kai-scheduler")

A "job" is one PodCliqueSet with one replica and one clique of `pods` pods: one PodGang that
must be placed all-or-nothing, which is what a trace row (gang size, GPUs per pod) asks for.
"""

from __future__ import annotations

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, PodSpec, ResourceRequirements
from phalanx.api.grove import (
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSetSpec,
    PodCliqueSetTemplateSpec,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
)
from phalanx.api.queue import Queue, unlimited_queue
from phalanx.sim.clusterspec import (
    GPU,
    ClusterSpec,
    ClusterSpecSpec,
    KubeletSettings,
    NodePool,
    default_topology,
)

NAMESPACE = "default"
GPUS_PER_NODE = 8
# What each simulated node offers (an 8-GPU server).
NODE_ALLOCATABLE = {"cpu": "128", "memory": "2Ti", GPU: str(GPUS_PER_NODE), "pods": "110"}
# Every scheduler the embedded stack serves (contracts.md): benches spread jobs over them.
ALL_SCHEDULERS = (
    labels.SCHEDULER_PHALANX,
    labels.SCHEDULER_KAI,
    labels.SCHEDULER_VOLCANO,
    labels.SCHEDULER_KOORDINATOR,
    labels.SCHEDULER_DEFAULT,
)


def gpu_cluster(nodes: int, *, start_delay: str = "0s", name: str = "") -> ClusterSpec:
    """`nodes` 8-GPU nodes: racks of 8, blocks of 32, zones of 1,024 (the bench topology)."""
    if nodes < 1:
        raise ValueError(f"a cluster needs at least one node, got {nodes}")
    pool = NodePool(
        name="gpu", name_prefix="node", count=nodes, allocatable=dict(NODE_ALLOCATABLE),
        nodes_per={"zone": 1024, "block": 32, "rack": 8},
        labels={"node.kubernetes.io/instance-type": "sim-8xh100"},
    )
    return ClusterSpec(
        metadata=ObjectMeta(name=name or f"bench-{nodes}x8gpu"),
        spec=ClusterSpecSpec(topology=default_topology(), node_pools=[pool],
                             kubelet=KubeletSettings(start_delay=start_delay)),
    )


def pod_requests(gpus_per_pod: int) -> dict[str, str]:
    """Requests of one pod: GPUs plus CPU and memory in proportion (a GPU-less pod asks 4 cpu)."""
    if gpus_per_pod < 0:
        raise ValueError(f"GPUs per pod must be >= 0, got {gpus_per_pod}")
    if gpus_per_pod == 0:
        return {"cpu": "4", "memory": "16Gi"}
    return {"cpu": str(12 * gpus_per_pod), "memory": f"{128 * gpus_per_pod}Gi",
            GPU: str(gpus_per_pod)}


def job_podcliqueset(name: str, pods: int, gpus_per_pod: int = 1, *,
                     scheduler: str = labels.SCHEDULER_PHALANX, namespace: str = NAMESPACE,
                     min_available: int | None = None, termination_delay: str | None = None,
                     annotations: dict[str, str] | None = None) -> PodCliqueSet:
    """One gang of `pods` identical workers (one PodCliqueSet replica, one clique)."""
    if pods < 1:
        raise ValueError(f"a job needs at least one pod, got {pods}")
    return PodCliqueSet(
        metadata=ObjectMeta(name=name, namespace=namespace, labels=scheduler_labels(scheduler),
                            annotations=annotations or {}),
        spec=PodCliqueSetSpec(replicas=1, template=PodCliqueSetTemplateSpec(
            termination_delay=termination_delay,
            cliques=[PodCliqueTemplateSpec(name="worker", spec=PodCliqueSpec(
                role_name="worker", replicas=pods, min_available=min_available,
                pod_spec=_pod_spec(scheduler, gpus_per_pod)))],
        )),
    )


def leader_workers_podcliqueset(name: str, *, replicas: int = 1, workers: int = 2,
                                group_replicas: int = 2, group_min: int = 1,
                                scheduler: str = labels.SCHEDULER_PHALANX,
                                namespace: str = NAMESPACE) -> PodCliqueSet:
    """A richer shape: a router clique plus a scaling group of (leader, workers) replicas, so
    one PodCliqueSet replica makes a base PodGang and scaled PodGangs (Grove's multinode
    aggregated serving)."""
    return PodCliqueSet(
        metadata=ObjectMeta(name=name, namespace=namespace, labels=scheduler_labels(scheduler)),
        spec=PodCliqueSetSpec(replicas=replicas, template=PodCliqueSetTemplateSpec(
            cliques=[
                PodCliqueTemplateSpec(name="router", spec=PodCliqueSpec(
                    role_name="router", replicas=1, pod_spec=_pod_spec(scheduler, 0))),
                PodCliqueTemplateSpec(name="leader", spec=PodCliqueSpec(
                    role_name="leader", replicas=1, pod_spec=_pod_spec(scheduler, 1))),
                PodCliqueTemplateSpec(name="worker", spec=PodCliqueSpec(
                    role_name="worker", replicas=workers, pod_spec=_pod_spec(scheduler, 1))),
            ],
            pod_clique_scaling_groups=[PodCliqueScalingGroupConfig(
                name="model", clique_names=["leader", "worker"], replicas=group_replicas,
                min_available=group_min)],
        )),
    )


def scheduler_labels(scheduler: str) -> dict[str, str]:
    """What a PodCliqueSet needs for its scheduler: KAI schedules only pods of a queue."""
    return {labels.LABEL_KAI_QUEUE: "default"} if scheduler == labels.SCHEDULER_KAI else {}


def scheduler_queues(schedulers: list[str]) -> list[Queue]:
    """The queues those labels name, to create first (admission refuses a missing queue)."""
    return [unlimited_queue("default")] if labels.SCHEDULER_KAI in schedulers else []


def _pod_spec(scheduler: str, gpus_per_pod: int) -> PodSpec:
    return PodSpec(scheduler_name=scheduler, containers=[Container(
        name="main", image="nvcr.io/nvidia/pytorch:25.01-py3",
        resources=ResourceRequirements.from_requests(pod_requests(gpus_per_pod)))])
