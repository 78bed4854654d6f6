"""`phalanx operator`: the Grove operator as a long-running service on a real cluster.

Every replica serves probes, metrics and the admission webhook (admission needs no
leadership, so the webhook stays available during a fail-over); only the replica holding
the Lease runs the controllers.

Namespaces: the operator's own (`--namespace`, else POD_NAMESPACE, else the kubeconfig's)
holds the webhook Service, so the certificate Secret and the certificate's DNS names are
there, as Grove's cert controller keeps them; the Lease is in
`leaderElection.resourceNamespace` when set, else in that same namespace. Each server
listens on its own `server.*.bindAddress` and port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.api.config import (
    ConfigError, OperatorConfiguration, ignored_fields, leader_election_problems,
    load_operator_config,
)
from phalanx.api.core import Pod
from phalanx.api.duration import parse_duration
from phalanx.cluster.admission import AdmissionChain
from phalanx.cluster.client import NotFound

from .certs import (
    ReloadingContext, ensure_shared_bundle, patch_ca_bundle, scratch_dir, service_dns_names,
)
from .gctune import collect_rarely, freeze_after_warmup
from .leader import LeaseTiming
from .metrics import PhalanxMetrics
from .runtime import (
    bind_controller_metrics, cache_sync_check, connect, install_signal_handlers,
    own_namespace, readiness_checks, run_with_leadership, setup_logging,
)
from .server import Probes, ServiceServer
from .webhook import AdmissionWebhook

log = logging.getLogger("phalanx.operator.service")

WEBHOOK_SERVICE = "phalanx-webhook"
MUTATING, VALIDATING = "phalanx-mutating-webhook", "phalanx-validating-webhook"
CERT_REFRESH_SECONDS = 3600.0


@dataclass
class OperatorServiceOptions:
    kubeconfig: str | None = None
    context: str | None = None
    config: str | None = None
    # The operator's own namespace (webhook Secret and DNS names; the Lease unless
    # leaderElection.resourceNamespace names another); None: POD_NAMESPACE, else kubeconfig's.
    namespace: str | None = None
    webhook: bool = True
    webhook_service: str = WEBHOOK_SERVICE
    leader_elect: bool | None = None  # None: as the configuration says
    # None: as the configuration's server section says
    probe_port: int | None = None
    metrics_port: int | None = None
    webhook_port: int | None = None
    # Freeze the objects of the informers' first sync and collect less often (gctune.py).
    tune_gc: bool = True


class _ChainAdapter:
    """What `install_admission` registers into: a MemoryCluster-like `register_admission`
    that fills the webhook's AdmissionChain instead."""

    def __init__(self, chain: AdmissionChain) -> None:
        self.chain = chain

    def register_admission(self, kind: Any, mutate: Any = None, validate: Any = None) -> None:
        self.chain.register(kind, mutate=mutate, validate=validate)


def _kind_lookup(api_version: str, kind: str) -> Any:
    from phalanx.api import registry

    try:
        return registry.get(api_version, kind)
    except LookupError:
        return None


def lease_timing(cfg: OperatorConfiguration) -> LeaseTiming:
    le = cfg.leader_election
    return LeaseTiming(parse_duration(le.lease_duration), parse_duration(le.renew_deadline),
                       parse_duration(le.retry_period))


async def _webhook_tls(client: Any, cfg: OperatorConfiguration, namespace: str,
                       service: str) -> tuple[ReloadingContext, asyncio.Task[None] | None]:
    hooks = cfg.server.webhooks
    if hooks.cert_provision_mode == "manual":
        # A mounted Secret (e.g. cert-manager's): reloaded when the files change.
        ctx = ReloadingContext(Path(hooks.server_cert_dir))

        async def reload_mounted() -> None:
            while True:
                await asyncio.sleep(60)
                ctx.reload_if_changed()

        return ctx, asyncio.get_running_loop().create_task(reload_mounted())
    directory = scratch_dir()
    names = service_dns_names(service, namespace)

    async def settle() -> bytes:
        bundle = await ensure_shared_bundle(client, secret_name=hooks.secret_name,
                                            namespace=namespace, dns_names=names)
        bundle.write(directory)
        return bundle.ca_pem

    ca = await settle()
    ctx = ReloadingContext(directory)
    await patch_ca_bundle(client, ca, mutating=MUTATING, validating=VALIDATING)

    async def refresh() -> None:
        # Renewal by any replica reaches the others through the Secret.
        while True:
            await asyncio.sleep(CERT_REFRESH_SECONDS)
            try:
                ca_now = await settle()
                ctx.reload_if_changed()
                await patch_ca_bundle(client, ca_now, mutating=MUTATING, validating=VALIDATING)
            except Exception as err:
                log.warning("webhook certificate refresh failed: %s", err)

    return ctx, asyncio.get_running_loop().create_task(refresh())


