"""`phalanx operator` as a service, over HTTP against the REST facade of a MemoryCluster:
kubeconfig loading, CRD check, Lease, webhook certificates and CA bundle, probes, metrics."""

from __future__ import annotations

import asyncio
import base64
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from phalanx.api.core import Lease
from phalanx.api.errors import ManifestError
from phalanx.cluster.client import NotFound
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.services.kinds import Secret, ValidatingWebhookConfiguration
from phalanx.services.operator import OperatorServiceOptions, run_operator_service
from tests.cluster.kube.facade import start_facade


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def kubeconfig(tmp_path: Path, url: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "facade",
        "clusters": [{"name": "facade", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "facade", "context": {"cluster": "facade", "user": "u",
                                                    "namespace": "phalanx-system"}}],
    }))
    return str(path)


def test_operator_service_runs_leads_and_serves(tmp_path: Path) -> None:
    probes, metrics, webhooks = free_ports(3)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
        "leaderElection: {enabled: true}\n"
        f"server:\n  healthProbes: {{port: {probes}}}\n  metrics: {{port: {metrics}}}\n"
        f"  webhooks: {{port: {webhooks}}}\n"
    )

    async def main() -> None:
        import phalanx.api.grove  # noqa: F401  (the facade serves Grove kinds)
        import phalanx.api.podgang  # noqa: F401

        mem = MemoryCluster()
        await mem.create(ValidatingWebhookConfiguration.model_validate({
            "metadata": {"name": "phalanx-validating-webhook"},
            "webhooks": [{"name": "v", "clientConfig": {"service": {"name": "phalanx-webhook",
                                                                    "namespace": "x"}}}]}))
        facade, runner, url = await start_facade(mem)
        facade.register(Secret)
        facade.register(ValidatingWebhookConfiguration)
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), config=str(config),
                                      namespace="phalanx-system", tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))

        async def leading() -> bool:
            try:
                lease = await mem.get(Lease, "phalanx-operator-leader-election",
                                      "phalanx-system")
            except Exception:
                return False
            return bool(lease.spec.holder_identity)

        assert await wait_for_condition(leading, timeout=30)
        secret = await mem.get(Secret, "phalanx-webhook-server-cert", "phalanx-system")
        cfg = await mem.get(ValidatingWebhookConfiguration, "phalanx-validating-webhook")
        assert cfg.webhooks[0]["clientConfig"]["caBundle"] == secret.data["ca.crt"]
        assert b"BEGIN CERTIFICATE" in base64.b64decode(secret.data["tls.crt"])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{probes}/readyz?verbose") as resp:
                assert resp.status == 200, await resp.text()
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                text = await resp.text()
        assert 'phalanx_leader{lease="phalanx-operator-leader-election"} 1.0' in text
        assert "phalanx_workqueue_depth" in text
        stop.set()
        assert await asyncio.wait_for(service, 30) == 0
        lease = await mem.get(Lease, "phalanx-operator-leader-election", "phalanx-system")
        assert not lease.spec.holder_identity  # released on a clean stop
        await runner.cleanup()

    run_virtual(main())


