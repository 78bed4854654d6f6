"""A per-process view of the cluster that can be killed: what a crashed pod looks like to
the API server.

Each component (operator, scheduler) of the embedded stack gets its own `FencedClient`.
`kill()` makes every later request of that component fail and ends its watches, at once and
whatever it was doing, as a SIGKILL would: a reconcile half way through its writes stays half
done, a gang half way through binding stays half bound. The successor process then starts
from whatever the API holds, which is the point of a restart test.

`kill_after(n)` arms a crash at the component's n-th write (before or after that write
reaches the store, as chosen), so a seeded test kills at reproducible, arbitrary points.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, TypeVar

from phalanx.api.base import Resource
from phalanx.cluster.client import (
    Client,
    ObjectList,
    PropagationPolicy,
    Selector,
    ServiceUnavailable,
    WatchEvent,
)
from phalanx.cluster.clock import Clock

T = TypeVar("T", bound=Resource)


class ProcessKilled(ServiceUnavailable):
    """The calling process is dead (raised into its own in-flight requests)."""


class FencedClient:
    """Delegates to `inner` until killed. Implements `phalanx.cluster.client.Client`."""

    def __init__(self, inner: Client, name: str) -> None:
        self.inner = inner
        self.name = name
        self.dead = False
        self.killed = asyncio.Event()
        self.writes = 0
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
        if self.dead:
            return
        self.dead = True
        self._kill_at = None
        self.killed.set()
        for stream in self._streams:
            stream.end()
        self._streams.clear()

    def _check(self) -> None:
        if self.dead:
            raise ProcessKilled(f"{self.name} was killed", kind="", name=self.name)

    async def _write(self, call: Any) -> Any:
        self._check()
        self.writes += 1
        due = self._kill_at is not None and self.writes >= self._kill_at
        if due and self._kill_before_write:
            self.kill()
            self._check()
        result = await call
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
        return await self.inner.get(kind, name, namespace)

    async def list(self, kind: type[T], namespace: str | None = None, *,
                   label_selector: Selector = None,
                   field_selector: Selector = None) -> ObjectList[T]:
        self._check()
        return await self.inner.list(kind, namespace, label_selector=label_selector,
                                     field_selector=field_selector)

    async def create(self, obj: T) -> T:
        return await self._write(self.inner.create(obj))

    async def update(self, obj: T) -> T:
        return await self._write(self.inner.update(obj))

    async def update_status(self, obj: T) -> T:
        return await self._write(self.inner.update_status(obj))

    async def patch(self, kind: type[T], name: str, patch: Mapping[str, Any],
                    namespace: str | None = None, *,
                    subresource: Literal["status"] | None = None) -> T:
        return await self._write(self.inner.patch(kind, name, patch, namespace,
                                                  subresource=subresource))

    async def delete(self, kind: type[T], name: str, namespace: str | None = None, *,
                     propagation_policy: PropagationPolicy = "Background",
                     uid: str | None = None) -> None:
        await self._write(self.inner.delete(kind, name, namespace,
                                            propagation_policy=propagation_policy, uid=uid))

    async def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        await self._write(self.inner.bind(pod_name, namespace, node_name))

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
