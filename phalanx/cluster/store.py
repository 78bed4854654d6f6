"""Per-kind storage for the embedded cluster: objects, watch history and watchers.

Stored objects are never mutated after they are committed: every write stores a new
object. That makes the stored object safe to hand to every watcher as the one shared,
read-only event payload (fan-out is one deque append per matching watcher), and safe to
keep in the bounded history that lets watches resume from a resourceVersion.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from phalanx.api.base import Resource

from .client import Gone, WatchEvent
from .selectors import EVERYTHING, NO_FIELDS, FieldSelector, LabelSelector

if TYPE_CHECKING:
    from .faults import FaultInjector

T = TypeVar("T", bound=Resource)


class HistoryEntry(NamedTuple):
    rv: int
    event: WatchEvent[Any]  # the shared event delivered to unfiltered watchers
    prev: Resource | None  # the previous state, for selector transitions


class KindStore:
    """Objects of one kind, indexed by `namespace/name` and by namespace."""

    __slots__ = (
        "_ids",
        "by_namespace",
        "cls",
        "evicted_rv",
        "history",
        "kind",
        "objects",
        "watchers",
    )

    def __init__(self, cls: type[Resource], history_size: int) -> None:
        self.cls = cls
        self.kind = cls.KIND
        self.objects: dict[str, Resource] = {}
        self.by_namespace: dict[str, dict[str, Resource]] = {}
        self.history: deque[HistoryEntry] = deque(maxlen=history_size)
        # Every event with rv <= evicted_rv has left the history.
        self.evicted_rv = 0
        self.watchers: dict[int, Watcher] = {}
        self._ids = itertools.count()

    def put(self, key: str, obj: Resource) -> None:
        self.objects[key] = obj
        self.by_namespace.setdefault(obj.metadata.namespace or "", {})[key] = obj

    def pop(self, key: str, obj: Resource) -> None:
        del self.objects[key]
        ns = obj.metadata.namespace or ""
        bucket = self.by_namespace[ns]
        del bucket[key]
        if not bucket:
            del self.by_namespace[ns]

    def scan(self, namespace: str | None) -> Iterator[Resource]:
        if namespace is None:
            return iter(self.objects.values())
        return iter(self.by_namespace.get(namespace, {}).values())

    def record(self, rv: int, event: WatchEvent[Any], prev: Resource | None,
               faults: FaultInjector) -> None:
        """Append to the history and fan the event out to every watcher."""
        history = self.history
        if history.maxlen and len(history) == history.maxlen:
            self.evicted_rv = history[0].rv
        history.append(HistoryEntry(rv, event, prev))
        watchers = self.watchers.values()
        if faults.watch_drop_rate:  # a drop unregisters the watcher while we iterate
            watchers = list(watchers)  # type: ignore[assignment]
        for watcher in watchers:
            watcher.push(event, prev, faults)

    def add_watcher(
        self,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        since: int | None,
        current_rv: int,
        initial_state: bool,
    ) -> Watcher:
        if since is not None and since < self.evicted_rv:
            return self.failed_watcher(Gone(
                f"too old resource version: {since} (the {self.kind} watch history starts "
                f"after {self.evicted_rv}); re-list and watch from the list's version",
                kind=self.kind,
            ))
        watcher = Watcher(self, next(self._ids), namespace, labels, fields)
        if initial_state:
            for obj in self.scan(namespace):
                watcher.push(WatchEvent("ADDED", obj), None, None)
        elif since is not None and since < current_rv:
            for entry in self._since(since):
                watcher.push(entry.event, entry.prev, None)
        self.watchers[watcher.id] = watcher
        return watcher

    def failed_watcher(self, error: Exception) -> Watcher:
        """A watch that raises `error` on its first read (never registered)."""
        watcher = Watcher(self, -1, None, EVERYTHING, NO_FIELDS)
        watcher.error, watcher.ended = error, True
        return watcher

    def _since(self, rv: int) -> list[HistoryEntry]:
        out = []
        for entry in reversed(self.history):
            if entry.rv <= rv:
                break
            out.append(entry)
        out.reverse()
        return out


class Watcher:
    """One watch: a filter and a buffer. The store holds this, never the user's stream."""

    __slots__ = (
        "buf",
        "ended",
        "error",
        "fields",
        "filtered",
        "id",
        "labels",
        "namespace",
        "store",
        "waiter",
    )

    def __init__(self, store: KindStore, id_: int, namespace: str | None,
                 labels: LabelSelector, fields: FieldSelector) -> None:
        self.store = store
        self.id = id_
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.filtered = not (labels.empty and fields.empty)
        self.buf: deque[WatchEvent[Any]] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.error: Exception | None = None

    def _matches(self, obj: Resource) -> bool:
        return self.labels.matches(obj.metadata.labels) and self.fields.matches(obj)

    def push(self, event: WatchEvent[Any], prev: Resource | None,
             faults: FaultInjector | None) -> None:
        obj = event.object
        if self.namespace is not None and obj.metadata.namespace != self.namespace:
            return
        if self.filtered:
            # As the API server's watch cache: an object moving into the selection is
            # ADDED for this watcher, one moving out of it is DELETED, carrying the last
            # state the watcher was shown (the previous object, at the new version).
            now = self._matches(obj)
            if event.type == "MODIFIED":
                was = prev is not None and self._matches(prev)
                if not now and not was:
                    return
                if now:
                    if not was:
                        event = WatchEvent("ADDED", obj)
                else:
                    assert prev is not None
                    meta = prev.metadata.model_copy(
                        update={"resource_version": obj.metadata.resource_version})
                    event = WatchEvent("DELETED", prev.model_copy(update={"metadata": meta}))
            elif not now:
                return
        if faults is not None and faults.watch_drop_rate and faults.drop_watch(self.store.kind):
            self.end()
            return
        self.buf.append(event)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self) -> None:
        """End the stream after what is buffered (a dropped connection)."""
        self.ended = True
        self.store.watchers.pop(self.id, None)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class WatchStream(Generic[T]):
    """The async iterator `MemoryCluster.watch` returns.

    Closing it (`aclose()`, `close()`, leaving `async with`, or dropping it after `break`)
    unregisters the watcher at once.
    """

    __slots__ = ("__weakref__", "_w")

    def __init__(self, watcher: Watcher) -> None:
        self._w = watcher

    def __aiter__(self) -> WatchStream[T]:
        return self

    async def __anext__(self) -> WatchEvent[T]:
        w = self._w
        while True:
            if w.error is not None:
                err, w.error = w.error, None
                self.close()
                raise err
            if w.buf:
                return w.buf.popleft()
            if w.ended:
                raise StopAsyncIteration
            w.waiter = asyncio.get_running_loop().create_future()
            try:
                await w.waiter
            finally:
                w.waiter = None

    @property
    def pending(self) -> int:
        """Events buffered and not yet read."""
        return len(self._w.buf)

    @property
    def closed(self) -> bool:
        return self._w.ended and not self._w.buf

    def close(self) -> None:
        self._w.end()
        self._w.buf.clear()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> WatchStream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self._w.end()
