"""`phalanx bench scheduler`: throughput and per-gang latency of the scheduler.

A MemoryCluster gets `nodes` GPU nodes (8 GPUs, 96 cpu, 1Ti; zone/block/rack labels) and
`pods` pods in PodGangs of `gang_min`..`gang_max` members (70% of gangs ask 1 GPU + 8 cpu
per pod, 30% are CPU-only with 4 cpu), all created before the scheduler starts. With
`spread_fraction`, that share of the gangs spread their members over zones (maxSkew 1,
DoNotSchedule), half of them also over hosts (ScheduleAnyway). The full
Scheduler (default profile, gang plugins included when registered, events on) then runs
until every pod is bound or nothing more can be done.

Measured in wall-clock seconds (time.perf_counter: this module measures real cost; the
cluster itself runs on virtual time):
- pods/s: bound pods / (start of the first cycle .. last bind); also the process CPU time
  per pod over that window, which stays meaningful when other work shares the machine,
  and the window's split into time on a CPU, waiting for one and blocked (bench_wall.py);
- per gang, time-to-schedule: first cycle of any member .. its last member bound;
  and end-to-end: scheduler start .. last member bound (includes waiting in the queue).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements
from phalanx.api.podgang import NamespacedName, PodGang, PodGangGroup, PodGangSpec
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler.bench_wall import thread_schedstat, wall_split
from phalanx.scheduler.framework.config import PluginRef, SchedulerConfiguration, SchedulerProfile
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.scheduler import Scheduler

NAMESPACE = "bench"
SCHEDULER_NAME = "phalanx-scheduler"
RECORDER = "BenchRecorder"


@dataclass(slots=True)
class BenchConfig:
    nodes: int = 5000
    pods: int = 50_000
    gang_min: int = 8
    gang_max: int = 64
    seed: int = 0
    events: bool = True
    percentage_of_nodes_to_score: int = 0  # 0: adaptive, like kube-scheduler
    profile: bool = False  # run under pyinstrument and keep the text report
    # gc.freeze() once the informers have synced, as a long-running service may do after
    # warm-up: full collections then skip the (large, long-lived) loaded objects.
    gc_freeze: bool = False
    # These collection thresholds from the scheduler's start, as `phalanx scheduler` sets
    # them before its informers sync (phalanx/services/gctune.py SERVICE_THRESHOLDS,
    # collect_rarely); None keeps CPython's (700, 10, 10).
    gc_thresholds: tuple[int, int, int] | None = None
    # GPUs as DRA devices (a ResourceSlice of 8 per node) and one ResourceClaim per GPU pod,
    # instead of nvidia.com/gpu (phalanx/bench/dra.py).
    dra: bool = False
    # Fraction of the gangs (so, about of the pods) whose members carry topologySpreadConstraints:
    # maxSkew 1 over zones, DoNotSchedule; every other such gang also ScheduleAnyway over
    # hostnames, as serving replicas use. Chosen with its own random stream, so the gangs
    # (sizes, requests) are the same as without spread.
    spread_fraction: float = 0.0
    nodes_per_zone: int = 1000  # topology.kubernetes.io/zone: 5 zones at 5,000 nodes


@dataclass(slots=True)
class _Recorder:
    first_attempt: dict[str, float] = field(default_factory=dict)  # gang -> wall time
    bound: dict[str, list[float]] = field(default_factory=dict)  # gang -> bind wall times
    nodes: dict[str, list[str]] = field(default_factory=dict)  # gang -> nodes bound to
    cpu_first: float | None = None  # process CPU time at the first cycle
    cpu_last: float = 0.0  # ... and at the last bind
    # This thread's (on-CPU, run-queue wait) seconds from the kernel at the first cycle and
    # once the scheduler is idle (reading /proc at every bind cost 4% of the CPU): where wall
    # time went that the process did not spend on a CPU.
    sched_first: tuple[float, float] | None = None
    sched_last: tuple[float, float] | None = None


_ACTIVE: _Recorder | None = None


@register_plugin
class BenchRecorder(Plugin):
    """Bench-only: timestamps each gang's first cycle (PreFilter) and each bind (PostBind)."""

    NAME = RECORDER

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Any) -> tuple[None, Status]:
        if _ACTIVE is not None:
            gang = pod.labels.get(labels.LABEL_PODGANG, pod.key)
            _ACTIVE.first_attempt.setdefault(gang, time.perf_counter())
            if _ACTIVE.cpu_first is None:
                _ACTIVE.cpu_first = time.process_time()
                _ACTIVE.sched_first = thread_schedstat()
        return None, Status()

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        if _ACTIVE is not None:
            gang = pod.labels.get(labels.LABEL_PODGANG, pod.key)
            _ACTIVE.bound.setdefault(gang, []).append(time.perf_counter())
            _ACTIVE.nodes.setdefault(gang, []).append(node)
            _ACTIVE.cpu_last = time.process_time()


