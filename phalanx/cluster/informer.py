"""Shared informers: a watched, locally cached view of one kind, as client-go's.

    factory = InformerFactory(client)   # informer_factory.py
    pods = factory.informer(Pod, "team-a")
    pods.add_handler(on_add=..., on_update=lambda old, new: ..., on_delete=...)
    pods.add_index("node", lambda p: [p.spec.node_name] if p.spec.node_name else [])
    factory.start()
    await factory.wait_for_cache_sync()
    pods.by_index("node", "n1"); pods.get("team-a/web-0"); pods.list()

Cached objects are shared and read-only (`copy_deep()` before changing one). Handlers run
in the informer's task, in event order; keep them quick (enqueue a key) and they must not
raise (errors are logged and the informer carries on).

The watch loop never misses a change: it lists once, then watches from the list's
resourceVersion; when a stream ends it re-watches from the last version seen; when that
version has left the server's history (Gone) it lists again and delivers the difference
(adds, updates, and deletes of what vanished meanwhile); other errors back off
exponentially (on the loop's clock, so virtual time in the embedded cluster).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from phalanx.api.base import Resource

from .client import Client, Gone, Selector, WatchEvent
from .objects import object_key

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Resource)

IndexFunc = Callable[[Any], Iterable[str] | str | None]
NAMESPACE_INDEX = "namespace"


@dataclass(slots=True)
class Handler:
    on_add: Callable[[Any], None] | None = None
    on_update: Callable[[Any, Any], None] | None = None
    on_delete: Callable[[Any], None] | None = None


class Informer(Generic[T]):
    """A cache of one kind (optionally one namespace / selector), kept current by a watch."""

    def __init__(
        self,
        client: Client,
        kind: type[T],
        namespace: str | None = None,
        *,
        label_selector: Selector = None,
        field_selector: Selector = None,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        self.client = client
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self._cache: dict[str, T] = {}
        self._handlers: list[Handler] = []
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, dict[str, None]]] = {}
        self._indexed: dict[str, dict[str, tuple[str, ...]]] = {}  # index -> key -> values
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watching = False
        self.resource_version: str | None = None
        # Counters for tests and reports.
        self.relists = 0
        self.rewatches = 0
        self.errors = 0
        # Why the last list or watch failed ("Forbidden: ..."), until one succeeds: what a
        # readiness probe shows while the cache cannot sync.
        self.last_error: str | None = None

    def __repr__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"<Informer {self.kind.KIND}{where}: {len(self._cache)} objects>"

    # ------------------------------------------------------------------ reading the cache

    def get(self, key: str, namespace: str | None = None) -> T | None:
        """By `namespace/name` key, or by name with `namespace=`. Shared, read-only."""
        return self._cache.get(object_key(namespace, key) if namespace else key)

    def list(self, namespace: str | None = None) -> list[T]:
        if namespace is None:
            return list(self._cache.values())
        if NAMESPACE_INDEX not in self._indexers:
            self.add_index(NAMESPACE_INDEX, lambda o: o.metadata.namespace)
        return self.by_index(NAMESPACE_INDEX, namespace)

    def keys(self) -> list[str]:
        return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """`fn(obj)` gives the index values of an object (a string, strings, or None)."""
        if name in self._indexers:
            raise ValueError(f"{self!r} already has an index named {name!r}")
        self._indexers[name] = fn
        self._indices[name] = {}
        self._indexed[name] = {}
        for key, obj in self._cache.items():
            self._index_one(name, fn, key, obj)

    def by_index(self, name: str, value: str) -> list[T]:
        keys = self._indices[name].get(value, {})
        cache = self._cache
        return [cache[k] for k in keys]

    def keys_by_index(self, name: str, value: str) -> list[str]:
        return list(self._indices[name].get(value, {}))

    # ------------------------------------------------------------------ handlers

    def add_handler(
        self,
        on_add: Callable[[T], None] | None = None,
        on_update: Callable[[T, T], None] | None = None,
        on_delete: Callable[[T], None] | None = None,
    ) -> Handler:
        """Register handlers. Added after sync, `on_add` is replayed for what is cached."""
        handler = Handler(on_add, on_update, on_delete)
        self._handlers.append(handler)
        if self.synced and on_add is not None:
            for obj in list(self._cache.values()):
                self._call(on_add, obj)
        return handler

    def remove_handler(self, handler: Handler) -> None:
        self._handlers.remove(handler)

    @staticmethod
    def _call(fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("informer event handler %r failed", fn)

    # ------------------------------------------------------------------ lifecycle

    @property
    def synced(self) -> bool:
        """The first list has been delivered to the cache and handlers."""
        return self._synced.is_set()

    async def has_synced(self) -> bool:
        """Wait for the first list (client-go's WaitForCacheSync for one informer)."""
        await self._synced.wait()
        return True

    @property
    def watching(self) -> bool:
        """Synced and a watch is open (False while relisting or backing off)."""
        return self._watching

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"informer {self.kind.KIND} {self.namespace or '*'}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._watching = False

    # ------------------------------------------------------------------ the watch loop

    async def _run(self) -> None:
        rv: str | None = None
        delay = self.backoff_initial
        empty_streams = 0
        while True:
            try:
                if rv is None:
                    rv = await self._relist()
                delivered = 0
                stream = self.client.watch(self.kind, self.namespace, resource_version=rv,
                                           **self._selectors())
                try:
                    self._watching = True
                    async for event in stream:
                        rv = event.object.metadata.resource_version or rv
                        if event.type != "BOOKMARK":
                            self._apply(event)
                        delivered += 1
                        delay = self.backoff_initial
                finally:
                    self._watching = False
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()
                self.rewatches += 1
                self.resource_version = rv
                # A stream that keeps ending with nothing in it must not spin the loop.
                empty_streams = empty_streams + 1 if delivered == 0 else 0
                if empty_streams >= 3:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self.backoff_max)
            except asyncio.CancelledError:
                raise
            except Gone:
                log.info("%r: watch history expired at %s; re-listing", self, rv)
                rv = None
            except Exception as err:
                self.errors += 1
                self.last_error = f"{type(err).__name__}: {err}"
                log.warning("%r: %s: %s; retrying in %.1fs", self, type(err).__name__, err, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_max)

    def _selectors(self) -> dict[str, Selector]:
        out: dict[str, Selector] = {}
        if self.label_selector is not None:
            out["label_selector"] = self.label_selector
        if self.field_selector is not None:
            out["field_selector"] = self.field_selector
        return out

    async def _relist(self) -> str:
        """List, replace the cache, and deliver the difference as events."""
        result = await self.client.list(self.kind, self.namespace, **self._selectors())
        self.relists += 1
        fresh = {obj.key: obj for obj in result.items}
        cache = self._cache
        for key, obj in fresh.items():
            old = cache.get(key)
            if old is None:
                self._set(key, obj, None)
            elif old.metadata.resource_version != obj.metadata.resource_version:
                self._set(key, obj, old)
        for key in [k for k in cache if k not in fresh]:
            self._drop(key, cache[key])
        self.resource_version = result.resource_version
        self.last_error = None
        self._synced.set()
        return result.resource_version

    def _apply(self, event: WatchEvent[T]) -> None:
        obj = event.object
        key = obj.key
        if event.type == "DELETED":
            old = self._cache.get(key)
            if old is not None:
                self._drop(key, obj)
        else:  # ADDED or MODIFIED; either may be the first we see of an object
            self._set(key, obj, self._cache.get(key))

    def _set(self, key: str, obj: T, old: T | None) -> None:
        self._cache[key] = obj
        for name, fn in self._indexers.items():
            self._index_one(name, fn, key, obj)
        for h in self._handlers:
            if old is None:
                if h.on_add is not None:
                    self._call(h.on_add, obj)
            elif h.on_update is not None:
                self._call(h.on_update, old, obj)

    def _drop(self, key: str, last: T) -> None:
        del self._cache[key]
        for name in self._indexers:
            self._unindex(name, key)
        for h in self._handlers:
            if h.on_delete is not None:
                self._call(h.on_delete, last)

    def _index_one(self, name: str, fn: IndexFunc, key: str, obj: T) -> None:
        try:
            raw = fn(obj)
        except Exception:
            log.exception("index %r of %r failed on %s", name, self, key)
            raw = None
        values = () if raw is None else (raw,) if isinstance(raw, str) else tuple(raw)
        indexed = self._indexed[name]
        if indexed.get(key, ()) == values:
            return
        self._unindex(name, key)
        if values:
            index = self._indices[name]
            for v in values:
                index.setdefault(v, {})[key] = None
            indexed[key] = values

    def _unindex(self, name: str, key: str) -> None:
        values = self._indexed[name].pop(key, ())
        index = self._indices[name]
        for v in values:
            bucket = index.get(v)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del index[v]
