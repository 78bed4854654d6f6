"""Watch edge cases against a scripted server: bookmarks, resumes, 410, dropped servers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from phalanx.api.core import ConfigMap
from phalanx.cluster.client import Gone, ServiceUnavailable
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.kube import KubeCluster, connection_for


def cm_event(kind: str, name: str, rv: str) -> dict[str, Any]:
    return {"type": kind, "object": {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": name, "namespace": "ns",
                                                  "resourceVersion": rv, "uid": name}}}


async def serve(script: list[list[dict[str, Any]] | int],
                hold: bool = False) -> tuple[web.AppRunner, str, list]:
    """Each watch request gets the next scripted reply: a list of events, or an HTTP code.
    `hold`: keep the last stream open after its events (until the server goes away)."""
    asked: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        asked.append(dict(request.query))
        reply = script.pop(0)
        if isinstance(reply, int):
            return web.json_response({"kind": "Status", "code": reply, "message": "too old",
                                      "reason": "Expired"}, status=reply)
        resp = web.StreamResponse()
        await resp.prepare(request)
        for event in reply:
            await resp.write(json.dumps(event).encode() + b"\n")
        if hold and not script:
            await asyncio.sleep(3600)
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/configmaps", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}", asked


def test_bookmarks_are_hidden_and_resumes_start_from_them() -> None:
    async def main() -> None:
        runner, url, asked = await serve([
            [cm_event("ADDED", "a", "5"),
             {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                                             "metadata": {"resourceVersion": "9"}}}],
            # the server closed the first watch (timeoutSeconds); the resume asks for 9
            [cm_event("MODIFIED", "a", "12"),
             {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                          "message": "too old resource version: 12 (40)"}}],
        ])
        kube = KubeCluster.from_connection(connection_for(url))
        seen = []
        try:
            with pytest.raises(Gone):
                async for ev in kube.watch(ConfigMap, "ns", resource_version="3"):
                    seen.append((ev.type, ev.object.metadata.resource_version))
        finally:
            await kube.close()
            await runner.cleanup()
        assert seen == [("ADDED", "5"), ("MODIFIED", "12")]
        assert [q["resourceVersion"] for q in asked] == ["3", "9"]
        assert all(q["allowWatchBookmarks"] == "true" and q["watch"] == "1" for q in asked)

    run_virtual(main())


def test_http_410_at_start_is_gone() -> None:
    async def main() -> None:
        runner, url, _ = await serve([410])
        kube = KubeCluster.from_connection(connection_for(url))
        try:
            with pytest.raises(Gone):
                async for _ in kube.watch(ConfigMap, "ns", resource_version="1"):
                    pass
        finally:
            await kube.close()
            await runner.cleanup()

    run_virtual(main())


def test_unreachable_server_raises_first_then_ends_streams() -> None:
    async def main() -> None:
        runner, url, _ = await serve([[cm_event("ADDED", "a", "5")]], hold=True)
        kube = KubeCluster.from_connection(connection_for(url))
        seen = []
        try:
            stream = kube.watch(ConfigMap, "ns", resource_version="1")
            async for ev in stream:
                seen.append(ev.object.name)
                await runner.cleanup()  # the server goes away mid-watch
            # ...so the resume fails and the stream ends quietly
            with pytest.raises(ServiceUnavailable):
                async for _ in kube.watch(ConfigMap, "ns", resource_version="5"):
                    pass
        finally:
            await kube.close()
        assert seen == ["a"]

    run_virtual(main())