def test_operator_without_leader_election_is_not_ready_until_its_controllers_exist(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The probe server starts before the controllers; a replica that does not wait for a
    lease must not answer ready in between (a caller would send work no cache can see)."""
    import phalanx.services.operator as service_module

    probes, metrics, webhooks = free_ports(3)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
        "leaderElection: {enabled: false}\n"
        f"server:\n  healthProbes: {{port: {probes}}}\n  metrics: {{port: {metrics}}}\n"
        f"  webhooks: {{port: {webhooks}}}\n"
    )
    release = asyncio.Event()
    real = service_module.run_with_leadership

    async def held(*args: Any, **kwargs: Any) -> int:
        await release.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(service_module, "run_with_leadership", held)

    async def readyz(http: aiohttp.ClientSession) -> tuple[int, str]:
        async with http.get(f"http://127.0.0.1:{probes}/readyz?verbose") as resp:
            return resp.status, await resp.text()

    async def main() -> None:
        import phalanx.api.grove  # noqa: F401  (the facade serves Grove kinds)
        import phalanx.api.podgang  # noqa: F401

        mem = MemoryCluster()
        facade, runner, url = await start_facade(mem)
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), config=str(config),
                                      namespace="phalanx-system", webhook=False,
                                      tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))
        async with aiohttp.ClientSession() as http:
            async def serving() -> bool:
                try:
                    await readyz(http)
                except aiohttp.ClientError:
                    return False
                return True

            assert await wait_for_condition(serving, timeout=30)
            status, text = await readyz(http)
            assert status == 500 and "[-]controllers failed: the controllers are starting" in text
            release.set()

            async def ready() -> bool:
                return (await readyz(http))[0] == 200

            assert await wait_for_condition(ready, timeout=30)
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as resp:
                text = await resp.text()
        assert "phalanx_asyncio_tasks" in text and "process_resident_memory_bytes" in text
        stop.set()
        assert await asyncio.wait_for(service, 30) == 0
        await runner.cleanup()

    run_virtual(main())


def _service_config(tmp_path: Path, text: str) -> tuple[Path, list[int]]:
    ports = free_ports(3)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n" + text
        .replace("PROBES", str(ports[0])).replace("METRICS", str(ports[1]))
        .replace("WEBHOOKS", str(ports[2])))
    return config, ports


async def _facade() -> tuple[MemoryCluster, Any, str]:
    import phalanx.api.grove
    import phalanx.api.podgang  # noqa: F401  (the facade serves Grove kinds)

    mem = MemoryCluster()
    facade, runner, url = await start_facade(mem)
    facade.register(Secret)
    facade.register(ValidatingWebhookConfiguration)
    return mem, runner, url


def test_resource_namespace_moves_the_lease_only(tmp_path: Path, monkeypatch: Any) -> None:
    """leaderElection.resourceNamespace is where the Lease is; the webhook certificate's
    Secret and DNS names stay in the operator's own namespace (its Service's), as Grove's
    cert controller keeps them."""
    from phalanx.services.certs import _bundle_from_secret

    monkeypatch.setenv("POD_NAMESPACE", "phalanx-system")
    config, _ = _service_config(tmp_path, (
        "leaderElection: {enabled: true, resourceNamespace: kube-system}\n"
        "server: {healthProbes: {port: PROBES}, metrics: {port: METRICS}, "
        "webhooks: {port: WEBHOOKS}}\n"))

    async def main() -> None:
        mem, runner, url = await _facade()
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), config=str(config),
                                      tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))

        async def leading() -> bool:
            try:
                lease = await mem.get(Lease, "phalanx-operator-leader-election", "kube-system")
            except NotFound:
                return False
            return bool(lease.spec.holder_identity)

        try:
            assert await wait_for_condition(leading, timeout=30)
            leases = [(x.namespace, x.name) for x in (await mem.list(Lease)).items]
            assert leases == [("kube-system", "phalanx-operator-leader-election")]
            secrets = [(x.namespace, x.name) for x in (await mem.list(Secret)).items]
            assert secrets == [("phalanx-system", "phalanx-webhook-server-cert")]
            bundle = _bundle_from_secret((await mem.list(Secret)).items[0])
            assert bundle is not None
            assert "phalanx-webhook.phalanx-system.svc" in bundle.dns_names()
            assert not [n for n in bundle.dns_names() if "kube-system" in n]
        finally:
            stop.set()
            assert await asyncio.wait_for(service, 30) == 0
            await runner.cleanup()

    run_virtual(main())


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def test_each_server_binds_its_own_address(tmp_path: Path) -> None:
    """server.healthProbes/metrics/webhooks.bindAddress, each for its own listener (Grove's
    manager binds each server on its own address)."""
    config, (probes, metrics, webhooks) = _service_config(tmp_path, (
        "server:\n  healthProbes: {bindAddress: 127.0.0.1, port: PROBES}\n"
        "  metrics: {bindAddress: 127.0.0.2, port: METRICS}\n"
        "  webhooks: {bindAddress: 127.0.0.3, port: WEBHOOKS}\n"))

    async def main() -> None:
        _, runner, url = await _facade()
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), config=str(config),
                                      namespace="phalanx-system", tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))
        try:
            async def up() -> bool:
                return await asyncio.to_thread(_listening, "127.0.0.3", webhooks)

            assert await wait_for_condition(up, timeout=30)
            where = {(host, port): await asyncio.to_thread(_listening, host, port)
                     for port in (probes, metrics, webhooks)
                     for host in ("127.0.0.1", "127.0.0.2", "127.0.0.3")}
            assert {k for k, v in where.items() if v} == {
                ("127.0.0.1", probes), ("127.0.0.2", metrics), ("127.0.0.3", webhooks)}
            async with aiohttp.ClientSession() as http, \
                    http.get(f"http://127.0.0.2:{metrics}/metrics") as resp:
                assert resp.status == 200 and "phalanx_" in await resp.text()
        finally:
            stop.set()
            assert await asyncio.wait_for(service, 30) == 0
            await runner.cleanup()

    run_virtual(main())


def test_lease_timing_is_not_used_with_leader_election_off(tmp_path: Path) -> None:
    """As Grove: with leader election off its timing is neither validated nor used (no
    "internal error" after the servers started)."""
    config, (probes, _, _) = _service_config(tmp_path, (
        "leaderElection: {enabled: false, leaseDuration: 1s, renewDeadline: 5s}\n"
        "server: {healthProbes: {port: PROBES}, metrics: {port: METRICS}, "
        "webhooks: {port: WEBHOOKS}}\n"))

    async def main() -> None:
        _, runner, url = await _facade()
        stop = asyncio.Event()
        opts = OperatorServiceOptions(kubeconfig=kubeconfig(tmp_path, url), config=str(config),
                                      namespace="phalanx-system", webhook=False, tune_gc=False)
        service = asyncio.create_task(run_operator_service(opts, stop))
        try:
            async with aiohttp.ClientSession() as http:
                async def ready() -> bool:
                    if service.done():
                        return True  # its exception is raised below
                    try:
                        async with http.get(f"http://127.0.0.1:{probes}/readyz") as r:
                            return r.status == 200
                    except aiohttp.ClientError:
                        return False

                assert await wait_for_condition(ready, timeout=30)
            assert not service.done()
        finally:
            stop.set()
            assert await asyncio.wait_for(service, 30) == 0
            await runner.cleanup()

    run_virtual(main())


def test_leader_elect_flag_checks_the_timing_it_turns_on(tmp_path: Path) -> None:
    """--leader-elect on a config whose election is off: the timing is validated before
    anything is served, naming the field (never an internal error)."""
    from phalanx.api.config import ConfigError

    config, _ = _service_config(tmp_path, "leaderElection: {leaseDuration: 1s, "
                                          "renewDeadline: 5s}\n")
    opts = OperatorServiceOptions(kubeconfig=str(tmp_path / "nowhere"), config=str(config),
                                  leader_elect=True, tune_gc=False)
    with pytest.raises(ConfigError) as err:
        run_virtual(run_operator_service(opts, asyncio.Event()))
    assert [e.path for e in err.value.errors] == ["leaderElection.leaseDuration"]
    assert str(config) in str(err.value)


def test_phalanx_operator_refuses_bad_lease_timing_naming_the_field(tmp_path: Path) -> None:
    """`phalanx operator` with leader election on and a retryPeriod the elector cannot use:
    exit 1 with the field named, before connecting (no exit 70 after serving)."""
    from typer.testing import CliRunner

    from phalanx.cli.main import app

    config, _ = _service_config(tmp_path, (
        "leaderElection: {enabled: true, leaseDuration: 15s, renewDeadline: 10s, "
        "retryPeriod: 12s}\n"))
    result = CliRunner().invoke(app, ["operator", "--kubeconfig", str(tmp_path / "nowhere"),
                                      "--config", str(config), "--no-tune-gc"])
    assert isinstance(result.exception, ManifestError), result.output
    assert "leaderElection.renewDeadline: must be greater than retryPeriod x 1.2" in \
        str(result.exception)
