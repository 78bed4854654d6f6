"""`phalanx bench trace-gen`: a synthetic trace of gang jobs, as CSV.

The shape follows what published GPU-cluster traces report (Microsoft Philly, SenseTime
Helios, Alibaba PAI): most jobs are small, a few span many nodes, and run times are heavy
tailed (log-normal). Arrivals are a Poisson process whose rate makes the offered load
(GPU-seconds asked for per second, over the cluster's GPUs) equal to `load`.

    job_id,submit_time,gang_size,gpus_per_pod,duration
    job-00000,0.000,4,8,1234.5

`gang_size` pods, each asking `gpus_per_pod` GPUs, must run together for `duration` seconds;
`submit_time` is seconds from the start of the trace. Same seed, same trace.
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass
from pathlib import Path

from .trace import TraceJob
from .workload import GPUS_PER_NODE

# (pods, weight): most gangs are small, a few span many nodes.
GANG_SIZES = ((1, 30), (2, 20), (4, 22), (8, 16), (16, 8), (32, 3), (64, 1))
GPUS_PER_POD = ((1, 15), (2, 10), (4, 15), (8, 60))
MEDIAN_DURATION = 20 * 60.0  # seconds
DURATION_SIGMA = 1.2  # log-normal shape: p99 ~ 16x the median
MIN_DURATION, MAX_DURATION = 60.0, 24 * 3600.0


@dataclass(slots=True)
class TraceGenConfig:
    jobs: int = 200
    nodes: int = 64  # the cluster the trace is sized for (8 GPUs per node)
    load: float = 0.9  # offered load: demanded GPU-seconds / available GPU-seconds
    seed: int = 0

    def check(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {self.jobs}")
        if self.nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {self.nodes}")
        if not 0 < self.load <= 10:
            raise ValueError(f"load must be within (0, 10], got {self.load}")


def _pick(rng: random.Random, table: tuple[tuple[int, int], ...]) -> int:
    values, weights = zip(*table, strict=True)
    return rng.choices(values, weights)[0]


def generate(cfg: TraceGenConfig) -> list[TraceJob]:
    """`cfg.jobs` jobs, each fitting the cluster on its own, sorted by submit time."""
    cfg.check()
    rng = random.Random(cfg.seed)
    capacity = cfg.nodes * GPUS_PER_NODE
    shapes: list[tuple[int, int, float]] = []
    for _ in range(cfg.jobs):
        gpus = _pick(rng, GPUS_PER_POD)
        size = _pick(rng, GANG_SIZES)
        # A gang must fit the cluster: shrink it rather than emit an impossible job.
        while size > 1 and size * gpus > capacity:
            size //= 2
        gpus = min(gpus, capacity)
        duration = rng.lognormvariate(math.log(MEDIAN_DURATION), DURATION_SIGMA)
        shapes.append((size, gpus, min(max(duration, MIN_DURATION), MAX_DURATION)))
    demand = sum(s * g * d for s, g, d in shapes) / len(shapes)  # GPU-seconds per job
    rate = cfg.load * capacity / demand  # jobs per second for the asked load
    jobs, t = [], 0.0
    for i, (size, gpus, duration) in enumerate(shapes):
        jobs.append(TraceJob(f"job-{i:05d}", round(t, 3), size, gpus, round(duration, 1)))
        t += rng.expovariate(rate)
    return jobs


def to_csv(jobs: list[TraceJob]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["job_id", "submit_time", "gang_size", "gpus_per_pod", "duration"])
    for j in jobs:
        writer.writerow([j.job_id, f"{j.submit_time:.3f}", j.gang_size, j.gpus_per_pod,
                         f"{j.duration:.1f}"])
    return out.getvalue()


def write_trace(jobs: list[TraceJob], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(to_csv(jobs))
    tmp.replace(path)
