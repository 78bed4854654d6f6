"""One run: one scheduler binding one workload on the bench's API server.

Procedure (the same for both schedulers):
1. a fresh namespace; every gang object, then every pod, created while no scheduler runs;
2. the bench lists the pods and watches them (observer.py), scrapes the API server's
   /metrics, notes the load average, and starts the scheduler process, acting as a service
   account of its own (clock t0: every pod exists, the scheduler starts);
3. it waits until every pod is bound (the process must stay up), then until the API
   server's request counters are quiet (the scheduler's trailing writes: events, gang
   status), reads the process's CPU time, stops it (SIGTERM), and scrapes /metrics again
   (a watch is counted when it ends);
4. pods and gang objects are deleted (cleanup.py), so the next run starts on empty nodes.

Measured, headline first: pods/s from t0 until every pod is bound AND the scheduler's own
API writes (Events, gang status) are finished, the last write's end read from the audit log
(writes.py) -- `done_seconds`, `pods_per_second_to_done`; beside it pods/s over the binds only
(first bind .. last bind) and from t0 to the last bind, how far the writes trail the binds,
CPU seconds of the process per pod, API requests per pod (apiserver_request_total deltas),
per gang its time-to-bound: last member bound - (t0 or its first member's creation,
whichever is later; every member exists before t0 in this procedure), and the placement
spread (nodes used, pods per node) so packing and spreading show.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phalanx.bench.results import percentiles
from phalanx.envtest import ControlPlane
from phalanx.envtest.ports import http_get

from . import apimetrics, schedulers, writes
from .cleanup import delete_run
from .config import KubeBenchConfig
from .observer import BindObserver
from .procstat import cpu_seconds, cpu_times, machine_busy_seconds, peak_rss_mb
from .workload import GangObjects, gangs, plain_pods

QUIET_SCRAPES = 2  # consecutive scrapes with (almost) no new requests: the run is over
QUIET_SLACK = 2  # requests per scrape interval the API server makes on its own
QUIET_INTERVAL = 1.0
QUIET_MAX = 20.0


@dataclass
class Progress:
    """Callbacks the CLI turns into a progress bar (no-ops by default)."""

    phase: Callable[[str, int], None] = lambda description, total: None
    advance: Callable[[int], None] = lambda completed: None


@dataclass
class Window:
    t0: float = 0.0
    t0_wall: float = 0.0  # time.time() at t0: audit-log stamps are wall clock
    first_bind: float = 0.0
    last_bind: float = 0.0
    quiet: float = 0.0
    cpu_at_first_bind: float = 0.0  # the start-up's CPU (imports, informer sync, first cycle)
    cpu_at_last_bind: float = 0.0
    cpu_at_quiet: float = 0.0
    cpu_user: float = 0.0
    cpu_system: float = 0.0
    peak_rss_mb: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    requests: dict[apimetrics.RequestKey, int] = field(default_factory=dict)
    writes: list[writes.Write] = field(default_factory=list)
    # CPU seconds at t0 and at quiet: the control plane's processes, this bench process
    # (its watch and scrapes) and the whole machine, so that a run shows whether the
    # machine, not the scheduler, was the limit.
    cpu_around: list[dict[str, float]] = field(default_factory=list)
    settle: dict[str, float] = field(default_factory=dict)  # until_machine_settles, before t0

    def wall(self, monotonic: float) -> float:
        return self.t0_wall + (monotonic - self.t0)


# Before t0 the machine settles: the API server and etcd digest thousands of creates for a
# while after the last one is answered; a scheduler started meanwhile shares the CPUs with
# that, by chance more or less (both schedulers alike). Bounded: a busy machine still runs.
SETTLE_BUSY_BELOW = 0.25  # of all CPUs, over one sample
SETTLE_SAMPLE = 0.5  # seconds
SETTLE_MAX = 30.0  # seconds


async def until_machine_settles(*, busy_below: float = SETTLE_BUSY_BELOW,
                                sample: float = SETTLE_SAMPLE, max_wait: float = SETTLE_MAX,
                                busy_seconds: Callable[[], float] = machine_busy_seconds,
                                ) -> dict[str, float]:
    """Wait until the machine's CPUs were less than `busy_below` busy over one `sample`, or
    `max_wait` passed; returns the seconds waited and the busy fractions first and last."""
    cpus = os.cpu_count() or 1
    start = time.monotonic()
    first: float | None = None
    while True:
        before = busy_seconds()
        await asyncio.sleep(sample)
        busy = max(busy_seconds() - before, 0.0) / (cpus * sample)
        first = busy if first is None else first
        if busy < busy_below or time.monotonic() - start >= max_wait:
            return {"seconds": round(time.monotonic() - start, 2),
                    "busy_first": round(first, 3), "busy_at_t0": round(busy, 3)}


def _cpu_snapshot(plane: ControlPlane) -> dict[str, float]:
    out = {"machine": machine_busy_seconds(), "bench": time.process_time()}
    for name, part in (("kube-apiserver", plane.apiserver), ("etcd", plane.etcd)):
        if part is not None:
            out[name] = cpu_seconds(part.process.pid)
    return out


def _cpu_shares(w: Window, window: float, pods: int) -> dict[str, Any]:
    """What the machine's CPUs did over t0..quiet (see Window.cpu_around).

    `run_cpu_ms_per_pod` is the whole run's work: the scheduler's CPU plus kube-apiserver's
    and etcd's. When the machine is the limit (busy near 100%), a run's time to done
    follows it, whichever scheduler made the work."""
    if len(w.cpu_around) != 2:
        return {}
    start, end = w.cpu_around
    cpus = os.cpu_count() or 1
    used = {k: round(end[k] - start[k], 3) for k in start if k in end}
    busy = used.pop("machine", 0.0)
    server = used.get("kube-apiserver")
    plane = [used[k] for k in ("kube-apiserver", "etcd") if k in used]
    return {
        "apiserver_cpu_ms_per_pod": (round(1000 * server / pods, 3)
                                     if server is not None and pods else None),
        "run_cpu_ms_per_pod": (round(1000 * (w.cpu_at_quiet + sum(plane)) / pods, 3)
                               if plane and pods else None),
        "control_plane_cpu_seconds": {k: used[k] for k in ("kube-apiserver", "etcd")
                                      if k in used},
        "bench_process_cpu_seconds": used.get("bench", 0.0),
        "machine_busy_cpu_seconds": busy,
        "machine_cpu_seconds_available": round(cpus * window, 3),
        "machine_busy_fraction": round(busy / (cpus * window), 3) if window > 0 else 0.0,
    }


async def scrape(plane: ControlPlane) -> dict[apimetrics.RequestKey, float]:
    status, body = await asyncio.to_thread(http_get, f"{plane.server}/metrics",
                                           token=plane.token, timeout=30)
    if status != 200:
        raise RuntimeError(f"kube-apiserver /metrics answered {status}: {body[:200]!r}")
    return apimetrics.request_counts(body.decode())


async def _create(kube: Any, objects: list[Any], concurrency: int,
                  done: Callable[[int], None]) -> None:
    gate = asyncio.Semaphore(concurrency)
    count = 0

    async def one(obj: Any) -> None:
        nonlocal count
        async with gate:
            await kube.create(obj)
        count += 1
        done(count)

    await asyncio.gather(*(one(o) for o in objects))


async def _until_quiet(plane: ControlPlane, running: schedulers.Running,
                       last: dict[apimetrics.RequestKey, float]) -> float:
    """Scrape until the request counters stop moving (bounded); returns when it was."""
    quiet = 0
    deadline = time.monotonic() + QUIET_MAX
    prev = apimetrics.total(apimetrics.counts_delta({}, last))
    while quiet < QUIET_SCRAPES and time.monotonic() < deadline:
        await asyncio.sleep(QUIET_INTERVAL)  # a measuring interval, not a synchronisation
        running.check_alive()
        now = apimetrics.total(apimetrics.counts_delta({}, await scrape(plane)))
        quiet = quiet + 1 if now - prev <= QUIET_SLACK else 0
        prev = now
    return time.monotonic()


async def run_phase(plane: ControlPlane, kube: Any, cfg: KubeBenchConfig, scheduler: str,
                    workload: str, progress: Progress, *, profile: Path | None = None,
                    background_rps: float = 0.0) -> dict[str, Any]:
    short = "kube" if scheduler == schedulers.KUBE_SCHEDULER else "phalanx"
    namespace = plane.create_namespace(f"bench-{short}-{workload}")
    run = namespace
    members: list[GangObjects] = []
    if workload == "plain":
        pods = plain_pods(cfg, scheduler, namespace, run)
        objects: list[Any] = []
    else:
        members = gangs(cfg, scheduler, namespace, run)
        objects = [o for g in members for o in g.objects]
        pods = [p for g in members for p in g.pods]
    progress.phase(f"{scheduler} {workload}: creating {len(objects) + len(pods)} objects",
                   len(objects) + len(pods))
    created_before = time.monotonic()
    done = 0
    # Layer by layer: a PodGroup is admitted only once its Workload exists.
    for layer in range(max((len(g.objects) for g in members), default=0)):
        batch = [g.objects[layer] for g in members if layer < len(g.objects)]
        await _create(kube, batch, cfg.create_concurrency,
                      lambda n, base=done: progress.advance(base + n))
        done += len(batch)
    await _create(kube, pods, cfg.create_concurrency,
                  lambda n: progress.advance(len(objects) + n))
    create_seconds = time.monotonic() - created_before

    progress.phase(f"{scheduler} {workload}: binding {len(pods)} pods", len(pods))
    kubeconfig, user = await asyncio.to_thread(schedulers.identity, plane, scheduler)
    w = Window()
    pid: list[int] = []  # the scheduler's, once started

    def on_bound(count: int) -> None:
        if count == 1 and pid:
            w.cpu_at_first_bind = cpu_seconds(pid[0])
        progress.advance(count)

    observer = BindObserver(kube, namespace, len(pods), on_bound=on_bound)
    await observer.start()
    if observer.bound:
        raise RuntimeError(f"{len(observer.bound)} pods of {namespace} were bound before "
                           f"{scheduler} started: another scheduler is running")
    before = await scrape(plane)
    w.settle = await until_machine_settles()
    w.load_before = os.getloadavg()
    audit_offset = writes.log_size(plane.audit_log)
    w.cpu_around.append(_cpu_snapshot(plane))
    w.t0_wall, w.t0 = time.time(), time.monotonic()
    running = schedulers.start(plane, cfg, scheduler, profile=profile, kubeconfig=kubeconfig)
    pid.append(running.pid)
    configz: dict[str, Any] | None = None
    try:
        deadline = w.t0 + cfg.phase_timeout
        while not await observer.wait(min(1.0, max(deadline - time.monotonic(), 0.01))):
            running.check_alive()
            if configz is None and scheduler == schedulers.KUBE_SCHEDULER:
                # In a thread: the observer stamps binds on this loop.
                configz = await asyncio.to_thread(running.configz)
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{scheduler} bound {len(observer.bound)}/{len(pods)} pods of {namespace} "
                    f"in {cfg.phase_timeout:g}s (log: {running.process.log_path})")
        w.cpu_at_last_bind = cpu_seconds(running.pid)
        times = sorted(observer.bound.values())
        w.first_bind, w.last_bind = times[0], times[-1]
        if configz is None and scheduler == schedulers.KUBE_SCHEDULER:
            configz = await asyncio.to_thread(running.configz)
        w.quiet = await _until_quiet(plane, running, before)
        w.cpu_around.append(_cpu_snapshot(plane))
        w.cpu_user, w.cpu_system = cpu_times(running.pid)
        w.cpu_at_quiet = w.cpu_user + w.cpu_system
        w.peak_rss_mb = peak_rss_mb(running.pid)
    finally:
        exit_code = running.stop()
    after = await scrape(plane)
    w.load_after = os.getloadavg()
    await observer.stop()
    w.requests = apimetrics.counts_delta(before, after)
    w.writes = writes.writes_since(plane.audit_log, audit_offset, user)
    result = summarize(cfg, scheduler, workload, pods, members, observer, w, background_rps)
    result.update(namespace=namespace, create_seconds=round(create_seconds, 3),
                  exit_code=exit_code, log=str(running.process.log_path))
    if configz is not None:
        result["configz_client_connection"] = _client_connection(configz)
    progress.phase(f"{scheduler} {workload}: deleting", 1)
    await delete_run(kube, namespace)
    progress.advance(1)
    return result


def _client_connection(configz: dict[str, Any]) -> dict[str, Any]:
    conf = configz.get("componentconfig") or configz
    cc = conf.get("clientConnection") or {}
    return {k: cc.get(k) for k in ("qps", "burst", "contentType")}


def summarize(cfg: KubeBenchConfig, scheduler: str, workload: str, pods: list[Any],
              members: list[GangObjects], observer: BindObserver, w: Window,
              background_rps: float) -> dict[str, Any]:
    n = len(pods)
    bind_span = max(w.last_bind - w.first_bind, 1e-9)
    requests = apimetrics.total(w.requests)
    window = w.quiet - w.t0
    per_node: dict[str, int] = {}
    for node in observer.node_of.values():
        per_node[node] = per_node.get(node, 0) + 1
    spread: dict[int, int] = {}  # pods on a node -> nodes with that many
    for count in per_node.values():
        spread[count] = spread.get(count, 0) + 1
    own = writes.summarize_writes(w.writes, w.t0_wall, w.wall(w.last_bind))
    done = max(w.last_bind - w.t0, own["last_write_seconds"])
    out: dict[str, Any] = {
        "scheduler": scheduler,
        "workload": workload,
        "client_limits": dict(zip(("qps", "burst"), cfg.limits_for(scheduler), strict=True)),
        "pods": n,
        "pods_bound": len(observer.bound),
        "nodes_used": len(per_node),
        "max_pods_per_node": max(per_node.values(), default=0),
        "nodes_by_pods_per_node": {str(k): spread[k] for k in sorted(spread)},
        "t0_unix": round(w.t0_wall, 3),  # to find the run in the audit and process logs
        "done_seconds": round(done, 3),
        "pods_per_second_to_done": round(n / max(done, 1e-9), 2),
        "first_bind_seconds": round(w.first_bind - w.t0, 3),
        "all_bound_seconds": round(w.last_bind - w.t0, 3),
        "pods_per_second": round((n - 1) / bind_span if n > 1 else 0.0, 2),
        "pods_per_second_from_start": round(n / max(w.last_bind - w.t0, 1e-9), 2),
        "cpu_seconds": round(w.cpu_at_quiet, 3),
        "cpu_seconds_at_first_bind": round(w.cpu_at_first_bind, 3),
        "cpu_seconds_at_last_bind": round(w.cpu_at_last_bind, 3),
        "cpu_user_seconds": round(w.cpu_user, 3),
        "cpu_system_seconds": round(w.cpu_system, 3),
        "cpu_ms_per_pod": round(1000 * w.cpu_at_quiet / n, 3) if n else 0.0,
        "peak_rss_mb": w.peak_rss_mb,
        "api_requests": requests,
        "api_requests_per_pod": round(requests / n, 3) if n else 0.0,
        "api_requests_by_verb": apimetrics.by_verb(w.requests),
        "api_requests_by_call": apimetrics.by_call(w.requests),
        "api_errors": apimetrics.errors(w.requests),
        "own_writes": own,
        "measured_window_seconds": round(window, 3),
        "background_requests_estimate": round(background_rps * window, 1),
        "machine_settle_before_t0": w.settle,
        "load_average_before": [round(x, 2) for x in w.load_before],
        "load_average_after": [round(x, 2) for x in w.load_after],
        **_cpu_shares(w, window, n),
    }
    if members:
        bound_at = [[observer.bound[p.name] for p in g.pods if p.name in observer.bound]
                    for g in members]
        ttb = [max(stamps) - w.t0 for g, stamps in zip(members, bound_at, strict=True)
               if len(stamps) == len(g.pods)]
        out["gangs"] = len(members)
        out["gangs_bound"] = len(ttb)
        out["gang_sizes"] = {"min": min(len(g.pods) for g in members),
                             "max": max(len(g.pods) for g in members)}
        out["gang_time_to_bound_seconds"] = percentiles(ttb, 3)
        out.update(_gang_status_lag(members, bound_at, w))
    return out


def _gang_status_lag(members: list[GangObjects], bound_at: list[list[float]],
                     w: Window) -> dict[str, Any]:
    """How long after a gang's last bind (`bound_at`: its members' bind times, as `members`)
    its object's status was last written (kube-scheduler: the PodGroup's; phalanx: the
    PodGang's GangScheduled condition). Negative: written before the binds ended."""
    status = writes.last_status_write(w.writes)
    lags = []
    for g, stamps in zip(members, bound_at, strict=True):
        ends = [status[o.name] for o in g.objects if o.name in status]
        if stamps and ends:
            lags.append(max(ends) - w.wall(max(stamps)))
    return {"gangs_with_status_written": len(lags),
            "gang_status_after_last_bind_seconds": percentiles(lags, 3)}
