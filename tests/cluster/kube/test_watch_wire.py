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
from phalanx.cluster.kube.convert import decode


def cm_event(kind: str, name: str, rv: str) -> dict[str, Any]:
    return {"type": kind, "object": {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": name, "namespace": "ns",
                                                  "resourceVersion": rv, "uid": name}}}


async def serve(script: list[list[dict[str, Any] | bytes] | int],
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
        for event in reply:  # bytes: sent as they are (a broken line)
            raw = event if isinstance(event, bytes) else json.dumps(event).encode()
            await resp.write(raw + b"\n")
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


ONE_PASS = pytest.mark.parametrize("one_pass", [False, True], ids=["parsed", "one-pass"])


def client(url: str, one_pass: bool) -> KubeCluster:
    """`one_pass`: ConfigMaps keep no merge-patch base, so their watch events are validated
    from the raw line (watch.py) instead of parsed first."""
    kube = KubeCluster.from_connection(connection_for(url))
    if one_pass:
        kube.lists_without_bases.add(ConfigMap)
    return kube


@ONE_PASS
def test_bookmarks_are_hidden_and_resumes_start_from_them(one_pass: bool) -> None:
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
        kube = client(url, one_pass)
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


@ONE_PASS
def test_events_decode_alike_and_a_truncated_line_resumes(
        one_pass: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same objects either way (unknown fields dropped, declared ones kept); a line cut
    off mid-object ends that stream and the watch resumes from the last version seen."""
    import phalanx.cluster.kube.watch as watch

    validated: list[type] = []
    real = watch.event_validator
    monkeypatch.setattr(watch, "event_validator", lambda k: validated.append(k) or real(k))
    rich = cm_event("ADDED", "a", "5")
    rich["object"]["metadata"].update(labels={"app": "x"}, managedFields=[{"manager": "m"}])
    rich["object"].update(data={"k": "v"}, someFutureField={"x": 1})
    truncated = json.dumps(cm_event("MODIFIED", "a", "6")).encode()[:40]

    async def main() -> None:
        runner, url, asked = await serve([[rich], [truncated], [cm_event("MODIFIED", "a", "7")]],
                                         hold=True)
        kube = client(url, one_pass)
        seen = []
        try:
            async for ev in kube.watch(ConfigMap, "ns", resource_version="3"):
                seen.append(ev)
                if len(seen) == 2:
                    break
        finally:
            await kube.close()
            await runner.cleanup()
        first = seen[0].object
        assert first == decode(ConfigMap, rich["object"])  # the parsed path's answer
        assert first.metadata.labels == {"app": "x"} and first.data == {"k": "v"}
        assert [(e.type, e.object.metadata.resource_version) for e in seen] == [
            ("ADDED", "5"), ("MODIFIED", "7")]
        assert [q["resourceVersion"] for q in asked] == ["3", "5", "5"]
        assert bool(validated) == one_pass

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