async def run_operator_service(
    opts: OperatorServiceOptions, stop: asyncio.Event | None = None
) -> int:
    """Run until `stop` is set (or SIGTERM/SIGINT); returns the exit code."""
    from phalanx.api.grove import PodCliqueSet
    from phalanx.operator.admission import install_admission
    from phalanx.operator.admission_mnnvl import preflight as mnnvl_preflight
    from phalanx.operator.manager import OperatorManager

    if opts.tune_gc:
        collect_rarely()
    cfg = load_operator_config(Path(opts.config) if opts.config else None)
    if opts.leader_elect is not None and opts.leader_elect != cfg.leader_election.enabled:
        # --leader-elect turns on what the config leaves off: its timing is checked now,
        # as it would have been had the config turned it on, naming the field.
        cfg.leader_election.enabled = opts.leader_elect
        problems = leader_election_problems(cfg.leader_election)
        if problems:
            raise ConfigError("invalid leaderElection for --leader-elect",
                              source=opts.config, errors=problems)
    for port, server in ((opts.probe_port, cfg.server.health_probes),
                         (opts.metrics_port, cfg.server.metrics),
                         (opts.webhook_port, cfg.server.webhooks)):
        if port is not None:
            server.port = port
    setup_logging(cfg.log_level, cfg.log_format)
    for line in ignored_fields(cfg):  # every replica says it, standbys too
        log.warning("OperatorConfiguration %s", line)
    conn = cfg.runtime_client_connection
    client = await connect(opts.kubeconfig, opts.context, field_manager="phalanx-operator",
                           qps=conn.qps, burst=conn.burst)
    # The operator creates, patches and deletes pods but never updates one whole: its pod
    # informer keeps no merge-patch bases, and pod watch events decode in one pass
    # (KubeCluster.decode; an update would read the pod first).
    client.lists_without_bases |= {Pod}
    # Grove's MNNVL preflight: before serving anything, as Grove's manager does.
    await mnnvl_preflight(client, cfg.network.auto_mnnvl_enabled)
    namespace = opts.namespace or own_namespace(client.default_namespace)
    lease_namespace = cfg.leader_election.resource_namespace or namespace
    stop = stop or asyncio.Event()
    install_signal_handlers(stop)
    metrics, probes = PhalanxMetrics(), Probes()
    readiness_checks(probes, client)
    background: list[asyncio.Task[None]] = []
    server: ServiceServer | None = None
    manager: OperatorManager | None = None
    probes.readiness["informer-sync"] = cache_sync_check(
        lambda: manager.manager.informers.informers if manager is not None else ())
    enabled = cfg.leader_election.enabled
    # Without leader election this replica runs the controllers: it is not ready until they
    # exist (then informer-sync holds it until their caches are filled). A standby has none.
    probes.readiness["controllers"] = lambda: (
        manager is not None or enabled, "the controllers are starting")
    try:
        if not await client.serves(PodCliqueSet):
            raise NotFound(f"the API server does not serve {PodCliqueSet.API_VERSION} "
                           f"{PodCliqueSet.PLURAL}: install the CRDs first "
                           "(phalanx manifests crds | kubectl apply -f -)")
        routes = []
        tls = None
        if opts.webhook:
            chain = AdmissionChain()
            import phalanx.backends  # noqa: F401  (registers every backend)
            from phalanx.backends.registry import BackendRegistry

            install_admission(_ChainAdapter(chain), BackendRegistry.from_config(cfg),
                              topology_aware=cfg.topology_aware_scheduling.enabled,
                              client=client, auto_mnnvl=cfg.network.auto_mnnvl_enabled)
            hook = AdmissionWebhook(chain, _kind_lookup, observe=metrics.observe_admission)
            routes = hook.routes()
            ctx, task = await _webhook_tls(client, cfg, namespace, opts.webhook_service)
            tls = ctx.context
            if task is not None:
                background.append(task)
        s = cfg.server
        server = ServiceServer(probes=probes, registry=metrics.registry,
                               host=s.health_probes.bind_address or "0.0.0.0",
                               http_port=s.health_probes.port,
                               metrics_host=s.metrics.bind_address or "0.0.0.0",
                               metrics_port=s.metrics.port,
                               webhook_host=s.webhooks.bind_address or "0.0.0.0",
                               webhook_routes=routes, webhook_port=s.webhooks.port, tls=tls)
        await server.start()

        async def lead() -> None:
            nonlocal manager
            # Admission runs in the webhook (all replicas), not in the manager.
            manager = OperatorManager(client, cfg, admission=False, report_ignored=False)
            bind_controller_metrics(metrics, lambda: manager.controllers if manager else [])
            await manager.start()  # returns once the informers' caches have synced
            if opts.tune_gc:
                freeze_after_warmup()
            try:
                await asyncio.Event().wait()
            finally:
                await manager.stop()

        # Built only when used: with election off the timing is not validated (as Grove).
        return await run_with_leadership(
            client, enabled=enabled, lease=cfg.leader_election.resource_name,
            namespace=lease_namespace, timing=lease_timing(cfg) if enabled else None,
            metrics=metrics, stop=stop, lead=lead, probes=probes)
    finally:
        for task in background:
            task.cancel()
        if server is not None:
            await server.stop()
        with contextlib.suppress(Exception):
            await client.close()
