"""What both long-running services share: logging, signals, connecting, leadership."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from prometheus_client.core import CounterMetricFamily

from phalanx.cluster.kube import KubeCluster
from phalanx.cluster.kube.proxy import redacted

from .leader import LeaderElector, LeaseTiming
from .metrics import PhalanxMetrics
from .server import Probes

log = logging.getLogger("phalanx.service")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": self.formatTime(record), "level": record.levelname.lower(),
               "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out)


def setup_logging(level: str = "info", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else logging.Formatter(
        "%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel({"warn": "WARNING"}.get(level, level.upper()))
    # aiohttp logs every webhook call at INFO through its access logger; we count them.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def own_namespace(fallback: str) -> str:
    return os.environ.get("POD_NAMESPACE") or fallback


def install_signal_handlers(stop: asyncio.Event) -> None:
    """SIGTERM (kubelet) and SIGINT (Ctrl-C) ask for a graceful stop."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread / platform
            pass


async def connect(kubeconfig: str | None, context: str | None, *, field_manager: str,
                  qps: float, burst: int) -> KubeCluster:
    cluster = await KubeCluster.connect(kubeconfig, context=context,
                                        field_manager=field_manager, qps=qps, burst=burst)
    try:
        version = await cluster.server_version()
    except BaseException:
        await cluster.close()  # else aiohttp warns "Unclosed client session" at exit
        raise
    proxy = cluster.transport.proxy
    log.info("connected to %s (Kubernetes %s) via %s%s", cluster.server,
             version.get("gitVersion", "?"), cluster.transport.conn.source,
             f", through proxy {redacted(proxy)}" if proxy else "")
    return cluster


def bind_controller_metrics(metrics: PhalanxMetrics,
                            controllers: Callable[[], Iterable[Any]]) -> None:
    """Reconcile counts and queue depths read from the controllers at scrape time."""
    metrics.add_sampler("phalanx_workqueue_depth", "Keys waiting in each controller's queue.",
                        ("name",), lambda: [({"name": c.name}, float(len(c.queue)))
                                            for c in controllers()])

    class _Reconciles:
        def collect(self) -> Iterable[CounterMetricFamily]:
            family = CounterMetricFamily(
                "phalanx_controller_reconciles", "Reconciles by controller and result.",
                labels=["controller", "result"])
            for c in controllers():
                family.add_metric([c.name, "success"], float(c.reconciles - c.errors))
                family.add_metric([c.name, "error"], float(c.errors))
            yield family

    metrics.registry.register(_Reconciles())  # type: ignore[arg-type]


async def run_with_leadership(
    client: KubeCluster, *, enabled: bool, lease: str, namespace: str,
    timing: LeaseTiming | None,
    metrics: PhalanxMetrics, stop: asyncio.Event, lead: Callable[[], Awaitable[None]],
    probes: Probes | None = None,
) -> int:
    """Run `lead()` (while holding the Lease, when enabled) until `stop` is set.

    Returns the process exit code: 0 after a requested stop, 1 when leadership was lost
    (the pod restarts and queues up as a standby, as controller-runtime's managers do).
    With `probes`, readiness gets the check `leader-election`: failing while the Lease
    cannot be read or written (e.g. Forbidden), passing for the leader and for a standby
    that sees a live leader."""
    async def until_stopped() -> None:
        work = asyncio.ensure_future(lead())
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if work.done():
                work.result()
        finally:
            for t in (work, waiter):
                t.cancel()
            await asyncio.gather(work, waiter, return_exceptions=True)

    if not enabled:
        await until_stopped()
        return 0
    elector = LeaderElector(client, name=lease, namespace=namespace, timing=timing)
    if probes is not None:
        probes.readiness["leader-election"] = lambda: (
            elector.last_error is None, f"lease {namespace}/{lease}: {elector.last_error}")
    gauge = metrics.is_leader.labels(lease)
    elector.on_change = lambda leading: gauge.set(1 if leading else 0)
    log.info("waiting to lead: lease %s/%s as %s", namespace, lease, elector.identity)
    run = asyncio.ensure_future(elector.run(until_stopped))
    stopper = asyncio.ensure_future(stop.wait())
    await asyncio.wait({run, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if not run.done():  # stopped while still a standby, or while leading
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        stopper.cancel()
        return 0
    stopper.cancel()
    return 0 if run.result() else 1


def cache_sync_check(informers: Callable[[], Iterable[Any]]) -> Callable[[], tuple[bool, str]]:
    """Readiness check `informer-sync`: every informer of the running controllers has
    listed its kind. A standby runs none, so it passes; a new leader fails it until its
    caches are filled, naming what it waits for and why (e.g. an RBAC Forbidden)."""
    def check() -> tuple[bool, str]:
        pending = [i for i in informers() if not i.synced]
        if not pending:
            return True, ""
        shown = "; ".join(i.kind.KIND + (f" ({i.last_error})" if i.last_error else "")
                          for i in pending[:3])
        more = f"; and {len(pending) - 3} more" if len(pending) > 3 else ""
        return False, f"waiting for {len(pending)} cache(s) to sync: {shown}{more}"

    return check


def readiness_checks(probes: Probes, client: KubeCluster) -> None:
    """The API server answers (cheap: /version, at most once per probe)."""
    async def api_server() -> tuple[bool, str]:
        try:
            await asyncio.wait_for(client.server_version(), 5)
            return True, ""
        except Exception as err:
            return False, f"API server {client.server}: {err}"

    probes.readiness["api-server"] = api_server
    probes.liveness["ping"] = lambda: True
