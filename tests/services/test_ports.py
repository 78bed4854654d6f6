"""Default ports (issue 15 item 8): the operator and the scheduler run on one host without
flags, the webhook is not on 9443, and the operator's ports can be set by flag."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from typer.testing import CliRunner

from phalanx.api.config import OperatorConfiguration
from phalanx.cli.main import app
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.manifests import install_manifests
from phalanx.services.operator import OperatorServiceOptions, run_operator_service
from phalanx.services.scheduler import SchedulerServiceOptions
from tests.cluster.kube.facade import start_facade
from tests.services.test_operator_service import free_ports, kubeconfig


def test_operator_and_scheduler_defaults_do_not_clash() -> None:
    server = OperatorConfiguration().server
    operator = {server.webhooks.port, server.health_probes.port, server.metrics.port}
    sched = SchedulerServiceOptions()
    scheduler = {sched.probe_port, sched.metrics_port}
    assert len(operator) == 3 and len(scheduler) == 2 and not operator & scheduler
    assert 9443 not in operator | scheduler and 6443 not in operator | scheduler


def test_the_install_uses_each_components_own_ports() -> None:
    deployments = {d["metadata"]["name"]: d for d in install_manifests()
                   if d["kind"] == "Deployment"}

    def ports(name: str) -> set[int]:
        c = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        return {p["containerPort"] for p in c["ports"]}

    assert ports("phalanx-operator") == {2750, 2751, 2752}
    assert ports("phalanx-scheduler") == {2753, 2754}


def test_operator_flags_list_the_ports() -> None:
    out = CliRunner().invoke(app, ["operator", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--probe-port", "--metrics-port", "--webhook-port"):
        assert flag in out


def test_operator_serves_probes_and_metrics_on_the_ports_given(tmp_path: Path) -> None:
    probes, metrics = free_ports(2)

    async def main() -> None:
        import phalanx.api.grove  # noqa: F401  (the facade serves Grove kinds)
        import phalanx.api.podgang  # noqa: F401

        facade, runner, url = await start_facade(MemoryCluster())
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), webhook=False,
                                      leader_elect=False, probe_port=probes,
                                      metrics_port=metrics, namespace="phalanx-system",
                                      tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))
        try:
            async with aiohttp.ClientSession() as http:
                async def up() -> bool:
                    try:
                        async with http.get(f"http://127.0.0.1:{probes}/readyz") as r:
                            return r.status == 200
                    except aiohttp.ClientError:
                        return False

                assert await wait_for_condition(up, timeout=30), f"no /readyz on {probes}"
                async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                    assert r.status == 200 and "phalanx_" in await r.text()
        finally:
            stop.set()
            assert await asyncio.wait_for(service, 30) == 0
            await runner.cleanup()

    run_virtual(main())
