"""`phalanx bench trace-gen`: a synthetic trace of gang jobs, as CSV.

The shape follows what published GPU-cluster traces report (Microsoft Philly, SenseTime
Helios, Alibaba PAI): most jobs are small, a few span many nodes, and run times are heavy
tailed (log-normal). Arrivals are a Poisson process whose rate makes the offered load
(GPU-seconds asked for per second, over the cluster's GPUs) equal to `load`.

    job_id,submit_time,gang_size,gpus_per_pod,duration
    job-00000,0.000,4,8,1234.5

`gang_size` pods, each asking `gpus_per_pod` GPUs, must run together for `duration` seconds;
`submit_time` is seconds from the start of the trace. Same seed, same trace.

Multi-tenant (`queues` >= 1): the jobs are split among KAI queues `team-a`, `team-b`, ...
whose deserved GPU quotas divide the cluster unevenly (weights 3:2:1:... , over-quota weight
1 each, no limit), and each queue arrives in bursts: it alternates between busy periods,
when its jobs arrive `1 / BUSY_FRACTION` times faster than its share of the load, and idle
ones (exponential lengths, mean `BURST_PERIOD`), so queues go over their quota while others
are quiet and must get room back when those return. `queue_documents` gives the Queues.
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .trace import TraceJob
from .workload import GPUS_PER_NODE

# (pods, weight): most gangs are small, a few span many nodes.
GANG_SIZES = ((1, 30), (2, 20), (4, 22), (8, 16), (16, 8), (32, 3), (64, 1))
GPUS_PER_POD = ((1, 15), (2, 10), (4, 15), (8, 60))
MEDIAN_DURATION = 20 * 60.0  # seconds
DURATION_SIGMA = 1.2  # log-normal shape: p99 ~ 16x the median
MIN_DURATION, MAX_DURATION = 60.0, 24 * 3600.0
BURST_PERIOD = 2 * 3600.0  # mean length of a queue's busy (and of its idle) period
BUSY_FRACTION = 0.5  # share of the time a queue is busy
QUEUE_NAMES = tuple(f"team-{c}" for c in "abcdefghijklmnopqrstuvwxyz")


@dataclass(slots=True)
class TraceGenConfig:
    jobs: int = 200
    nodes: int = 64  # the cluster the trace is sized for (8 GPUs per node)
    load: float = 0.9  # offered load: demanded GPU-seconds / available GPU-seconds
    seed: int = 0
    queues: int = 0  # 0: one tenant, no queue column
    max_gang_gpus: int | None = None  # the most GPUs one gang asks for (None: the cluster)

    def check(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {self.jobs}")
        if self.nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {self.nodes}")
        if not 0 < self.load <= 10:
            raise ValueError(f"load must be within (0, 10], got {self.load}")
        if not 0 <= self.queues <= len(QUEUE_NAMES):
            raise ValueError(f"queues must be within [0, {len(QUEUE_NAMES)}], got {self.queues}")
        if self.max_gang_gpus is not None and self.max_gang_gpus < 1:
            raise ValueError(f"max_gang_gpus must be at least 1, got {self.max_gang_gpus}")


def _pick(rng: random.Random, table: tuple[tuple[int, int], ...]) -> int:
    values, weights = zip(*table, strict=True)
    return rng.choices(values, weights)[0]


def generate(cfg: TraceGenConfig) -> list[TraceJob]:
    """`cfg.jobs` jobs, each fitting the cluster (and `max_gang_gpus`) on its own, sorted by
    submit time."""
    cfg.check()
    rng = random.Random(cfg.seed)
    capacity = cfg.nodes * GPUS_PER_NODE
    largest = min(capacity, cfg.max_gang_gpus or capacity)
    shapes = [_shape(rng, largest) for _ in range(cfg.jobs)]
    demand = sum(s * g * d for s, g, d in shapes) / len(shapes)  # GPU-seconds per job
    rate = cfg.load * capacity / demand  # jobs per second for the asked load
    if cfg.queues:
        return _multi_tenant(rng, cfg, shapes, rate)
    jobs, t = [], 0.0
    for i, (size, gpus, duration) in enumerate(shapes):
        jobs.append(TraceJob(f"job-{i:05d}", round(t, 3), size, gpus, round(duration, 1)))
        t += rng.expovariate(rate)
    return jobs


def _shape(rng: random.Random, largest: int) -> tuple[int, int, float]:
    gpus = _pick(rng, GPUS_PER_POD)
    size = _pick(rng, GANG_SIZES)
    # A gang must fit the cluster (or the size cap): shrink it rather than emit an
    # impossible job.
    while size > 1 and size * gpus > largest:
        size //= 2
    gpus = min(gpus, largest)
    duration = rng.lognormvariate(math.log(MEDIAN_DURATION), DURATION_SIGMA)
    return size, gpus, min(max(duration, MIN_DURATION), MAX_DURATION)


def queue_weights(n: int) -> list[float]:
    """Each queue's share of the quota (and of the jobs): n, n-1, ..., 1, normalised."""
    total = n * (n + 1) / 2
    return [(n - i) / total for i in range(n)]


