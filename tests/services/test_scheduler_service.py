"""`phalanx scheduler` as a service: the cycle instrumentation and the service over HTTP
against the REST facade of a MemoryCluster (issue 15 item 1: every cycle raised
UnboundLocalError in the metrics wrapper and was counted as an error)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_nodes
from phalanx.scheduler.framework.config import default_configuration
from phalanx.services.metrics import PhalanxMetrics
from phalanx.services.scheduler import SchedulerServiceOptions, instrument, run_scheduler_service
from tests.cluster.kube.facade import Facade, start_facade
from tests.services.test_operator_service import free_ports, kubeconfig

PROFILE = "phalanx-scheduler"


def _pod(name: str, cpu: str) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": PROFILE, "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}})


def _attempts(metrics: PhalanxMetrics, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "phalanx_scheduling_attempts_total", {"profile": PROFILE, "result": result})
    return value or 0.0


def test_instrument_counts_scheduled_unschedulable_and_error(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> PhalanxMetrics:
        cluster = MemoryCluster()
        for node in make_nodes(2):
            await cluster.create(node)
        sched = Scheduler(cluster, default_configuration((PROFILE,)))
        inner = sched.schedule_one

        def crash_on_boom(qpi):  # type: ignore[no-untyped-def]
            if qpi.info.key == "default/boom":
                raise RuntimeError("a bug in a plugin")
            return inner(qpi)

        sched.schedule_one = crash_on_boom  # type: ignore[method-assign]
        metrics = PhalanxMetrics()
        instrument(sched, metrics)
        for pod in (_pod("fits", "1"), _pod("too-big", "1000"), _pod("boom", "1")):
            await cluster.create(pod)
        await sched.start()
        await wait_for_condition(lambda: _attempts(metrics, "error") >= 3
                                 and _attempts(metrics, "unschedulable") >= 1, timeout=30)
        await sched.wait_idle(timeout=30)
        await sched.stop()
        return metrics

    with caplog.at_level(logging.ERROR):
        metrics = run_virtual(main)
    assert _attempts(metrics, "scheduled") == 1
    assert _attempts(metrics, "unschedulable") >= 1
    assert _attempts(metrics, "error") >= 1
    assert not any("UnboundLocalError" in (r.exc_text or "") + r.getMessage()
                   for r in caplog.records)
    # The crashing pod's traceback is logged once; its retries get one line each.
    crashes = [r for r in caplog.records if "default/boom" in r.getMessage()]
    assert len(crashes) >= 3 and crashes[0].exc_info
    assert not any(r.exc_info for r in crashes[1:])
    count = metrics.registry.get_sample_value(
        "phalanx_scheduling_attempt_duration_seconds_count",
        {"profile": PROFILE, "result": "scheduled"})
    assert count == 1


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, mem: MemoryCluster, metrics_port: int,
                  hidden: tuple[type, ...] = ()) -> AsyncIterator[Facade]:
    """`phalanx scheduler`'s service over a facade of `mem` (without the `hidden` kinds)
    until the block ends; then it must stop cleanly (exit code 0)."""
    facade, runner, url = await start_facade(mem)
    for kind in hidden:
        del facade.kinds[(kind.API_VERSION, kind.PLURAL)]
    stop = asyncio.Event()
    [probe_port] = free_ports(1)
    opts = SchedulerServiceOptions(kubeconfig=kubeconfig(tmp_path, url), leader_elect=False,
                                   probe_port=probe_port, metrics_port=metrics_port,
                                   bind_address="127.0.0.1", tune_gc=False)
    service = asyncio.create_task(run_scheduler_service(opts, stop))
    try:
        yield facade
    finally:
        stop.set()
        code = await asyncio.wait_for(service, 30)
        await runner.cleanup()
    assert code == 0


async def _cluster(nodes: int, *pods: Pod) -> MemoryCluster:
    mem = MemoryCluster()
    for node in make_nodes(nodes):
        await mem.create(node)
    for pod in pods:
        await mem.create(pod)
    return mem


async def _scraped(metrics_port: int) -> str:
    async with aiohttp.ClientSession() as http, \
            http.get(f"http://127.0.0.1:{metrics_port}/metrics") as resp:
        return await resp.text()


async def _bound(mem: MemoryCluster, name: str) -> None:
    async def bound() -> bool:
        return bool((await mem.get(Pod, name, "default")).spec.node_name)

    assert await wait_for_condition(bound, timeout=30), f"pod default/{name} not bound"


def test_scheduler_service_binds_and_reports_metrics(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    [metrics_port] = free_ports(1)

    async def main() -> str:
        mem = await _cluster(2, _pod("fits", "1"), _pod("too-big", "1000"))
        async with serving(tmp_path, mem, metrics_port):
            await _bound(mem, "fits")

            async def both_counted() -> bool:
                text = await _scraped(metrics_port)
                return 'result="scheduled"} 1.0' in text and 'result="unschedulable"}' in text

            assert await wait_for_condition(both_counted, timeout=30), \
                await _scraped(metrics_port)
            return await _scraped(metrics_port)

    with caplog.at_level(logging.INFO):
        text = run_virtual(main)
    assert 'phalanx_scheduling_attempts_total{profile="phalanx-scheduler",result="error"}' \
        not in text
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records
                                                           if r.exc_info]


def test_scheduler_without_leader_election_is_not_ready_until_it_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe server starts before the Scheduler; a replica that does not wait for a
    lease must not answer ready in between."""
    import phalanx.services.scheduler as service_module

    probe_port, metrics_port = free_ports(2)
    release = asyncio.Event()
    real = service_module.run_with_leadership

    async def held(*args: Any, **kwargs: Any) -> int:
        await release.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(service_module, "run_with_leadership", held)

    async def main() -> None:
        mem = MemoryCluster()
        facade, runner, url = await start_facade(mem)
        stop = asyncio.Event()
        opts = SchedulerServiceOptions(kubeconfig=kubeconfig(tmp_path, url), leader_elect=False,
                                       probe_port=probe_port, metrics_port=metrics_port,
                                       bind_address="127.0.0.1", tune_gc=False)
        service = asyncio.create_task(run_scheduler_service(opts, stop))
        async with aiohttp.ClientSession() as http:
            async def readyz() -> tuple[int, str]:
                async with http.get(f"http://127.0.0.1:{probe_port}/readyz?verbose") as resp:
                    return resp.status, await resp.text()

            async def serving() -> bool:
                try:
                    await readyz()
                except aiohttp.ClientError:
                    return False
                return True

            assert await wait_for_condition(serving, timeout=30)
            status, text = await readyz()
            assert status == 500 and "[-]scheduler failed: the scheduler is starting" in text
            release.set()

            async def ready() -> bool:
                return (await readyz())[0] == 200

            assert await wait_for_condition(ready, timeout=30)
        stop.set()
        assert await asyncio.wait_for(service, 30) == 0
        await runner.cleanup()

    run_virtual(main)


