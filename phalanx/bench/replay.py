"""`phalanx bench trace`: replay job arrivals on the virtual clock, through the whole stack.

Each job becomes a PodCliqueSet (one gang of `gang_size` pods asking `gpus_per_pod` GPUs)
created at its submit time. When all its pods are Running the job runs for `duration`, then
its PodCliqueSet is deleted (the job finished; its GPUs go back to the pool). Jobs that can
never fit the cluster on their own are reported and skipped, not left to wait forever.

Reported: GPU utilisation (GPUs held by bound pods, integrated over virtual time, over the
cluster's GPUs and the makespan; plus a sampled timeline), queueing delay (submit to all
pods Running: p50/p90/p99/max/mean; and per gang-size class, with the p99 of the class of
the largest gangs, the one starvation hits), fragmentation (the share of free GPU-time that
was stranded on partly used nodes, where a whole-node pod cannot use it), throughput (jobs
and pods per virtual hour), the wait of jobs blocked for room from the moment the room they
took freed to their last pod bound (roomwait.py: requeueing should make it one scheduling
cycle, not the periodic flush), what requeueing cost (scheduling cycles run and failed, pods
moved by events), and the wall-clock and CPU time the replay took. `scoring` and
`reservation` switch the scheduler's bin-packing and GangReservation, to compare.

With `queues` (KAI Queue documents), they are created first and each job's pods carry its
trace `queue` as the `kai.scheduler/queue` label. A job whose pods are evicted (reclaim,
preemption) loses its run: its pods come back (the operator recreates them), it waits
again, and runs its whole `duration` once all its pods are Running again (no checkpoint);
`job_restarts` counts those. A `probe` (queuetrace.py) may watch the stack as it runs and
add to the report.
"""

from __future__ import annotations

import asyncio
import os
import platform
import resource
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from phalanx.api import labels, registry
from phalanx.api.core import Pod
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import ApiError, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.scheduler.framework.config import (
    PluginConfig,
    PluginRef,
    SchedulerConfiguration,
    default_configuration,
)
from phalanx.services.gctune import tuned_gc

from .results import percentiles
from .roomwait import RoomWait
from .roomwait import pod_gpus as _pod_gpus
from .stack import EmbeddedStack
from .trace import TraceJob
from .tracker import PcsPods, PodTracker
from .workload import GPUS_PER_NODE, gpu_cluster, job_podcliqueset, scheduler_queues

TIMELINE_POINTS = 48


@dataclass(slots=True)
class ReplayConfig:
    nodes: int = 64
    start_delay: float = 5.0  # kubelet: bound -> Running (virtual seconds)
    scheduler: str = labels.SCHEDULER_PHALANX
    max_duration: float = 30 * 24 * 3600.0  # stop after this much virtual time
    tune_gc: bool = True
    # Scheduler settings to compare: NodeResourcesFit's scoring type (MostAllocated is the
    # default, GPU bin-packing; LeastAllocated spreads) and whether GangReservation runs.
    scoring: str = "MostAllocated"
    reservation: bool = True
    queues: tuple[dict[str, Any], ...] = ()  # KAI Queues to create; jobs then name theirs


# Gang classes by pods per gang (the trace generator draws powers of two up to 64).
GANG_CLASSES: tuple[tuple[str, int, int], ...] = (("1", 1, 1), ("2-4", 2, 4), ("8-16", 5, 16), ("32+", 17, 1 << 30))


def scheduler_config(cfg: ReplayConfig) -> SchedulerConfiguration:
    """Every default profile, with the replay's scoring and reservation settings."""
    profiles = []
    for p in default_configuration().profiles:
        p.plugin_config.append(PluginConfig(name="NodeResourcesFit", args={"scoringStrategy": {"type": cfg.scoring}}))
        if not cfg.reservation:
            p.plugins.multi_point.disabled.append(PluginRef(name="GangReservation"))
        profiles.append(p)
    return SchedulerConfiguration(profiles=profiles)


