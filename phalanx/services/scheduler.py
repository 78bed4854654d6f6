"""`phalanx scheduler`: the gang scheduler as a long-running service on a real cluster.

By default it serves only pods with `schedulerName: phalanx-scheduler`, next to
kube-scheduler (and KAI, Volcano, ... if installed), as a second scheduler does; a
KubeSchedulerConfiguration (`--config`) names the schedulerNames served by its profiles. Replicas
elect a leader through a Lease: only the leader schedules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phalanx.ports import SCHEDULER_METRICS_PORT, SCHEDULER_PROBE_PORT

from .gctune import collect_rarely, freeze_after_warmup
from .leader import LeaseTiming
from .metrics import PhalanxMetrics
from .runtime import (
    cache_sync_check,
    connect,
    install_signal_handlers,
    own_namespace,
    readiness_checks,
    run_with_leadership,
    setup_logging,
)
from .server import Probes, ServiceServer

if TYPE_CHECKING:
    from phalanx.scheduler.framework.config import SchedulerConfiguration

log = logging.getLogger("phalanx.scheduler.service")

LEASE = "phalanx-scheduler-leader-election"


@dataclass
class SchedulerServiceOptions:
    kubeconfig: str | None = None
    context: str | None = None
    scheduler_names: list[str] = field(default_factory=lambda: ["phalanx-scheduler"])
    # A KubeSchedulerConfiguration (`--config`); None: a default profile per scheduler name.
    config: SchedulerConfiguration | None = None
    leader_elect: bool = True
    lease_namespace: str | None = None
    probe_port: int = SCHEDULER_PROBE_PORT
    metrics_port: int = SCHEDULER_METRICS_PORT
    bind_address: str = "0.0.0.0"
    qps: float = 100.0
    burst: int = 150
    log_level: str = "info"
    log_format: str = "text"
    lease_timing: LeaseTiming = field(default_factory=LeaseTiming)
    # Freeze the objects of the informers' first sync and collect less often (gctune.py).
    tune_gc: bool = True


def instrument(scheduler: Any, metrics: PhalanxMetrics) -> None:
    """Count and time every scheduling cycle by profile and result.

    The scheduler's cycle is synchronous (`schedule_one`); its counters tell whether it
    ended scheduled (a node was assumed; binding follows asynchronously) or failed.
    """
    inner = scheduler.schedule_one

    def schedule_one(qpi: Any) -> Any:
        failures = scheduler.failures
        started = time.perf_counter()
        result = "error"  # unless the cycle returns
        try:
            out = inner(qpi)
            result = "unschedulable" if scheduler.failures > failures else "scheduled"
            return out
        finally:
            seconds = time.perf_counter() - started
            profile = getattr(getattr(qpi, "info", None), "scheduler_name", "") or ""
            metrics.scheduling_attempts.labels(profile, result).inc()
            metrics.scheduling_seconds.labels(profile, result).observe(seconds)

    scheduler.schedule_one = schedule_one
    metrics.add_sampler("phalanx_scheduler_pending_pods", "Pods in the scheduling queue.",
                        (), lambda: [({}, float(_queue_len(scheduler)))])


def _queue_len(scheduler: Any) -> int:
    queue = getattr(scheduler, "queue", None)
    try:
        return len(queue)  # type: ignore[arg-type]
    except TypeError:
        return 0


async def observe_gang_waits(scheduler: Any, metrics: PhalanxMetrics, client: Any) -> None:
    """Gang wait time: a PodGang's creation until its Scheduled condition turns True.

    Where the server does not serve PodGangs (yet), the informer is the deferred one the
    gang plugins read too: an informer of a kind not served never syncs, and the scheduler
    waits for every started informer before its first cycle."""
    from phalanx.api.base import get_condition
    from phalanx.api.podgang import PODGANG_SCHEDULED, PodGang

    try:
        served = await client.serves(PodGang)
    except Exception as err:  # noqa: BLE001 - a metric must not hold the scheduler
        log.warning("gang wait metric off: cannot tell whether PodGangs are served: %s", err)
        return

    seen: set[str] = set()

    def check(gang: PodGang) -> None:
        if gang.metadata.uid in seen:
            return
        cond = get_condition(gang.status.conditions, PODGANG_SCHEDULED)
        created = gang.metadata.creation_timestamp
        if cond is None or cond.status != "True" or not cond.last_transition_time or not created:
            return
        seen.add(gang.metadata.uid or "")
        label = gang.metadata.labels.get("grove.io/scheduler-name", "")
        wait = (cond.last_transition_time - created).total_seconds()
        metrics.gang_wait_seconds.labels(label).observe(max(wait, 0.0))

    informer = scheduler.informers.informer_if_served(PodGang, served, client.serves)
    informer.add_handler(on_add=check, on_update=lambda old, new: check(new),
                         on_delete=lambda gang: seen.discard(gang.metadata.uid or ""))


async def run_scheduler_service(
    opts: SchedulerServiceOptions, stop: asyncio.Event | None = None
) -> int:
    """Run until `stop` is set (or SIGTERM/SIGINT); returns the exit code."""
    from phalanx.scheduler import Scheduler
    from phalanx.scheduler.framework.config import default_configuration

    if opts.tune_gc:
        collect_rarely()
    setup_logging(opts.log_level, opts.log_format)
    client = await connect(opts.kubeconfig, opts.context, field_manager="phalanx-scheduler",
                           qps=opts.qps, burst=opts.burst)
    # Nodes and pods are listed in bulk and only ever patched (binds, conditions): their
    # lists skip the merge-patch bases and decode in one pass (KubeCluster.list).
    from phalanx.api.core import Node, Pod
    client.lists_without_bases |= {Node, Pod}
    namespace = opts.lease_namespace or own_namespace(client.default_namespace)
    stop = stop or asyncio.Event()
    install_signal_handlers(stop)
    metrics, probes = PhalanxMetrics(), Probes()
    readiness_checks(probes, client)
    running: list[Any] = []  # the Scheduler while leading
    probes.readiness["informer-sync"] = cache_sync_check(
        lambda: running[0].informers.informers if running else ())
    # Without leader election this replica schedules: not ready until its Scheduler exists
    # (then informer-sync holds it until the caches are filled). A standby has none.
    probes.readiness["scheduler"] = lambda: (
        bool(running) or opts.leader_elect, "the scheduler is starting")
    server = ServiceServer(probes=probes, registry=metrics.registry, host=opts.bind_address,
                           http_port=opts.probe_port, metrics_port=opts.metrics_port)
    try:
        await server.start()

        async def lead() -> None:
            scheduler = Scheduler(client, opts.config or
                                  default_configuration(tuple(opts.scheduler_names)))
            instrument(scheduler, metrics)
            with contextlib.suppress(Exception):
                await observe_gang_waits(scheduler, metrics, client)
            running[:] = [scheduler]
            try:
                # Caches that cannot sync (e.g. RBAC) are waited for, not a crash: readiness
                # says what is missing and the informers keep retrying.
                await scheduler.start(sync_timeout=None)
                if opts.tune_gc:
                    freeze_after_warmup()
                log.info("scheduling pods of %s", ", ".join(opts.scheduler_names))
                await asyncio.Event().wait()
            finally:
                await scheduler.stop()

        return await run_with_leadership(
            client, enabled=opts.leader_elect, lease=LEASE, namespace=namespace,
            timing=opts.lease_timing, metrics=metrics, stop=stop, lead=lead, probes=probes)
    finally:
        await server.stop()
        with contextlib.suppress(Exception):
            await client.close()
