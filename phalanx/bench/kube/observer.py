"""When each pod of the bench is bound, as seen by one watch of its namespace.

The bench lists the namespace's pods once (all created), then follows a watch from that
list's resourceVersion and stamps, on the bench's monotonic clock, the moment it sees a
pod's `spec.nodeName` set. Both schedulers are observed by the same code, so the stamps
are comparable; the observer reads raw watch lines (no model decoding) so that it lags as
little as possible on a busy machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.client import Gone
from phalanx.cluster.kube.errors import error_from_status
from phalanx.cluster.kube.paths import collection_path

WATCH_SECONDS = 3600


class BindObserver:
    """`bound[name]`: monotonic time the pod was first seen bound (pods bound before the
    start are stamped with the start time)."""

    def __init__(self, kube: Any, namespace: str, expected: int,
                 on_bound: Callable[[int], None] | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.expected = expected
        self.on_bound = on_bound or (lambda n: None)
        self.created: set[str] = set()
        self.bound: dict[str, float] = {}
        self.node_of: dict[str, str] = {}
        self.all_bound = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._rv = ""

    async def start(self) -> None:
        """List once (the pods already there), then watch in the background."""
        path = collection_path(Pod, self.namespace)
        token = ""
        while True:
            query = [("limit", "500")] + ([("continue", token)] if token else [])
            data = await self.kube.transport.request("GET", path, query=query, kind="Pod")
            meta = data.get("metadata") or {}
            self._rv = self._rv or str(meta.get("resourceVersion") or "")
            for item in data.get("items") or ():
                self._see(item)
            token = meta.get("continue") or ""
            if not token:
                break
        self._task = asyncio.get_running_loop().create_task(self._watch(path))

    def _see(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        self.created.add(name)
        node = (obj.get("spec") or {}).get("nodeName")
        if node and name not in self.bound:
            self.bound[name] = time.monotonic()
            self.node_of[name] = node
            self.on_bound(len(self.bound))
            if len(self.bound) >= self.expected:
                self.all_bound.set()

    async def _watch(self, path: str) -> None:
        while True:
            query = [("watch", "1"), ("allowWatchBookmarks", "true"),
                     ("resourceVersion", self._rv), ("timeoutSeconds", str(WATCH_SECONDS))]
            async with self.kube.transport.stream_lines(
                    path, query=query, read_timeout=WATCH_SECONDS + 30) as lines:
                async for raw in lines:
                    obj = raw.get("object") or {}
                    if raw.get("type") == "ERROR":
                        code = int(obj.get("code") or 500)
                        if code == 410:
                            raise Gone(str(obj.get("message")))
                        raise error_from_status(code, obj, kind="Pod")
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self._rv = rv
                    if raw.get("type") in ("ADDED", "MODIFIED"):
                        self._see(obj)

    async def wait(self, timeout: float) -> bool:
        """True once every expected pod is bound; False after `timeout` seconds. A failed
        watch is raised."""
        assert self._task is not None, "start() first"
        waiter = asyncio.ensure_future(self.all_bound.wait())
        try:
            await asyncio.wait({waiter, self._task}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self._task.done() and not self.all_bound.is_set():
            self._task.result()  # raises what ended the watch
        return self.all_bound.is_set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
