"""`phalanx bench e2e`: PodCliqueSet creation to every pod Running, the whole stack.

The embedded API server with `nodes` 8-GPU nodes, the operator (every backend enabled), the
scheduler and the simulated kubelets (no start delay unless asked) run on virtual time.
`pods / pods_per_pcs` PodCliqueSets (one gang each) are created back to back; the bench
follows pods through an informer and records, in wall-clock seconds from the first create:
every pod created, every pod bound, every pod Running. Virtual time is reported too, but the
number that matters is wall time: how fast the control plane itself is.

Also: PodCliqueSets/s and pods/s until all Running, per-PodCliqueSet time from its create to
all its pods Running (p50/p99), API writes per pod by verb and kind, process CPU time (robust
when other work shares the machine), peak RSS and the load average during the run.
"""

from __future__ import annotations

import asyncio
import os
import platform
import resource
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.cluster.clock import run_virtual
from phalanx.services.gctune import freeze_after_warmup, tuned_gc

from .results import percentiles
from .stack import EmbeddedStack
from .tracker import PodTracker
from .workload import ALL_SCHEDULERS, gpu_cluster, job_podcliqueset, scheduler_queues


@dataclass(slots=True)
class E2EConfig:
    nodes: int = 5000
    pods: int = 10_000
    pods_per_pcs: int = 8
    gpus_per_pod: int = 1
    # "phalanx-scheduler", any one schedulerName, or "all" (round-robin over every backend).
    schedulers: str = labels.SCHEDULER_PHALANX
    start_delay: float = 0.0  # kubelet: bound -> Running (virtual seconds)
    events: bool = True  # the scheduler writes Scheduled/FailedScheduling Events
    tune_gc: bool = True  # phalanx/services/gctune.py, as `phalanx run`
    timeout: float = 6 * 3600.0  # virtual seconds to wait for all Running
    profile: bool = False  # pyinstrument; the text report is returned under "profile"
    # False: phalanx-scheduler's profile sets `podSchedulingGate: false` (issue 28's gate-free
    # path): pods are created without Grove's gate and held by the scheduler instead.
    pod_scheduling_gate: bool = True

    def scheduler_names(self) -> list[str]:
        if self.schedulers == "all":
            return list(ALL_SCHEDULERS)
        names = [s.strip() for s in self.schedulers.split(",") if s.strip()]
        unknown = [s for s in names if s not in ALL_SCHEDULERS]
        if not names or unknown:
            raise ValueError(f"schedulers: unknown {unknown or self.schedulers!r}; use 'all' or "
                             f"some of {', '.join(ALL_SCHEDULERS)}")
        return names


class _Clock:
    """Wall-clock milestones, taken inside the informer handler that sees them happen."""

    def __init__(self, tracker: PodTracker, pods: int, per_pcs: int, stats: Any) -> None:
        self.tracker, self.pods, self.per_pcs, self.stats = tracker, pods, per_pcs, stats
        self.t0 = 0.0
        self.created: dict[str, float] = {}
        self.pcs_running: dict[str, float] = {}
        self.all_created = self.all_bound = self.all_running = 0.0
        self.writes_at_running = 0
        self.done = asyncio.Event()
        tracker.listeners.append(self._on_pcs)
        tracker.informer.add_handler(self._on_any, lambda old, new: self._on_any(new))

    def _on_pcs(self, pcs: str, group: Any) -> None:
        if pcs not in self.pcs_running and len(group.running) >= self.per_pcs:
            self.pcs_running[pcs] = time.perf_counter()

    def _on_any(self, _: Pod) -> None:
        t, now = self.tracker, 0.0
        if not self.all_created and t.pods >= self.pods:
            now = self.all_created = time.perf_counter()
        if not self.all_bound and t.bound >= self.pods:
            now = self.all_bound = now or time.perf_counter()
        if not self.all_running and t.running >= self.pods:
            self.all_running = now or time.perf_counter()
            self.writes_at_running = sum(self.stats.writes.values())
            self.done.set()


async def _until_quiet(stats: Any, quiet: float = 2.0, limit: float = 120.0) -> float:
    """Wait (on the run's clock) until no API write has landed for `quiet` seconds; the
    status writes and Events that follow the last pod's start are part of the work."""
    loop = asyncio.get_running_loop()
    start = last_change = loop.time()
    seen = sum(stats.writes.values())
    while loop.time() - last_change < quiet and loop.time() - start < limit:
        await asyncio.sleep(quiet / 4)
        now_seen = sum(stats.writes.values())
        if now_seen != seen:
            seen, last_change = now_seen, loop.time()
    return last_change - start


def operator_writes(accepted: dict[tuple[str, str], int]) -> int:
    """The operator's own writes (its connection's, `FencedClient.accepted`), Events aside."""
    return sum(n for (verb, kind), n in accepted.items() if kind != "Event")


def _by_call(counts: dict[tuple[str, str], int]) -> dict[str, int]:
    return {f"{verb} {kind}": n for (verb, kind), n in sorted(counts.items(), key=lambda kv: -kv[1])}


def operator_config(pod_scheduling_gate: bool) -> Any:
    """The embedded default configuration, with phalanx-scheduler's gate setting."""
    from phalanx.sim.workload import embedded_default_config

    cfg = embedded_default_config()
    if not pod_scheduling_gate:
        profile = cfg.scheduler.profile(labels.SCHEDULER_PHALANX)
        assert profile is not None
        profile.config = {**(profile.config or {}), "podSchedulingGate": False}
    return cfg


