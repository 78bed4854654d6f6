"""What `phalanx bench kube` runs: the cluster, the workloads, the client limits.

    cfg = KubeBenchConfig(nodes=1000, plain_pods=2000, gang_pods=2000)
    cfg.validate()                       # ValueError naming the offending option
    cfg.limits_for("kube-scheduler")     # (qps, burst) that scheduler's client gets

Client limits (fairness): by default both schedulers get the same client-side limit,
`qps`/`burst` (5,000/5,000, what kube-scheduler's own scheduler_perf benchmarks give it, so
neither is throttled by its client); `own_defaults=True` gives each its shipped default
instead (kube-scheduler 50/100 from KubeSchedulerConfiguration.clientConnection,
`phalanx scheduler` 100/150).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

KUBE_SCHEDULER = "kube-scheduler"
PHALANX_SCHEDULER = "phalanx-scheduler"
SCHEDULERS = (KUBE_SCHEDULER, PHALANX_SCHEDULER)
WORKLOADS = ("plain", "gangs")

# Shipped client defaults: kube-scheduler's KubeSchedulerConfiguration.clientConnection
# (v1 defaults; the bench records what /configz reports), and `phalanx scheduler`'s.
DEFAULT_LIMITS = {KUBE_SCHEDULER: (50.0, 100), PHALANX_SCHEDULER: (100.0, 150)}
EQUAL_QPS, EQUAL_BURST = 5000.0, 5000


@dataclass(slots=True)
class KubeBenchConfig:
    nodes: int = 1000
    plain_pods: int = 2000
    gang_pods: int = 2000  # in gangs of gang_min..gang_max (the last may grow by < gang_min)
    gang_min: int = 8
    gang_max: int = 64
    # Every pod asks for this; every node offers 8 GPUs, 128 cpu, 2Ti (envtest.gpu_cluster_spec).
    pod_cpu: str = "1"
    pod_memory: str = "4Gi"
    pod_gpus: int = 1
    qps: float = EQUAL_QPS
    burst: int = EQUAL_BURST
    own_defaults: bool = False
    schedulers: tuple[str, ...] = SCHEDULERS
    workloads: tuple[str, ...] = WORKLOADS
    seed: int = 0
    # Pairs of runs; odd pairs run the schedulers in the given order, even pairs reversed.
    pairs: int = 1
    phase_timeout: float = 600.0  # seconds for one scheduler to bind one workload
    background_seconds: float = 10.0  # idle window measuring the API server's own requests
    create_concurrency: int = 32
    profile: bool = False  # `phalanx scheduler` under cProfile (a separate, slower run)
    phalanx_args: tuple[str, ...] = ()  # more `phalanx scheduler` flags (e.g. --no-tune-gc)

    def validate(self) -> None:
        def bad(option: str, why: str) -> None:
            raise ValueError(f"--{option.replace('_', '-')}: {why}")

        if self.nodes < 1:
            bad("nodes", f"must be at least 1, got {self.nodes}")
        for name in ("plain_pods", "gang_pods"):
            if getattr(self, name) < 0:
                bad(name, f"must not be negative, got {getattr(self, name)}")
        if self.gang_min < 1 or self.gang_max < self.gang_min:
            bad("gang_min", f"gangs need 1 <= --gang-min <= --gang-max, got "
                f"{self.gang_min}..{self.gang_max}")
        if self.gang_pods and self.gang_pods < self.gang_min:
            bad("gang_pods", f"{self.gang_pods} pods cannot make one gang of at least "
                f"{self.gang_min}")
        if self.pairs < 1:
            bad("pairs", f"must be at least 1, got {self.pairs}")
        if self.qps <= 0 or self.burst < 1:
            bad("qps", f"client limits must be positive, got qps {self.qps}, burst {self.burst}")
        unknown = [s for s in self.schedulers if s not in SCHEDULERS]
        if unknown or not self.schedulers:
            bad("schedulers", f"unknown {unknown or 'none'}; use some of {', '.join(SCHEDULERS)}")
        unknown = [w for w in self.workloads if w not in WORKLOADS]
        if unknown or not self.workloads:
            bad("workloads", f"unknown {unknown or 'none'}; use some of {', '.join(WORKLOADS)}")
        for workload, name in (("plain", "plain_pods"), ("gangs", "gang_pods")):
            if workload in self.workloads and getattr(self, name) == 0:
                bad(name, f"the '{workload}' workload has no pods: give it some, or leave it "
                    f"out with --workloads")
        if self.pod_gpus < 0 or self.pod_gpus > 8:
            bad("pod_gpus", f"nodes have 8 GPUs, got {self.pod_gpus}")
        capacity = self.nodes * (8 // self.pod_gpus if self.pod_gpus else 110)
        biggest = max(self.plain_pods if "plain" in self.workloads else 0,
                      self.gang_pods if "gangs" in self.workloads else 0)
        if biggest > capacity:
            bad("nodes", f"{self.nodes} nodes hold {capacity} pods of {self.pod_gpus} GPU(s); "
                f"a workload of {biggest} pods would not fit")

    def limits_for(self, scheduler: str) -> tuple[float, int]:
        return DEFAULT_LIMITS[scheduler] if self.own_defaults else (self.qps, self.burst)

    def order(self, pair: int) -> tuple[str, ...]:
        """The schedulers of pair `pair` (0-based) in the order they run: alternating, so
        neither always runs first (on a machine whose load drifts)."""
        return self.schedulers if pair % 2 == 0 else tuple(reversed(self.schedulers))

    def pods_of(self, workload: str) -> int:
        return self.plain_pods if workload == "plain" else self.gang_pods

    def gang_sizes(self) -> list[int]:
        """Sizes of the gangs, the same list for every scheduler (seeded)."""
        rng = random.Random(self.seed)
        sizes: list[int] = []
        left = self.gang_pods
        while left > 0:
            size = min(rng.randint(self.gang_min, self.gang_max), left)
            if size < self.gang_min and sizes:
                sizes[-1] += size  # no runt gang at the end: the last one grows instead
            else:
                sizes.append(size)
            left -= size
        return sizes

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["schedulers"] = list(self.schedulers)
        out["workloads"] = list(self.workloads)
        out["phalanx_args"] = list(self.phalanx_args)
        out["client_limits"] = {s: dict(zip(("qps", "burst"), self.limits_for(s), strict=True))
                                for s in self.schedulers}
        return out


def parse_names(text: str, allowed: tuple[str, ...], option: str) -> tuple[str, ...]:
    """`a,b` -> ('a', 'b'), every name one of `allowed` (ValueError naming the option)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise ValueError(f"--{option}: unknown {', '.join(unknown) or repr(text)}; use some of "
                         f"{', '.join(allowed)} (comma-separated)")
    return names


def result_name(cfg: KubeBenchConfig, phalanx_args: str = "") -> str:
    """`kube-<nodes>n[-<plain>p][-<gang>g]-<limits>[-<pairs>pairs][-<flags>][-profile]`: a
    workload that does not run is left out of the name."""
    variant = "-own-defaults" if cfg.own_defaults else f"-qps{cfg.qps:g}"
    if cfg.pairs > 1:
        variant += f"-{cfg.pairs}pairs"
    if phalanx_args:
        variant += "-" + "".join(ch if ch.isalnum() else "-" for ch in phalanx_args).strip("-")
    if cfg.profile:
        variant += "-profile"
    plain = f"-{cfg.plain_pods}p" if "plain" in cfg.workloads else ""
    gangs = f"-{cfg.gang_pods}g" if "gangs" in cfg.workloads else ""
    return f"kube-{cfg.nodes}n{plain}{gangs}{variant}"


__all__ = [
    "DEFAULT_LIMITS",
    "KUBE_SCHEDULER",
    "PHALANX_SCHEDULER",
    "SCHEDULERS",
    "WORKLOADS",
    "KubeBenchConfig",
    "parse_names",
    "result_name",
]