class _GpuMeter:
    """GPUs held by bound, non-terminal pods, integrated over loop time."""

    def __init__(self, tracker: PodTracker, capacity: float, per_node: float = GPUS_PER_NODE) -> None:
        self.held: dict[str, tuple[str, float]] = {}  # pod -> (node, GPUs)
        self.capacity = capacity
        self.per_node = per_node
        self.on_node: dict[str, float] = {}  # node -> GPUs held there
        self.total = 0.0
        self.area = 0.0
        # Free GPUs on nodes that are partly used (some GPUs held, some free): they cannot
        # take a whole-node pod. Integrated like `area`, with the free GPUs' integral.
        self.stranded = 0.0
        self.stranded_area = 0.0
        self.free_area = 0.0
        self.last = 0.0
        self.samples: list[tuple[float, float]] = []  # (loop time, GPUs held) at each change
        self.stranded_samples: list[tuple[float, float]] = []  # (loop time, stranded free GPUs)
        tracker.informer.add_handler(self._on, lambda old, new: self._on(new), self._gone)

    def _advance(self) -> None:
        now = asyncio.get_running_loop().time()
        dt = now - self.last
        self.area += self.total * dt
        self.stranded_area += self.stranded * dt
        self.free_area += (self.capacity - self.total) * dt
        self.last = now

    def _stranded_on(self, node: str) -> float:
        used = self.on_node.get(node, 0.0)
        return self.per_node - used if 0 < used < self.per_node else 0.0

    def _set(self, key: str, node: str, gpus: float) -> None:
        old_node, old = self.held.get(key, ("", 0.0))
        if old == gpus and old_node == node:
            return
        self._advance()
        for n, delta in ((old_node, -old), (node, gpus)):
            if n and delta:
                before = self._stranded_on(n)
                self.on_node[n] = self.on_node.get(n, 0.0) + delta
                self.stranded += self._stranded_on(n) - before
        self.total += gpus - old
        if gpus:
            self.held[key] = (node, gpus)
        else:
            self.held.pop(key, None)
        self.samples.append((self.last, self.total))
        self.stranded_samples.append((self.last, self.stranded))

    def _on(self, pod: Pod) -> None:
        holds = bool(pod.spec.node_name) and not pod.is_terminal
        gpus = _pod_gpus(pod) if holds else 0.0
        self._set(pod.key, pod.spec.node_name or "" if gpus else "", gpus)

    def _gone(self, pod: Pod) -> None:
        self._set(pod.key, "", 0.0)


class Probe(Protocol):
    """Watches a replay (queuetrace.py): started with the stack, asked for its part of the
    report at the end (virtual seconds since the start)."""

    def start(self, stack: EmbeddedStack, tracker: PodTracker, t0: float) -> None: ...

    def report(self, end: float) -> dict[str, Any]: ...