def _multi_tenant(rng: random.Random, cfg: TraceGenConfig,
                  shapes: list[tuple[int, int, float]], rate: float) -> list[TraceJob]:
    """Jobs dealt to the queues by weight; each queue's arrivals fall in its busy periods."""
    weights = queue_weights(cfg.queues)
    owner = rng.choices(range(cfg.queues), weights, k=len(shapes))
    jobs: list[TraceJob] = []
    for q, weight in enumerate(weights):
        mine = [i for i, o in enumerate(owner) if o == q]
        busy_rate = rate * weight / BUSY_FRACTION
        t = 0.0
        busy_until = rng.expovariate(1 / BURST_PERIOD) if rng.random() < BUSY_FRACTION else 0.0
        for i in mine:
            gap = rng.expovariate(busy_rate)
            while t + gap > busy_until:  # the burst ends first: skip an idle period
                gap -= max(busy_until - t, 0.0)
                t = busy_until + rng.expovariate(1 / BURST_PERIOD)
                busy_until = t + rng.expovariate(1 / BURST_PERIOD)
            t += gap
            size, gpus, duration = shapes[i]
            jobs.append(TraceJob(f"job-{i:05d}", round(t, 3), size, gpus, round(duration, 1),
                                 queue=QUEUE_NAMES[q]))
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return jobs


def queue_documents(cfg: TraceGenConfig) -> list[dict[str, Any]]:
    """The KAI Queues of a multi-tenant trace: deserved GPU quotas in the queues' weights
    (whole GPUs, at least 1), over-quota weight 1, no limit; cpu and memory unlimited."""
    from phalanx.api.queue import queue_dict

    unlimited = -1  # KAI's "unlimited", as users write it
    capacity = cfg.nodes * GPUS_PER_NODE
    free = {"quota": unlimited, "limit": unlimited, "overQuotaWeight": 1}
    return [queue_dict(QUEUE_NAMES[q], gpu={"quota": max(1, int(capacity * w)),
                                            "limit": unlimited, "overQuotaWeight": 1},
                       cpu=free, memory=free)
            for q, w in enumerate(queue_weights(cfg.queues))]


def write_queues(documents: list[dict[str, Any]], path: Path) -> None:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    tmp.replace(path)


def to_csv(jobs: list[TraceJob]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    queued = any(j.queue for j in jobs)
    writer.writerow(["job_id", "submit_time", "gang_size", "gpus_per_pod", "duration"]
                    + (["queue"] if queued else []))
    for j in jobs:
        writer.writerow([j.job_id, f"{j.submit_time:.3f}", j.gang_size, j.gpus_per_pod,
                         f"{j.duration:.1f}"] + ([j.queue] if queued else []))
    return out.getvalue()


def write_trace(jobs: list[TraceJob], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(to_csv(jobs))
    tmp.replace(path)
