"""A Kubernetes REST facade over MemoryCluster, for testing KubeCluster's wire code in CI.

It speaks the API server's HTTP protocol (paths, list pagination, JSON-lines watch with
ERROR/410 and BOOKMARK events, merge patch, the binding, status and scale subresources,
metav1.Status errors) and delegates the semantics to MemoryCluster. It is not a substitute
for a real kube-apiserver (tests marked `envtest` use one when KUBEBUILDER_ASSETS is set),
but it lets the whole contract suite exercise KubeCluster end to end in every CI run.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web

import phalanx.api.core  # noqa: F401  (the kinds the facade serves)
import phalanx.api.pod  # noqa: F401
from phalanx.api.base import Resource
from phalanx.cluster.client import ApiError, Invalid, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.kube import KubeCluster, connection_for
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import from_dict
from phalanx.cluster.scale import Scale

from . import events_api


def _all_kinds() -> Iterator[type[Resource]]:
    seen: set[type] = set()
    stack = list(Resource.__subclasses__())
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        stack.extend(cls.__subclasses__())
        if cls.API_VERSION and cls.PLURAL and cls.KIND:
            yield cls


def _status(err: ApiError) -> web.Response:
    details: dict[str, Any] = {}
    if err.name:
        details["name"] = err.name
    if err.kind:
        details["kind"] = err.kind
    if isinstance(err, Invalid) and err.field:
        details["causes"] = [{"field": err.field, "message": err.message}]
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": err.message,
        "reason": err.reason,
        "details": details,
        "code": err.code,
    }
    return web.json_response(body, status=err.code)


class Facade:
    def __init__(self, cluster: MemoryCluster, *, bookmark_interval: float = 0.0) -> None:
        self.cluster = cluster
        self.bookmark_interval = bookmark_interval
        self.kinds: dict[tuple[str, str], type[Resource]] = {}
        for cls in _all_kinds():
            # Several classes may claim one kind (tests define their own); first wins.
            self.kinds.setdefault((cls.API_VERSION, cls.PLURAL), cls)
        self.requests: list[tuple[str, str]] = []  # (method, path) for assertions
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self.handle)

    def register(self, cls: type[Resource]) -> None:
        self.kinds[(cls.API_VERSION, cls.PLURAL)] = cls

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        try:
            return await self._route(request)
        except ApiError as err:
            return _status(err)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["version"]:
            return web.json_response({"major": "1", "minor": "35", "gitVersion": "facade"})
        if parts[:1] == ["api"] and len(parts) >= 2:
            gv, rest = parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise NotFound("the server could not find the requested resource")
        if not rest:
            resources = [
                {"name": plural, "namespaced": cls.NAMESPACED, "kind": cls.KIND}
                for (v, plural), cls in self.kinds.items() if v == gv
            ]
            # As kube-apiserver lists them: a kind's status subresource is a resource too.
            resources += [{"name": f"{plural}/status", "namespaced": cls.NAMESPACED,
                           "kind": cls.KIND}
                          for (v, plural), cls in self.kinds.items() if v == gv and cls.HAS_STATUS]
            if not resources:
                raise NotFound("the server could not find the requested resource")
            return web.json_response({"kind": "APIResourceList", "groupVersion": gv,
                                      "resources": resources})
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (gv, rest[2]) in self.kinds:
            namespace, rest = rest[1], rest[2:]
        if gv == events_api.GROUP_VERSION and rest[0] == "events":
            # One storage with core/v1 Events, as on kube-apiserver.
            return await events_api.handle(self.cluster, request, namespace,
                                           rest[1] if len(rest) > 1 else None)
        cls = self.kinds.get((gv, rest[0]))
        if cls is None:
            raise NotFound("the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if name is None:
            return await self._collection(request, cls, namespace)
        return await self._object(request, cls, namespace, name, sub)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        return json.loads(raw) if raw else None

    async def _collection(
        self, request: web.Request, cls: type[Resource], ns: str | None
    ) -> web.StreamResponse:
        q = request.query
        if request.method == "POST":
            body = await self._body(request)
            if ns:
                body.setdefault("metadata", {}).setdefault("namespace", ns)
            obj = from_dict(cls, body)
            created = await self.cluster.create(obj)
            return web.json_response(created.to_dict(), status=201)
        if request.method != "GET":
            raise ApiError("method not allowed")
        if q.get("watch") in ("1", "true"):
            return await self._watch(request, cls, ns)
        listed = await self.cluster.list(
            cls, ns, label_selector=q.get("labelSelector") or None,
            field_selector=q.get("fieldSelector") or None,
        )
        items = sorted(listed.items, key=lambda o: o.key)
        rv = listed.resource_version
        offset = 0
        if q.get("continue"):
            token = json.loads(base64.b64decode(q["continue"]))
            offset, rv = token["offset"], token["rv"]
        limit = int(q.get("limit") or 0)
        page = items[offset: offset + limit] if limit else items[offset:]
        meta: dict[str, Any] = {"resourceVersion": rv}
        if limit and offset + limit < len(items):
            token = {"offset": offset + limit, "rv": rv}
            meta["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
        return web.json_response({
            "kind": f"{cls.KIND}List", "apiVersion": cls.API_VERSION, "metadata": meta,
            # Like the real server: list items carry no apiVersion/kind.
            "items": [{k: v for k, v in o.to_dict().items() if k not in ("apiVersion", "kind")}
                      for o in page],
        })

    async def _watch(
        self, request: web.Request, cls: type[Resource], ns: str | None
    ) -> web.StreamResponse:
        q = request.query
        rv = q.get("resourceVersion") or None
        timeout = float(q.get("timeoutSeconds") or 1800)
        bookmarks = q.get("allowWatchBookmarks") == "true" and self.bookmark_interval > 0
        # Register first, then send headers: a client that saw the headers knows the
        # watch is in place (as with kube-apiserver).
        stream = self.cluster.watch(cls, ns, resource_version=rv,
                                    label_selector=q.get("labelSelector") or None,
                                    field_selector=q.get("fieldSelector") or None)
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        last_rv = rv or self.cluster.resource_version

        async def send(kind: str, obj: dict[str, Any]) -> None:
            await resp.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pending: asyncio.Task[Any] | None = None
        try:
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    break
                wait = min(left, self.bookmark_interval) if bookmarks else left
                if pending is None:
                    pending = asyncio.ensure_future(stream.__anext__())
                done, _ = await asyncio.wait({pending}, timeout=wait)
                if not done:
                    if bookmarks:
                        await send("BOOKMARK", {"kind": cls.KIND, "apiVersion": cls.API_VERSION,
                                                "metadata": {"resourceVersion": last_rv}})
                    continue
                task, pending = pending, None
                try:
                    event = task.result()
                except StopAsyncIteration:
                    break
                except ApiError as err:
                    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": err.message, "reason": err.reason, "code": err.code}
                    await send("ERROR", status)
                    break
                last_rv = event.object.metadata.resource_version or last_rv
                await send(event.type, event.object.to_dict())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if pending is not None:
                pending.cancel()
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return resp

    async def _object(
        self, request: web.Request, cls: type[Resource], ns: str | None, name: str,
        sub: str | None,
    ) -> web.StreamResponse:
        method = request.method
        if sub == "binding" and method == "POST":
            body = await self._body(request)
            await self.cluster.bind(name, ns or "default", body["target"]["name"])
            return web.json_response({"kind": "Status", "status": "Success", "code": 201},
                                     status=201)
        if sub == "scale" and method in ("GET", "PUT"):
            if method == "GET":
                scale = await self.cluster.get_scale(cls, name, ns)
            else:
                sent = Scale.from_dict(await self._body(request))
                sent.name, sent.namespace = name, ns
                scale = await self.cluster.update_scale(cls, sent)
            return web.json_response(scale.to_dict())
        if sub not in (None, "status"):
            raise NotFound(f"no subresource {sub}")
        if method == "GET":
            return web.json_response((await self.cluster.get(cls, name, ns)).to_dict())
        if method == "PATCH":
            ctype = request.content_type
            body = await self._body(request)
            if ctype == "application/merge-patch+json":
                obj = await self.cluster.patch(
                    cls, name, body, ns, subresource="status" if sub else None
                )
            elif ctype == "application/apply-patch+yaml":
                # Approximation of server-side apply: create, or merge the applied intent.
                try:
                    obj = await self.cluster.patch(cls, name, body, ns,
                                                   subresource="status" if sub else None)
                except NotFound:
                    obj = await self.cluster.create(from_dict(cls, body))
            else:
                return web.json_response({"message": f"unsupported {ctype}"}, status=415)
            return web.json_response(obj.to_dict())
        if method == "PUT":
            obj = from_dict(cls, await self._body(request))
            updated = await (self.cluster.update_status(obj) if sub else self.cluster.update(obj))
            return web.json_response(updated.to_dict())
        if method == "DELETE":
            opts = await self._body(request) or {}
            left = await self.cluster.delete(
                cls, name, ns, propagation_policy=opts.get("propagationPolicy", "Background"),
                uid=(opts.get("preconditions") or {}).get("uid"),
            )
            if left is not None:  # terminating: the object, as kube-apiserver answers
                return web.json_response(left.to_dict())
            return web.json_response({"kind": "Status", "status": "Success", "code": 200})
        raise ApiError(f"method {method} not allowed")


async def start_facade(
    cluster: MemoryCluster, *, bookmark_interval: float = 0.0
) -> tuple[Facade, web.AppRunner, str]:
    """Serve `cluster` on 127.0.0.1 (a free port); returns the facade, runner and URL."""
    facade = Facade(cluster, bookmark_interval=bookmark_interval)
    runner = web.AppRunner(facade.app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return facade, runner, f"http://127.0.0.1:{port}"


def run_over_facade(
    test: Callable[[KubeCluster, MemoryCluster, Facade], Awaitable[None]], *,
    shared_clock: bool = False, bookmark_interval: float = 0.0,
) -> None:
    """Run `test(kube, memory_cluster, facade)` on virtual time, KubeCluster talking HTTP
    to a facade of a fresh MemoryCluster. `shared_clock`: KubeCluster reads the facade's
    virtual clock (timestamps it writes compare equal to the server's)."""
    async def main() -> None:
        mem = MemoryCluster()
        facade, runner, url = await start_facade(mem, bookmark_interval=bookmark_interval)
        kube = KubeCluster.from_connection(connection_for(url))
        if shared_clock:
            kube._clock = mem.clock
        try:
            await test(kube, mem, facade)
        finally:
            await kube.close()
            await runner.cleanup()

    run_virtual(main())


def facade_client() -> KubeCluster:
    """A KubeCluster talking HTTP to a fresh facade, built synchronously inside a running
    loop (as `client_factory()` is called). The listening socket is bound at once, so the
    kernel queues connections until the server task, started here, begins accepting."""
    mem = MemoryCluster()
    facade = Facade(mem)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]

    async def serve() -> None:
        runner = web.AppRunner(facade.app, access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        try:
            await asyncio.Event().wait()  # until the test's loop cancels us
        finally:
            await kube.close()
            await runner.cleanup()

    kube = KubeCluster.from_connection(connection_for(f"http://127.0.0.1:{port}"))
    kube._clock = mem.clock  # the facade's virtual clock, so timestamps compare equal
    kube.facade = facade  # type: ignore[attr-defined]  # for tests that inspect requests
    kube._serve_task = asyncio.get_running_loop().create_task(serve())  # type: ignore[attr-defined]
    return kube