def replay_trace(jobs: list[TraceJob], cfg: ReplayConfig,
                 probe: Probe | None = None) -> dict[str, Any]:
    capacity = cfg.nodes * GPUS_PER_NODE
    fits = [j for j in jobs if j.gpus_per_pod <= GPUS_PER_NODE and j.gpus <= capacity]
    never = [j.job_id for j in jobs if j not in fits]

    async def main() -> dict[str, Any]:
        stack = EmbeddedStack(gpu_cluster(cfg.nodes, start_delay=f"{cfg.start_delay}s"),
                              scheduler_config=scheduler_config(cfg))
        await stack.start()
        tracker = PodTracker(stack.cluster)
        meter = _GpuMeter(tracker, capacity)
        room = RoomWait(tracker, {j.pcs_name(): j.gang_size for j in fits})
        await tracker.start()
        loop = asyncio.get_running_loop()
        t0, wall0, cpu0 = loop.time(), time.perf_counter(), time.process_time()
        meter.last = t0
        by_name = {j.pcs_name(): j for j in fits}
        submitted: dict[str, float] = {}
        started: dict[str, float] = {}  # first start: the wait is to this
        running: dict[str, asyncio.TimerHandle] = {}  # jobs running now -> their end
        restarts = 0
        ending: set[str] = set()
        finished: dict[str, float] = {}
        all_done = asyncio.Event()
        tasks: set[asyncio.Task[None]] = set()

        async def finish(name: str) -> None:
            running.pop(name, None)
            ending.add(name)  # its pods going away is the end, not an eviction
            try:
                await stack.cluster.delete(PodCliqueSet, name, "default")
            except NotFound:
                pass
            finished[name] = loop.time() - t0
            if len(finished) == len(fits):
                all_done.set()

        def on_pcs(name: str, group: PcsPods) -> None:
            nonlocal restarts
            job = by_name.get(name)
            if job is None or name in ending:
                return
            whole = len(group.running) >= job.gang_size
            if name in running:
                if not whole and len(group.pods) >= job.gang_size:
                    # Evicted (its pods are back, not all Running): the run is lost.
                    running.pop(name).cancel()
                    restarts += 1
                return
            if whole:
                started.setdefault(name, loop.time() - t0)
                running[name] = loop.call_later(
                    job.duration, lambda: _spawn(tasks, finish(name)))

        tracker.listeners.append(on_pcs)

        async def submit_all() -> None:
            for job in fits:
                wait = t0 + job.submit_time - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                name = job.pcs_name()
                submitted[name] = loop.time() - t0
                pcs = job_podcliqueset(name, job.gang_size, job.gpus_per_pod,
                                       scheduler=cfg.scheduler)
                if cfg.queues and job.queue:
                    pcs.spec.template.cliques[0].labels = {labels.LABEL_KAI_QUEUE: job.queue}
                try:
                    await stack.cluster.create(pcs)
                except ApiError as err:
                    raise RuntimeError(f"job {job.job_id}: {err}") from None

        for queue in scheduler_queues([cfg.scheduler]):
            if not any(q["metadata"]["name"] == queue.name for q in cfg.queues):
                await stack.cluster.create(queue)
        for doc in cfg.queues:
            try:
                await stack.cluster.create(registry.from_dict(doc))
            except ApiError as err:
                raise RuntimeError(f"Queue {doc['metadata']['name']}: {err}") from None
        if probe is not None:
            probe.start(stack, tracker, t0)
        submitter = asyncio.create_task(submit_all(), name="trace-submit")
        if not fits:
            all_done.set()
        try:
            await asyncio.wait_for(all_done.wait(), cfg.max_duration)
        except TimeoutError:
            pass
        if submitter.done() and submitter.exception() is not None:
            raise submitter.exception()  # type: ignore[misc]
        submitter.cancel()
        meter._advance()
        end = loop.time() - t0
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        sched = stack.scheduler
        # What requeueing costs: scheduling cycles run, failed, and pods moved by events.
        cycles = {"attempts": sched.attempts, "failures": sched.failures,
                  "binding_failures": sched.bind_failures,
                  "moved_by_events": sched.queue.moves} if sched is not None else {}
        await tracker.stop()
        await stack.stop()
        extra = probe.report(end) if probe is not None else {}
        return _report(fits, submitted, started, finished, meter, capacity, end, t0,
                       wall, cpu, tracker.ever_bound, room.waits(submitted, t0)) | {
                           "scheduling_cycles": cycles, "job_restarts": restarts} | extra

    with tuned_gc(enabled=cfg.tune_gc):
        stats = run_virtual(main)
    return {
        "benchmark": "trace",
        "config": asdict(cfg),
        "jobs": len(jobs),
        "skipped_never_fit": never,
        **stats,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def _spawn(tasks: set[asyncio.Task[None]], coro: Any) -> None:
    task = asyncio.get_running_loop().create_task(coro)
    tasks.add(task)
    task.add_done_callback(tasks.discard)


def _report(jobs: list[TraceJob], submitted: dict[str, float], started: dict[str, float],
            finished: dict[str, float], meter: _GpuMeter, capacity: int, end: float, t0: float,
            wall: float, cpu: float, pods_bound: int,
            room_waits: dict[str, float]) -> dict[str, Any]:
    first = min(submitted.values(), default=0.0)
    last_end = max(finished.values(), default=end)
    makespan = max(last_end - first, 1e-9)
    waits = [started[n] - submitted[n] for n in started]
    done_jobs = [j for j in jobs if j.pcs_name() in finished]
    hours = makespan / 3600.0
    step = makespan / TIMELINE_POINTS
    timeline, i, held = [], 0, 0.0
    for k in range(TIMELINE_POINTS + 1):
        t = t0 + first + k * step
        while i < len(meter.samples) and meter.samples[i][0] <= t:
            held = meter.samples[i][1]
            i += 1
        timeline.append([round(k * step, 1), round(held / capacity, 4)])
    stranded_timeline, i, stranded = [], 0, 0.0
    for k in range(TIMELINE_POINTS + 1):
        t = t0 + first + k * step
        while i < len(meter.stranded_samples) and meter.stranded_samples[i][0] <= t:
            stranded = meter.stranded_samples[i][1]
            i += 1
        stranded_timeline.append([round(k * step, 1), int(stranded)])
    by_class: dict[str, Any] = {}
    for name, lo, hi in GANG_CLASSES:
        cls = [started[j.pcs_name()] - submitted[j.pcs_name()] for j in jobs
               if lo <= j.gang_size <= hi and j.pcs_name() in started]
        if cls:
            by_class[name] = {"jobs": len(cls), **percentiles(cls, 1)}
    largest = next((n for n, _, _ in reversed(GANG_CLASSES) if n in by_class), None)
    room_by_class: dict[str, Any] = {}
    for name, lo, hi in GANG_CLASSES:
        cls = [room_waits[j.pcs_name()] for j in jobs
               if lo <= j.gang_size <= hi and j.pcs_name() in room_waits]
        if cls:
            room_by_class[name] = {"jobs": len(cls), **percentiles(cls, 1)}
    room = list(room_waits.values())
    return {
        "jobs_replayed": len(jobs),
        "jobs_started": len(started),
        "jobs_finished": len(finished),
        "jobs_unfinished": sorted(j.job_id for j in jobs if j.pcs_name() not in finished)[:20],
        "pods_bound": pods_bound,
        "cluster_gpus": capacity,
        "makespan_seconds": round(makespan, 1),
        "gpu_utilisation": round(meter.area / (capacity * makespan), 4),
        "demanded_gpu_hours": round(sum(j.gpus * j.duration for j in jobs) / 3600, 1),
        "queueing_delay_seconds": percentiles(waits, 1) | {
            "mean": round(sum(waits) / len(waits), 1) if waits else 0.0},
        "queueing_delay_by_gang_size": by_class,
        "largest_gang_class": largest,
        "largest_gang_class_wait_p99_seconds": by_class[largest]["p99"] if largest else None,
        # Jobs blocked for room (the room their pods took freed after they were submitted):
        # seconds from that room freeing to their last pod bound (phalanx/bench/roomwait.py).
        "jobs_blocked_for_room": len(room),
        "room_freed_to_bound_seconds": percentiles(room, 1) | {
            "mean": round(sum(room) / len(room), 1) if room else 0.0},
        "room_freed_to_bound_by_gang_size": room_by_class,
        # Share of the free GPU-time that sat on partly used nodes (stranded: a whole-node
        # pod cannot use it), over the makespan; and the stranded GPUs sampled over time.
        "stranded_free_gpu_share": round(meter.stranded_area / meter.free_area, 4) if meter.free_area else 0.0,
        "stranded_gpus_timeline": stranded_timeline,
        "throughput_jobs_per_hour": round(len(done_jobs) / hours, 2),
        "throughput_pods_per_hour": round(sum(j.gang_size for j in done_jobs) / hours, 1),
        "virtual_seconds": round(end, 1),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "virtual_speedup": round(end / wall, 1) if wall > 0 else None,
        "utilisation_timeline": timeline,
    }
