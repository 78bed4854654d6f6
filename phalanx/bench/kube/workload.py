"""The pods each scheduler gets, the same shape for both, through each one's own gang API.

- plain pods: `plain-NNNNN`, one container asking `pod_cpu`, `pod_memory`, `pod_gpus` GPUs;
- a gang of n pods, for kube-scheduler 1.36 (GangScheduling, KEP-4671): a
  scheduling.k8s.io/v1alpha2 `Workload` with one podGroupTemplate (`gang.minCount: n`), one
  `PodGroup` instantiating it, and n pods with `spec.schedulingGroup.podGroupName`, built by
  `phalanx.api.workloads.kube_gang` (what the default-scheduler backend writes);
- the same gang for `phalanx scheduler`: a scheduler.grove.io `PodGang` with one podgroup
  (`minReplicas: n`, the pod references filled in) and n pods labelled `grove.io/podgang`
  and `grove.io/podclique`, as the operator leaves them once the PodGang is Initialized.

Pods differ only in `schedulerName` and in how they name their gang. Gang objects are
created before their pods (each scheduler's documented order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.api import labels
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.core import Container, Pod, PodSpec, ResourceRequirements
from phalanx.api.podgang import NamespacedName, PodGang, PodGangGroup, PodGangSpec
from phalanx.api.workloads import V1ALPHA2
from phalanx.api.workloads import kube_gang as workload_api_gang
from phalanx.sim.clusterspec import GPU

from .config import KUBE_SCHEDULER, KubeBenchConfig

SCHEDULER_NAMES = {KUBE_SCHEDULER: labels.SCHEDULER_DEFAULT,
                   "phalanx-scheduler": labels.SCHEDULER_PHALANX}
TEMPLATE = "workers"  # the one podgroup (PodClique) of every PodGang
BENCH_LABEL = "bench.phalanx.dev/run"


@dataclass(slots=True)
class GangObjects:
    """One gang: the scheduler's gang objects (created first, in order), then its pods."""

    name: str
    objects: list[Resource] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)


def pod(cfg: KubeBenchConfig, scheduler: str, namespace: str, name: str, run: str,
        extra_labels: dict[str, str] | None = None) -> Pod:
    requests = {"cpu": cfg.pod_cpu, "memory": cfg.pod_memory}
    if cfg.pod_gpus:
        requests[GPU] = str(cfg.pod_gpus)
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace,
                            labels={BENCH_LABEL: run, **(extra_labels or {})}),
        spec=PodSpec(scheduler_name=SCHEDULER_NAMES[scheduler], containers=[Container(
            name="main", image="registry.k8s.io/pause:3.10",
            resources=ResourceRequirements(requests=requests, limits=dict(requests)))]))


def plain_pods(cfg: KubeBenchConfig, scheduler: str, namespace: str, run: str) -> list[Pod]:
    return [pod(cfg, scheduler, namespace, f"plain-{i:05}", run) for i in range(cfg.plain_pods)]


def kube_gang(cfg: KubeBenchConfig, namespace: str, name: str, size: int,
              run: str) -> GangObjects:
    """Workload + PodGroup + pods (scheduling.k8s.io/v1alpha2, Kubernetes 1.36), from the
    default-scheduler backend's own builder (phalanx.api.workloads.kube_gang)."""
    spec = pod(cfg, KUBE_SCHEDULER, namespace, name, run).spec
    built = workload_api_gang(name, namespace, size, spec, version=V1ALPHA2,
                              labels={BENCH_LABEL: run})
    return GangObjects(name, [o for o in built if not isinstance(o, Pod)],
                       [o for o in built if isinstance(o, Pod)])


def phalanx_gang(cfg: KubeBenchConfig, namespace: str, name: str, size: int,
                 run: str) -> GangObjects:
    """PodGang + pods, as phalanx-scheduler reads them (gang/sources/podgang.py)."""
    clique = f"{name}-{TEMPLATE}"
    member_labels = {labels.LABEL_PODGANG: name, labels.LABEL_PODCLIQUE: clique}
    pods = [pod(cfg, "phalanx-scheduler", namespace, f"{name}-{j}", run, member_labels)
            for j in range(size)]
    gang = PodGang(
        metadata=ObjectMeta(name=name, namespace=namespace,
                            labels={BENCH_LABEL: run,
                                    labels.LABEL_SCHEDULER_NAME: labels.SCHEDULER_PHALANX}),
        spec=PodGangSpec(pod_groups=[PodGangGroup(
            name=clique, min_replicas=size,
            pod_references=[NamespacedName(namespace=namespace, name=p.name) for p in pods])]))
    return GangObjects(name, [gang], pods)


def gangs(cfg: KubeBenchConfig, scheduler: str, namespace: str, run: str) -> list[GangObjects]:
    build = kube_gang if scheduler == KUBE_SCHEDULER else phalanx_gang
    return [build(cfg, namespace, f"gang-{i:04}", size, run)
            for i, size in enumerate(cfg.gang_sizes())]
