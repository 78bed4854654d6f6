"""Components of the embedded stack as processes that can be SIGKILLed.

A `Process` (operator, scheduler) owns a `FencedClient` (its connection to the API server)
and every asyncio task created on its behalf (tracked through a context variable and a loop
task factory, see `track_tasks`). `kill()` acts as SIGKILL: the connection is cut at once
(later requests fail, watches end) and every task of the process is cancelled wherever it
is, with no shutdown path run: a reconcile half way through its writes stays half done, a
gang half way through binding stays half bound, unwritten Events are lost. The successor
process starts from whatever the API holds, which is the point of a restart test.

`FencedClient.kill_after(n)` arms the kill at the process's n-th next write (just before or
just after that write reaches the store), so a seeded test kills at reproducible, arbitrary
points. Work the API server does for a request (its own tasks) never belongs to the caller.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

from phalanx.api.base import ObjectMeta, Resource
from phalanx.cluster.client import (
    Client,
    ObjectList,
    PropagationPolicy,
    Selector,
    ServiceUnavailable,
    WatchEvent,
)
from phalanx.cluster.clock import Clock
from phalanx.cluster.scale import Scale

T = TypeVar("T", bound=Resource)


class ProcessKilled(ServiceUnavailable):
    """The calling process is dead (raised into its own in-flight requests)."""


# The process the running code belongs to (None: the test driver, kubelets, API server).
_PROCESS: contextvars.ContextVar[Process | None] = contextvars.ContextVar(
    "phalanx_bench_process", default=None)
_TRACKING = "_phalanx_bench_tracking"


def track_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Attribute every task created on `loop` to the process whose code created it
    (idempotent; an existing task factory is kept and wrapped)."""
    if getattr(loop, _TRACKING, False):
        return
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any],
                **kwargs: Any) -> asyncio.Future[Any]:
        context = kwargs.get("context")
        owner = context.get(_PROCESS) if context is not None else _PROCESS.get()
        if previous is not None:
            task = previous(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        if owner is not None and isinstance(task, asyncio.Task):
            owner.adopt(task)
        return task

    loop.set_task_factory(factory)
    setattr(loop, _TRACKING, True)


class Process:
    """One component's connection and tasks."""

    def __init__(self, name: str, api: Client) -> None:
        self.name = name
        self.client = FencedClient(api, name, self)
        self.tasks: set[asyncio.Task[Any]] = set()

    def adopt(self, task: asyncio.Task[Any]) -> None:
        if self.client.dead:
            task.cancel()  # a dead process starts nothing
            return
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Code (and the tasks it creates) inside the block belongs to this process."""
        token = _PROCESS.set(self)
        try:
            yield
        finally:
            _PROCESS.reset(token)

    @property
    def dead(self) -> bool:
        return self.client.dead

    def kill(self) -> None:
        """SIGKILL: cut the connection, cancel every task of the process (synchronous; safe
        to call from one of those tasks, which then ends at its next await)."""
        self.client.kill()

    def _cancel_tasks(self) -> None:
        for task in list(self.tasks):
            task.cancel()

    async def reap(self) -> None:
        """Wait until every task of the (killed) process has ended."""
        current = asyncio.current_task()
        while pending := [t for t in self.tasks if not t.done() and t is not current]:
            await asyncio.gather(*pending, return_exceptions=True)


class FencedClient:
    """Delegates to `inner` until killed. Implements `phalanx.cluster.client.Client`."""

    def __init__(self, inner: Client, name: str, process: Process | None = None) -> None:
        self.inner = inner
        self.name = name
        self.process = process
        self.dead = False
        self.killed = asyncio.Event()
        self.writes = 0
        # Writes the API server accepted from this component, by (verb, kind): who wrote
        # what, which the store (counting by verb and kind) cannot tell.
        self.accepted: Counter[tuple[str, str]] = Counter()
        self._kill_at: int | None = None
        self._kill_before_write = False
        self._streams: list[_FencedStream[Any]] = []

    # ------------------------------------------------------------------ killing

    def kill_after(self, writes: int, *, before_write: bool = False) -> None:
        """Die at this component's `writes`-th write from now: just before sending it
        (`before_write`) or just after the store applied it."""
        if writes < 1:
            raise ValueError(f"kill_after needs at least one write, got {writes}")
        self._kill_at = self.writes + writes
        self._kill_before_write = before_write

    def kill(self) -> None:
        """Cut the connection (the whole process dies with it when it has one)."""
        if self.dead:
            return
        self.dead = True
        if self.process is not None:
            self.process._cancel_tasks()
        self._kill_at = None
        self.killed.set()
        for stream in self._streams:
            stream.end()
        self._streams.clear()

    def _check(self) -> None:
        if self.dead:
            raise ProcessKilled(f"{self.name} was killed", kind="", name=self.name)

    async def _write(self, call: tuple[str, str], send: Callable[[], Awaitable[Any]]) -> Any:
        self._check()
        self.writes += 1
        due = self._kill_at is not None and self.writes >= self._kill_at
        if due and self._kill_before_write:
            self.kill()
            self._check()
        result = await _as_server(send)
        self.accepted[call] += 1
        if due:
            self.kill()
        self._check()  # a reply that arrives after death reaches no one
        return result

    # ------------------------------------------------------------------ Client

    @property
    def clock(self) -> Clock:
        return self.inner.clock

    async def get(self, kind: type[T], name: str, namespace: str | None = None) -> T:
        self._check()
        return await _as_server(lambda: self.inner.get(kind, name, namespace))

    async def list(self, kind: type[T], namespace: str | None = None, *,
                   label_selector: Selector = None,
                   field_selector: Selector = None) -> ObjectList[T]:
        self._check()
        return await _as_server(lambda: self.inner.list(
            kind, namespace, label_selector=label_selector, field_selector=field_selector))

    async def list_metadata(self, kind: type[Resource], namespace: str | None = None, *,
                            label_selector: Selector = None) -> ObjectList[ObjectMeta]:
        self._check()
        return await _as_server(lambda: self.inner.list_metadata(
            kind, namespace, label_selector=label_selector))

    async def create(self, obj: T, *,  # type: ignore[override]
                     returning: bool | Literal["metadata"] = True,
                     hand_over: bool = False) -> T | ObjectMeta | None:
        return await self._write(("create", obj.KIND), lambda: self.inner.create(
            obj, returning=returning, hand_over=hand_over))  # type: ignore[call-overload]

    async def update(self, obj: T, *, returning: bool = True) -> T | None:
        return await self._write(("update", obj.KIND),
                                 lambda: self.inner.update(obj, returning=returning))

    async def update_status(self, obj: T, *, returning: bool = True,  # type: ignore[override]
                            hand_over: bool = False) -> T | None:
        return await self._write(("update_status", obj.KIND), lambda: self.inner.update_status(
            obj, returning=returning, hand_over=hand_over))  # type: ignore[call-overload]

    async def patch(self, kind: type[T], name: str, patch: Mapping[str, Any],
                    namespace: str | None = None, *,
                    subresource: Literal["status"] | None = None,
                    returning: bool = True) -> T | None:
        verb = "patch_status" if subresource == "status" else "patch"
        return await self._write((verb, kind.KIND), lambda: self.inner.patch(
            kind, name, patch, namespace, subresource=subresource, returning=returning))

    async def delete(self, kind: type[T], name: str, namespace: str | None = None, *,
                     propagation_policy: PropagationPolicy = "Background",
                     uid: str | None = None) -> T | None:
        return await self._write(("delete", kind.KIND), lambda: self.inner.delete(
            kind, name, namespace, propagation_policy=propagation_policy, uid=uid))

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        await self._write(("bind", "Pod"), lambda: self.inner.bind(pod_name, namespace, node_name))

    async def get_scale(self, kind: type[Resource], name: str,
                        namespace: str | None = None) -> Scale:
        self._check()
        return await _as_server(lambda: self.inner.get_scale(kind, name, namespace))

    async def update_scale(self, kind: type[Resource], scale: Scale) -> Scale:
        return await self._write(("update_scale", kind.KIND),
                                 lambda: self.inner.update_scale(kind, scale))

    def watch(self, kind: type[T], namespace: str | None = None, *,
              resource_version: str | None = None, label_selector: Selector = None,
              field_selector: Selector = None) -> AsyncIterator[WatchEvent[T]]:
        stream = _FencedStream(self, self.inner.watch(
            kind, namespace, resource_version=resource_version,
            label_selector=label_selector, field_selector=field_selector))
        if self.dead:
            stream.end()
        else:
            self._streams.append(stream)
        return stream

    def _forget(self, stream: _FencedStream[Any]) -> None:
        if stream in self._streams:
            self._streams.remove(stream)


async def _as_server(send: Callable[[], Awaitable[Any]]) -> Any:
    """Run a request with no process attached: whatever the API server spawns for it (e.g.
    garbage collection after a delete) is the server's, not the caller's."""
    token = _PROCESS.set(None)
    try:
        return await send()
    finally:
        _PROCESS.reset(token)


class _FencedStream(AsyncIterator[WatchEvent[T]]):
    """A watch that ends (connection reset) when its process dies."""

    def __init__(self, owner: FencedClient, inner: AsyncIterator[WatchEvent[T]]) -> None:
        self._owner = owner
        self._inner = inner
        self._ended = False

    def end(self) -> None:
        self._ended = True
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()  # wakes a reader blocked in __anext__ (the stream ends)

    def __aiter__(self) -> _FencedStream[T]:
        return self

    async def __anext__(self) -> WatchEvent[T]:
        # A dead process's connections are reset: to its reader the stream just ends.
        if self._ended or self._owner.dead:
            raise StopAsyncIteration
        event = await self._inner.__anext__()
        if self._ended or self._owner.dead:
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        self._owner._forget(self)
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()