def make_nodes(n: int, nodes_per_zone: int = 1000) -> list[Node]:
    if nodes_per_zone < 1:
        raise ValueError(f"nodes_per_zone must be >= 1, got {nodes_per_zone}")
    alloc = {"cpu": "96", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "8"}
    out = []
    for i in range(n):
        lbl = {
            "topology.kubernetes.io/zone": f"zone-{i // nodes_per_zone}",
            "topology.kubernetes.io/block": f"block-{i // 128}",
            "topology.kubernetes.io/rack": f"rack-{i // 16}",
            "kubernetes.io/hostname": f"node-{i:05}",
        }
        out.append(Node(metadata=ObjectMeta(name=f"node-{i:05}", labels=lbl), spec=NodeSpec(),
                        status=NodeStatus(allocatable=dict(alloc), capacity=dict(alloc))))
    return out


ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"


def spread_constraints(gang: str, with_hostname: bool) -> list[dict[str, Any]]:
    """A gang's members spread evenly over zones (hard) and, optionally, hosts (soft)."""
    selector = {"matchLabels": {labels.LABEL_PODGANG: gang}}
    out: list[dict[str, Any]] = [{"maxSkew": 1, "topologyKey": ZONE_KEY,
                                  "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]
    if with_hostname:
        out.append({"maxSkew": 1, "topologyKey": HOSTNAME_KEY,
                    "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector})
    return out


def make_gangs(pods: int, gang_min: int, gang_max: int, seed: int,
               spread_fraction: float = 0.0) -> list[tuple[PodGang, list[Pod]]]:
    if not 0.0 <= spread_fraction <= 1.0:
        raise ValueError(f"spread_fraction must be within 0..1, got {spread_fraction}")
    rng = random.Random(seed)
    spread_rng = random.Random(f"spread-{seed}")
    spread_gangs = 0
    out: list[tuple[PodGang, list[Pod]]] = []
    made = 0
    g = 0
    while made < pods:
        size = min(rng.randint(gang_min, gang_max), pods - made)
        gpu = rng.random() < 0.7
        req = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"} if gpu else {"cpu": "4", "memory": "16Gi"}
        name = f"gang-{g:05}"
        clique = f"{name}-workers"
        spread = None
        if spread_rng.random() < spread_fraction:
            spread = spread_constraints(name, with_hostname=spread_gangs % 2 == 1)
            spread_gangs += 1
        members = []
        for j in range(size):
            members.append(Pod(
                metadata=ObjectMeta(name=f"{name}-{j}", namespace=NAMESPACE,
                                    labels={labels.LABEL_PODGANG: name, labels.LABEL_PODCLIQUE: clique}),
                spec=PodSpec(scheduler_name=SCHEDULER_NAME, containers=[
                    Container(name="main", image="trainer", resources=ResourceRequirements.from_requests(req))],
                    topology_spread_constraints=[dict(c) for c in spread] if spread else None),
            ))
        gang = PodGang(
            metadata=ObjectMeta(name=name, namespace=NAMESPACE, labels={labels.LABEL_SCHEDULER_NAME: SCHEDULER_NAME}),
            spec=PodGangSpec(pod_groups=[PodGangGroup(
                name=clique, min_replicas=size,
                pod_references=[NamespacedName(namespace=NAMESPACE, name=p.name) for p in members])]),
        )
        out.append((gang, members))
        made += size
        g += 1
    return out


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    a = np.asarray(values)
    return {k: round(float(np.percentile(a, q)), 4) for k, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))}


def run_scheduler_bench(cfg: BenchConfig) -> dict[str, Any]:
    """One run; returns the JSON-ready result."""
    global _ACTIVE
    load_before = _loadavg()
    gangs = make_gangs(cfg.pods, cfg.gang_min, cfg.gang_max, cfg.seed, cfg.spread_fraction)
    nodes = make_nodes(cfg.nodes, cfg.nodes_per_zone)
    extra: list[Any] = []
    if cfg.dra:
        from phalanx.bench.dra import with_dra

        extra = with_dra(nodes, gangs)
    rec = _Recorder()
    profile_text = ""
    gc_time = [0.0, 0.0, 0, 0.0]  # total seconds, longest pause, collections, CPU seconds
    gc_start = [0.0, 0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
            gc_start[1] = time.thread_time()
        else:
            d = time.perf_counter() - gc_start[0]
            gc_time[0] += d
            gc_time[1] = max(gc_time[1], d)
            gc_time[2] += 1
            gc_time[3] += time.thread_time() - gc_start[1]

    gc.callbacks.append(on_gc)
    thresholds_before = gc.get_threshold()

    async def main() -> dict[str, Any]:
        global _ACTIVE
        client = MemoryCluster()
        t = time.perf_counter()
        for n in nodes:
            await client.create(n)
        for obj in extra:
            await client.create(obj, returning=False)
        for gang, members in gangs:
            await client.create(gang)
            for p in members:
                await client.create(p)
        create_s = time.perf_counter() - t
        prof = SchedulerProfile(scheduler_name=SCHEDULER_NAME)
        prof.plugins.multi_point.enabled.append(PluginRef(name=RECORDER))
        conf = SchedulerConfiguration(profiles=[prof], percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score,
                                      seed=cfg.seed)
        sched = Scheduler(client, conf, record_events=cfg.events)
        # Time the scheduling cycles themselves (PreFilter..Permit), apart from binding,
        # informers, events and the cluster: the part that scales with node count.
        cycle_cpu = [0.0]
        inner = sched.schedule_one

        def timed_schedule_one(qpi: Any) -> None:
            c = time.process_time()
            try:
                inner(qpi)
            finally:
                cycle_cpu[0] += time.process_time() - c

        sched.schedule_one = timed_schedule_one  # type: ignore[method-assign]
        gc.collect()
        if cfg.gc_thresholds is not None:
            gc.set_threshold(*cfg.gc_thresholds)
        _ACTIVE = rec
        t0 = time.perf_counter()
        gc_at_start = gc_time[0]
        await sched.start()
        if cfg.gc_freeze:
            # As the service's freeze_after_warmup: the young generation, then freeze.
            gc.collect(0)
            gc.freeze()
        t_synced = time.perf_counter()
        gc_at_sync = gc_time[0]
        gc_cpu_at_sync = gc_time[3]
        await sched.wait_idle(timeout=24 * 3600, poll=1.0)
        t_end = time.perf_counter()
        rec.sched_last = thread_schedstat()
        stats = {
            "create_seconds": round(create_s, 3),
            "sync_seconds": round(t_synced - t0, 3),
            "gc_seconds_sync": round(gc_at_sync - gc_at_start, 3),
            "gc_seconds_scheduling": round(gc_time[0] - gc_at_sync, 3),
            # The same on this thread's CPU clock: the collector's own cost, without the
            # run-queue waits that fall inside a pause on a busy machine.
            "gc_cpu_seconds_scheduling": round(gc_time[3] - gc_cpu_at_sync, 3),
            "cycle_cpu_us_per_attempt": round(cycle_cpu[0] / max(sched.attempts, 1) * 1e6, 1),
            "attempts": sched.attempts,
            "failures": sched.failures,
            "bind_failures": sched.bind_failures,
            "scheduled": sched.scheduled,
            "queue": sched.queue.counts(),
            "filter_cache": {name: {"hits": fw.filter_cache.hits, "misses": fw.filter_cache.misses}
                             for name, fw in sched.frameworks.items()},
            "events_written": sched.events.written,
            "plugins": sched.frameworks[SCHEDULER_NAME].extension_points(),
            "t0": t0,
            "t_end": t_end,
        }
        await sched.stop()
        return stats

    try:
        if cfg.profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
            profiler.start()
            stats = run_virtual(main)
            profiler.stop()
            profile_text = profiler.output_text(unicode=False, color=False, show_all=False)
        else:
            stats = run_virtual(main)
    finally:
        _ACTIVE = None
        gc.callbacks.remove(on_gc)
        if cfg.gc_freeze:
            gc.unfreeze()
        gc.set_threshold(*thresholds_before)

    t0 = stats.pop("t0")
    t_end = stats.pop("t_end")
    sizes = {g.name: len(m) for g, m in gangs}
    complete = {g: ts for g, ts in rec.bound.items() if len(ts) >= sizes.get(g, 0)}
    first = min(rec.first_attempt.values(), default=t0)
    last = max((max(ts) for ts in rec.bound.values()), default=t_end)
    bound = sum(len(ts) for ts in rec.bound.values())
    window = max(last - first, 1e-9)
    tts = [max(ts) - rec.first_attempt[g] for g, ts in complete.items() if g in rec.first_attempt]
    e2e = [max(ts) - t0 for ts in complete.values()]
    result: dict[str, Any] = {
        "benchmark": "scheduler",
        "config": asdict(cfg),
        "gangs": len(gangs),
        "gangs_scheduled": len(complete),
        "pods_with_spread": sum(len(m) for _, m in gangs if m[0].spec.topology_spread_constraints),
        # Largest zone skew (most minus fewest members per zone) over the gangs with spread:
        # a bound gang with maxSkew 1 over zones must show at most 1.
        "spread_max_zone_skew": _max_zone_skew(gangs, nodes, rec.nodes),
        "pods_bound": bound,
        "schedule_seconds": round(window, 3),
        "pods_per_second": round(bound / window, 1),
        "us_per_pod": round(window / max(bound, 1) * 1e6, 1),
        # CPU time of this process over the same window: robust when other work shares the
        # machine (wall-clock pods/s drops under contention, CPU per pod does not).
        "cpu_us_per_pod": round((rec.cpu_last - (rec.cpu_first or rec.cpu_last)) / max(bound, 1) * 1e6, 1),
        **wall_split(rec.sched_first, rec.sched_last, t_end - first, window, bound),
        "gang_time_to_schedule_seconds": _percentiles(tts),
        "gang_end_to_end_seconds": _percentiles(e2e),
        # Python's cyclic GC over the whole run (load, sync, scheduling): total and longest pause
        # (gc_seconds_sync / gc_seconds_scheduling: the part inside those phases).
        "gc_seconds": round(gc_time[0], 3),
        "gc_longest_pause_seconds": round(gc_time[1], 3),
        "gc_collections": gc_time[2],
        **stats,
        # Other processes competing for the CPUs during the run (1-minute load averages):
        # wall-clock numbers are only comparable between runs with similar load.
        "cpus": os.cpu_count(),
        "loadavg_before_after": [load_before, _loadavg()],
        # Peak resident memory of the whole process so far (objects, caches, snapshot),
        # added by the reliability/bench engineer; Linux reports KiB.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    if profile_text:
        result["profile"] = profile_text
    return result


def _max_zone_skew(gangs: list[tuple[PodGang, list[Pod]]], nodes: list[Node],
                   placed: dict[str, list[str]]) -> int:
    zone_of = {n.name: n.metadata.labels[ZONE_KEY] for n in nodes}
    zones = sorted(set(zone_of.values()))
    worst = 0
    for gang, members in gangs:
        if not members[0].spec.topology_spread_constraints or gang.name not in placed:
            continue
        counts = {z: 0 for z in zones}
        for node in placed[gang.name]:
            counts[zone_of[node]] += 1
        worst = max(worst, max(counts.values()) - min(counts.values()))
    return worst


def run_scaling(node_counts: list[int], pods: int, gang_min: int, gang_max: int, seed: int = 0,
                events: bool = True, gc_freeze: bool = False,
                gc_thresholds: tuple[int, int, int] | None = None) -> dict[str, Any]:
    """The same workload (`pods` pods) on growing clusters: how per-pod cost scales."""
    rows = []
    for n in node_counts:
        r = run_scheduler_bench(BenchConfig(nodes=n, pods=pods, gang_min=gang_min, gang_max=gang_max, seed=seed,
                                            events=events, gc_freeze=gc_freeze, gc_thresholds=gc_thresholds))
        rows.append({k: r[k] for k in ("pods_bound", "pods_per_second", "us_per_pod", "cpu_us_per_pod", "gang_time_to_schedule_seconds",
                                       "schedule_seconds", "cycle_cpu_us_per_attempt", "gc_seconds_scheduling",
                                       "loadavg_before_after")} | {"nodes": n})
    return {"benchmark": "scheduler-scaling", "pods": pods, "gang_min": gang_min, "gang_max": gang_max,
            "gc_freeze": gc_freeze, "gc_thresholds": gc_thresholds, "rows": rows}


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def write_result(result: dict[str, Any], out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")
    return path
