"""`phalanx operator` on a real kube-apiserver with an OperatorConfiguration's server and
leaderElection sections, under the RBAC `phalanx manifests all --config` makes for it:

- `leaderElection.resourceNamespace` is the Lease's namespace only: the operator (running as
  the install's ServiceAccount) elects there, allowed by the Role the install puts there,
  while the webhook certificate Secret and its DNS names stay in the operator's own
  namespace (its Service's);
- each server binds its own `bindAddress`: probes, metrics and webhook answer on their
  address and nowhere else.

The test sets up its own namespaces, RBAC (cluster-wide objects under names of its own,
deleted at the end) and operator, and stops what it started.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
from typing import Any

import pytest

from phalanx.api.config import load_operator_config
from phalanx.api.core import Lease
from phalanx.api.crds import crds
from phalanx.cluster.client import NotFound
from phalanx.envtest import (
    Pending,
    apply_documents,
    install_crds,
    operator_config,
    start_operator,
    wait_until,
)
from phalanx.envtest.ports import free_port, http_get
from phalanx.manifests.install import InstallOptions, install_manifests
from phalanx.services.certs import CertBundle
from phalanx.services.kinds import Secret

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(150)]

READY_TIMEOUT = 60.0  # the operator's start-up: imports, Lease, informer sync, webhook server
LEASE, SECRET = "phalanx-operator-leader-election", "phalanx-webhook-server-cert"
PROBES, METRICS, WEBHOOKS = "127.0.0.1", "127.0.0.2", "127.0.0.3"
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def _rbac(cfg: dict[str, Any], ns: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The install's RBAC for this configuration: (Roles and bindings, cluster-wide ones
    renamed so nothing else on the shared server is touched)."""
    docs = [d for d in install_manifests(InstallOptions(
        namespace=ns, config=load_operator_config(cfg), scheduler=False))
        if d["kind"] in RBAC_KINDS]
    cluster = [d for d in docs if d["kind"].startswith("Cluster")]
    for doc in cluster:
        doc["metadata"]["name"] = f"{ns}-{doc['metadata']['name']}"
        if doc["kind"] == "ClusterRoleBinding":
            doc["roleRef"]["name"] = doc["metadata"]["name"]
    return [d for d in docs if d not in cluster], cluster


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def _tls_handshake(host: str, port: int) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=5) as raw, \
            ctx.wrap_socket(raw) as tls:
        return tls.version() is not None


def test_lease_namespace_and_bind_addresses_on_a_real_server(control_plane: Any) -> None:
    plane = control_plane
    own, leases = plane.create_namespace("operator-home"), plane.create_namespace("leases")
    ports = {"probes": free_port(), "metrics": free_port(), "webhooks": free_port()}
    cfg = operator_config(probe_port=ports["probes"], metrics_port=ports["metrics"],
                          webhook_port=ports["webhooks"], leader_election=True,
                          lease_namespace=leases)
    server = cfg["server"]
    server["healthProbes"]["bindAddress"] = PROBES
    server["metrics"]["bindAddress"] = METRICS
    server["webhooks"]["bindAddress"] = WEBHOOKS
    local, cluster = _rbac(cfg, own)
    assert sorted((d["kind"], d["metadata"]["namespace"]) for d in local) == [
        ("Role", leases), ("Role", own), ("RoleBinding", leases), ("RoleBinding", own)]

    async def admin(body: Any) -> Any:
        async with plane.client() as kube:
            return await asyncio.wait_for(body(kube), 60)

    async def setup(kube: Any) -> None:
        await install_crds(kube, crds())
        await apply_documents(kube, local + cluster)

    async def teardown(kube: Any) -> None:
        for doc in cluster:
            path = f"/apis/rbac.authorization.k8s.io/v1/{doc['kind'].lower()}s/" \
                   f"{doc['metadata']['name']}"
            try:
                await kube.transport.request("DELETE", path)
            except NotFound:
                pass

    operator = None
    try:
        asyncio.run(admin(setup))
        # As installed: the install's ServiceAccount, `--namespace` its own namespace.
        operator = start_operator(
            plane, config=cfg, webhook=True, namespace=own, name="op-config",
            kubeconfig=plane.service_account_kubeconfig(own, "phalanx-operator"),
            timeout=READY_TIMEOUT)  # ready: the Lease is held, the caches synced

        async def observed(kube: Any) -> tuple[str | None, list[str], list[str]]:
            lease = await kube.get(Lease, LEASE, leases)
            elsewhere = [n for n in (own,) if await _exists(kube, Lease, LEASE, n)]
            secret = await kube.get(Secret, SECRET, own)
            assert not await _exists(kube, Secret, SECRET, leases)
            cert = base64.b64decode(secret.data["tls.crt"])
            names = CertBundle(b"", cert, b"").dns_names()
            return lease.spec.holder_identity, elsewhere, names

        holder, elsewhere, names = asyncio.run(admin(observed))
        assert holder and not elsewhere
        assert f"phalanx-webhook.{own}.svc" in names
        assert not [n for n in names if leases in n], names

        # Each listener on its own address, and only there.
        bound = {(host, name) for name, port in ports.items()
                 for host in (PROBES, METRICS, WEBHOOKS) if _answers(host, port)}
        assert bound == {(PROBES, "probes"), (METRICS, "metrics"), (WEBHOOKS, "webhooks")}
        status, body = http_get(f"http://{METRICS}:{ports['metrics']}/metrics", timeout=5)
        assert status == 200 and f'phalanx_leader{{lease="{LEASE}"}} 1.0' in body.decode()
        assert _tls_handshake(WEBHOOKS, ports["webhooks"])
        assert not operator.tracebacks(), operator.log_text(3000)
    finally:
        if operator is not None:
            operator.stop()
        asyncio.run(admin(teardown))


def test_lease_timing_is_checked_when_the_config_is_read(control_plane: Any,
                                                         kube_namespace: str) -> None:
    """With leader election off its timing is not used (the operator runs); with it on, a
    retry period the elector cannot use stops the operator before it serves anything, exit
    1 naming the field (it was an internal error, exit 70, after the servers started)."""
    plane, ns = control_plane, kube_namespace

    async def setup() -> None:
        async with plane.client() as kube:
            await install_crds(kube, crds())

    asyncio.run(setup())
    started = []
    try:
        for enabled, timing in ((False, {"leaseDuration": "1s", "renewDeadline": "5s"}),
                                (True, {"leaseDuration": "15s", "renewDeadline": "10s",
                                        "retryPeriod": "12s"})):
            cfg = operator_config(probe_port=free_port(), metrics_port=free_port(),
                                  webhook_port=free_port(), leader_election=enabled,
                                  lease_namespace=ns)
            cfg["leaderElection"].update(timing)
            op = start_operator(plane, config=cfg, namespace=ns, wait=enabled is False,
                                timeout=READY_TIMEOUT, name=f"op-timing-{enabled}".lower())
            started.append(op)
            if enabled:
                wait_until(lambda op=op: not op.process.alive or Pending("running"), 60,
                           what="the operator to refuse its configuration", interval=0.2)
                assert op.process.returncode == 1, op.log_text(3000)
                log = op.log_text()
                assert "leaderElection.renewDeadline: must be greater than retryPeriod x 1.2" \
                    in log and "internal error" not in log, log
            else:
                assert op.probe()[0] == 200 and not op.tracebacks()
    finally:
        for op in started:
            op.stop()


async def _exists(kube: Any, kind: Any, name: str, ns: str) -> bool:
    try:
        await kube.get(kind, name, ns)
    except NotFound:
        return False
    return True