def run_e2e_bench(cfg: E2EConfig) -> dict[str, Any]:
    """One run; returns the JSON-ready result (raises ValueError on a bad config)."""
    if cfg.pods < cfg.pods_per_pcs or cfg.pods_per_pcs < 1:
        raise ValueError(f"pods ({cfg.pods}) must be at least pods-per-pcs ({cfg.pods_per_pcs}) >= 1")
    names = cfg.scheduler_names()
    n_pcs = cfg.pods // cfg.pods_per_pcs
    pods = n_pcs * cfg.pods_per_pcs
    profile_text = ""

    async def main() -> dict[str, Any]:
        t_setup = time.perf_counter()
        stack = EmbeddedStack(gpu_cluster(cfg.nodes, start_delay=f"{cfg.start_delay}s"),
                              operator_config(cfg.pod_scheduling_gate),
                              record_events=cfg.events)
        await stack.start()
        tracker = PodTracker(stack.cluster)
        await tracker.start()
        clock = _Clock(tracker, pods, cfg.pods_per_pcs, stack.cluster.stats)
        jobs = [job_podcliqueset(f"job-{i:05d}", cfg.pods_per_pcs, cfg.gpus_per_pod,
                                 scheduler=names[i % len(names)]) for i in range(n_pcs)]
        for queue in scheduler_queues(names):
            await stack.cluster.create(queue)
        await stack.settle()
        # Warmed up, as the services freeze theirs once their caches have synced: the
        # nodes and everything the stack built at start are never scanned again.
        if cfg.tune_gc:
            freeze_after_warmup()
        setup_s = time.perf_counter() - t_setup
        cluster = stack.cluster
        cluster.stats.reset()
        # Each component's writes are counted from here, as the store's: what the operator
        # wrote while starting (e.g. the topology's HyperNodes) is no pod's.
        writers = [(name, process) for name, process in
                   (("operator", stack.operator_process), ("scheduler", stack.scheduler_process))
                   if process is not None]
        accepted0 = {name: Counter(process.client.accepted) for name, process in writers}
        loop = asyncio.get_running_loop()
        v0, cpu0, load0 = loop.time(), time.process_time(), os.getloadavg()[0]
        clock.t0 = time.perf_counter()
        for pcs in jobs:
            clock.created[pcs.name] = time.perf_counter()
            await cluster.create(pcs)
        t_submitted = time.perf_counter()
        try:
            await asyncio.wait_for(clock.done.wait(), cfg.timeout)
        except TimeoutError:
            pass
        t_end = time.perf_counter()
        v_running = loop.time()
        trailing_virtual = await _until_quiet(cluster.stats) if clock.all_running else 0.0
        t_quiet = time.perf_counter()
        cpu = time.process_time() - cpu0
        virtual = v_running - v0
        load1 = os.getloadavg()[0]
        writes = dict(cluster.stats.writes)
        by_writer = {name: dict(Counter(process.client.accepted) - accepted0[name])
                     for name, process in writers}
        state = {"pods": tracker.pods, "bound": tracker.bound, "running": tracker.running}
        await tracker.stop()
        await stack.stop()
        t0 = clock.t0
        per_pcs = [clock.pcs_running[n] - clock.created[n] for n in clock.pcs_running]
        total_writes = sum(writes.values())

        def since(t: float) -> float | None:
            return round(t - t0, 3) if t else None

        running_s = (clock.all_running or t_end) - t0
        return {
            "setup_seconds": round(setup_s, 3),
            "submit_seconds": round(t_submitted - t0, 3),
            "all_pods_created_seconds": since(clock.all_created),
            "all_pods_bound_seconds": since(clock.all_bound),
            "all_pods_running_seconds": since(clock.all_running),
            "completed": bool(clock.all_running),
            "final_state": state,
            "podcliquesets_per_second": round(len(clock.pcs_running) / running_s, 1),
            "pods_per_second_to_bound": round(pods / (clock.all_bound - t0), 1) if clock.all_bound else None,
            "pods_per_second_to_running": round(pods / running_s, 1) if clock.all_running else None,
            "pcs_create_to_running_seconds": percentiles(per_pcs),
            # Every write until the API went quiet after the last pod started (status and
            # Events that trail it included); the writes up to that moment beside it.
            "api_writes": total_writes,
            "api_writes_per_pod": round(total_writes / pods, 2),
            "api_writes_per_pod_to_running": round(clock.writes_at_running / pods, 2),
            "trailing_writes_virtual_seconds": round(trailing_virtual, 3),
            "trailing_writes_wall_seconds": round(t_quiet - t_end, 3),
            "operator_writes_per_pod": round(operator_writes(by_writer.get("operator", {})) / pods, 2),
            "api_writes_by_kind": _by_call(writes),
            # The operator's and the scheduler's own; the rest of the store's writes are the
            # bench's (PodCliqueSets), the simulated kubelets' and the API server's own.
            "api_writes_by_writer": {name: _by_call(c) for name, c in by_writer.items()},
            "cpu_seconds": round(cpu, 3),
            "cpu_us_per_pod": round(cpu / pods * 1e6, 1),
            "virtual_seconds": round(virtual, 3),
            "load_average_1m": [round(load0, 2), round(load1, 2)],
        }

    with tuned_gc(enabled=cfg.tune_gc):
        if cfg.profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
            profiler.start()
            try:
                stats = run_virtual(main)
            finally:
                profiler.stop()
            profile_text = profiler.output_text(unicode=False, color=False)
        else:
            stats = run_virtual(main)
    result: dict[str, Any] = {
        "benchmark": "e2e",
        "config": asdict(cfg),
        "podcliquesets": n_pcs,
        "pods": pods,
        **stats,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    if profile_text:
        result["profile"] = profile_text
    return result
