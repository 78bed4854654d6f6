"""The process's HTTP surface: /healthz, /readyz, /metrics (plain HTTP) and the admission
webhook (HTTPS, its own port). One small aiohttp server per process.

Probes follow the API server's convention: 200 "ok" or 500 with one line per failed check;
`?verbose` lists every check.
"""

from __future__ import annotations

import inspect
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from phalanx.ports import WEBHOOK_PORT
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("phalanx.server")

CheckResult = bool | tuple[bool, str]
Check = Callable[[], CheckResult | Awaitable[CheckResult]]


@dataclass
class Probes:
    liveness: dict[str, Check] = field(default_factory=dict)
    readiness: dict[str, Check] = field(default_factory=dict)

    async def run(self, checks: dict[str, Check]) -> tuple[bool, list[str]]:
        ok_all, lines = True, []
        for name, check in checks.items():
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
            except Exception as err:  # a failing check is a failed probe, not a 500 crash
                result = (False, f"{type(err).__name__}: {err}")
            ok, why = result if isinstance(result, tuple) else (bool(result), "")
            ok_all &= ok
            lines.append(f"[+]{name} ok" if ok else f"[-]{name} failed: {why or 'not ready'}")
        return ok_all, lines


def _probe_handler(probes: Probes, which: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        checks = probes.liveness if which == "healthz" else probes.readiness
        ok, lines = await probes.run(checks)
        verbose = "verbose" in request.query
        if ok:
            body = "\n".join([*lines, f"{which} check passed"]) if verbose else "ok"
            return web.Response(text=body + "\n")
        failed = lines if verbose else [line for line in lines if line.startswith("[-]")]
        return web.Response(text="\n".join([*failed, f"{which} check failed"]) + "\n",
                            status=500)

    return handler


class ServiceServer:
    """Serves probes on `host:http_port`, metrics on `metrics_host:metrics_port` and webhook
    routes over TLS on `webhook_host:webhook_port`; each host defaults to `host` (one
    address per listener, as Grove's manager binds each of its servers)."""

    def __init__(
        self,
        *,
        probes: Probes,
        registry: CollectorRegistry,
        host: str = "0.0.0.0",
        http_port: int = 8080,
        metrics_port: int | None = None,
        webhook_routes: list[web.RouteDef] | None = None,
        webhook_port: int = WEBHOOK_PORT,
        tls: ssl.SSLContext | None = None,
        metrics_host: str | None = None,
        webhook_host: str | None = None,
    ) -> None:
        self.probes = probes
        self.registry = registry
        self.host = host
        self.metrics_host = metrics_host or host
        self.webhook_host = webhook_host or host
        self._http_port = http_port
        # None: metrics share the probes port; otherwise their own listener.
        self._metrics_port = metrics_port
        self._webhook_port = webhook_port
        self._webhook_routes = webhook_routes or []
        self._tls = tls
        self._runners: list[web.AppRunner] = []
        self.http_port = 0
        self.metrics_port = 0
        self.webhook_port = 0

    def _http_app(self, *, probes: bool, metrics: bool) -> web.Application:
        app = web.Application()
        if probes:
            app.router.add_get("/healthz", _probe_handler(self.probes, "healthz"))
            app.router.add_get("/livez", _probe_handler(self.probes, "healthz"))
            app.router.add_get("/readyz", _probe_handler(self.probes, "readyz"))
        if metrics:
            app.router.add_get("/metrics", self._metrics)
        return app

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _serve(self, app: web.Application, host: str, port: int,
                     tls: ssl.SSLContext | None) -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        self._runners.append(runner)
        sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
        return int(sockets[0].getsockname()[1]) if sockets else port

    async def start(self) -> None:
        # Metrics on the probes' own address and port share its listener.
        shared = self._metrics_port is None or (self._metrics_port == self._http_port and
                                                self.metrics_host == self.host)
        self.http_port = await self._serve(
            self._http_app(probes=True, metrics=shared), self.host, self._http_port, None
        )
        if shared:
            self.metrics_port = self.http_port
        else:
            self.metrics_port = await self._serve(
                self._http_app(probes=False, metrics=True), self.metrics_host,
                self._metrics_port or 0, None
            )
        log.info("probes on http://%s:%d, metrics on http://%s:%d", self.host, self.http_port,
                 self.metrics_host, self.metrics_port)
        if self._webhook_routes:
            if self._tls is None:
                raise ValueError("the admission webhook needs a TLS context")
            app = web.Application(client_max_size=8 * 2**20)
            app.add_routes(self._webhook_routes)
            self.webhook_port = await self._serve(app, self.webhook_host, self._webhook_port,
                                                  self._tls)
            log.info("admission webhook on https://%s:%d", self.webhook_host, self.webhook_port)

    async def stop(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
