"""`phalanx operator` as a service, over HTTP against the REST facade of a MemoryCluster:
kubeconfig loading, CRD check, Lease, webhook certificates and CA bundle, probes, metrics."""

from __future__ import annotations

import asyncio
import base64
import socket
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from phalanx.api.core import Lease
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