def test_a_server_without_the_podgang_crd_still_gets_its_pods_scheduled(tmp_path: Path) -> None:
    """A cluster without Grove's CRDs: the gang-wait metric must not add a PodGang informer
    that can never sync (before, the service waited for it for ever and bound nothing)."""
    from phalanx.api.grove import PodGang

    [metrics_port] = free_ports(1)

    async def main() -> None:
        mem = await _cluster(1, _pod("fits", "1"))
        async with serving(tmp_path, mem, metrics_port, hidden=(PodGang,)) as facade:
            await _bound(mem, "fits")
            assert not [p for _, p in facade.requests if "podgangs" in p], facade.requests

    run_virtual(main)


def test_the_gang_wait_metric_counts_gangs_whose_crd_was_installed_after_start(
        tmp_path: Path) -> None:
    """PodGang not served at start, served later: the metric's informer is the deferred one
    the gang plugins read, so it starts with theirs and observes the gang's wait."""
    from phalanx.api.grove import PodGang
    from phalanx.cluster.deferred_informers import RECHECK_SECONDS
    from tests.scheduler.gang.builders import podgang

    [metrics_port] = free_ports(1)
    kind = (PodGang.API_VERSION, PodGang.PLURAL)

    async def main() -> None:
        mem = await _cluster(1, _pod("fits", "1"))
        async with serving(tmp_path, mem, metrics_port, hidden=(PodGang,)) as facade:
            await _bound(mem, "fits")  # running: PodGang found not served
            gang = podgang("g", {"w": 1})
            gang.metadata.labels["grove.io/scheduler-name"] = PROFILE
            created = await mem.create(gang)
            created.status.conditions = [{"type": "Scheduled", "status": "True",
                                          "reason": "PodsScheduled", "message": "",
                                          "lastTransitionTime": "2026-01-01T00:00:05Z"}]
            await mem.update_status(created)
            facade.kinds[kind] = PodGang  # the CRD installed
            await asyncio.sleep(RECHECK_SECONDS + 1)

            async def observed() -> bool:
                return f'phalanx_gang_wait_seconds_count{{scheduler="{PROFILE}"}} 1.0' \
                    in await _scraped(metrics_port)

            assert await wait_for_condition(observed, timeout=30), await _scraped(metrics_port)

    run_virtual(main)
