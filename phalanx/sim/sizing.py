"""How big a run is, before it starts: objects, pods, GPUs asked for, and what it will cost.

`phalanx run` checks the size up front, says what a large run will cost, and refuses an
absurd one (over `--max-pods`) with the numbers, before reading or simulating for minutes.
The costs are rough, measured with `phalanx run` itself (operator, scheduler, kubelet,
recorder, the saved run) on 2 cores: about 3 ms per pod (4,000 one-GPU pods in gangs of 8:
12.5 s with the object history; 16,000: 41.9 s without it, above 10,000 pods) and 120 KB
(691 MB and 1.3 GB: the history costs memory, the larger run keeps none), and reading YAML at
about 1.5 MB/s (122,000 small PodCliqueSets, 48 MB: about 35 s of CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phalanx.api import registry
from phalanx.api.errors import ManifestError
from phalanx.api.grove import PodCliqueSet

from .workload import Workload

SECONDS_PER_POD = 0.003
BYTES_PER_POD = 120_000
YAML_BYTES_PER_SECOND = 1.5e6
GPU = "nvidia.com/gpu"
DEFAULT_MAX_PODS = 50_000


@dataclass(slots=True)
class FileSize:
    bytes: int = 0
    documents: int = 0

    @property
    def read_seconds(self) -> float:
        return self.bytes / YAML_BYTES_PER_SECOND


def scan_files(paths: list[Path]) -> FileSize:
    """Bytes and YAML documents of the files (a byte scan: no parsing)."""
    out = FileSize()
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue  # the loader reports it, naming the file
        out.bytes += len(data)
        out.documents += 1 + data.count(b"\n---")
    return out


@dataclass(slots=True)
class WorkSize:
    podcliquesets: int = 0
    pcs_replicas: int = 0
    pods: int = 0
    objects: int = 0  # PodCliqueSets, PodCliques, scaling groups, PodGangs and pods
    gpus: float = 0.0  # GPUs the pods ask for
    cluster_gpus: int = 0
    nodes: int = 0

    @property
    def seconds(self) -> float:
        return self.pods * SECONDS_PER_POD

    @property
    def memory(self) -> float:
        return self.pods * BYTES_PER_POD

    def describe(self) -> str:
        text = (f"{self.podcliquesets:,} PodCliqueSet(s) with {self.pcs_replicas:,} replicas "
                f"make {self.pods:,} pods ({self.objects:,} objects)")
        if self.gpus:
            text += f" asking for {self.gpus:,.0f} GPUs; the cluster has {self.cluster_gpus:,}"
        return text

    def cost(self) -> str:
        return (f"simulating them takes about {fmt_seconds(self.seconds)} and "
                f"{fmt_bytes(self.memory)} of memory")


def estimate(workload: Workload, nodes: int, cluster_gpus: int) -> WorkSize:
    """The pods the workload's PodCliqueSets make (with those its Scenario applies later)."""
    size = WorkSize(nodes=nodes, cluster_gpus=cluster_gpus)
    for pcs in [*workload.podcliquesets(), *_applied(workload)]:
        size.podcliquesets += 1
        size.pcs_replicas += pcs.spec.replicas
        pods, gpus, cliques, groups = _per_replica(pcs)
        size.pods += pcs.spec.replicas * pods
        size.gpus += pcs.spec.replicas * gpus
        # PodCliques, scaling groups and (at least) one PodGang per replica.
        size.objects += 1 + pcs.spec.replicas * (pods + cliques + groups + 1)
    return size


def _applied(workload: Workload) -> list[PodCliqueSet]:
    out = []
    for step in workload.steps:
        for data in step.apply or ():
            if data.get("kind") == PodCliqueSet.KIND:
                try:
                    obj = registry.from_dict(data)
                except ManifestError:
                    continue  # checked when the workload was loaded
                if isinstance(obj, PodCliqueSet):
                    out.append(obj)
    return out


def _per_replica(pcs: PodCliqueSet) -> tuple[int, float, int, int]:
    """(pods, GPUs, PodCliques, scaling groups) of one PodCliqueSet replica."""
    template = pcs.spec.template
    group_of = {}
    for g in template.pod_clique_scaling_groups or ():
        for name in g.clique_names:
            group_of[name] = 1 if g.replicas is None else g.replicas
    pods = cliques = 0
    gpus = 0.0
    for c in template.cliques:
        copies = group_of.get(c.name, 1)
        pods += copies * c.spec.replicas
        cliques += copies
        gpus += copies * c.spec.replicas * c.spec.pod_spec.total_requests.get(GPU, 0.0)
    return pods, gpus, cliques, len(template.pod_clique_scaling_groups or ())


def fmt_seconds(s: float) -> str:
    if s < 60:
        return f"{max(s, 1):.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min" if s < 600 else f"{s / 60:.0f} min"
    if s < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def fmt_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1e3:.0f} KB"
