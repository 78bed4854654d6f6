"""Watch streams with the semantics `cluster.Client.watch` promises.

The API server closes every watch after `timeoutSeconds`, sends BOOKMARK events that only
advance the resourceVersion, and reports an expired version either as HTTP 410 or as an
ERROR event carrying a 410 Status. This module hides all of that: a caller sees ADDED /
MODIFIED / DELETED in order, `Gone` when its version expired, and the end of the stream only
when the server cannot be reached (it then re-watches from the last version it saw).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from phalanx.api.base import Resource
from phalanx.cluster.client import Gone, Selector, ServiceUnavailable, WatchEvent

from .convert import event_validator, lenient_decodable
from .errors import error_from_status
from .paths import collection_path, selector_queries

if TYPE_CHECKING:
    from .cluster import KubeCluster

T = TypeVar("T", bound=Resource)

# client-go's reflector asks for 5-10 minute watches so reconnects of many clients spread out.
MIN_WATCH_SECONDS = 300
_jitter = random.Random()


async def watch_events(
    cluster: KubeCluster,
    kind: type[T],
    namespace: str | None,
    resource_version: str | None,
    label_selector: Selector,
    field_selector: Selector = None,
    *,
    timeout_seconds: int | None = None,
    established: asyncio.Future[None] | None = None,
) -> AsyncIterator[WatchEvent[T]]:
    def _established() -> None:
        if established is not None and not established.done():
            established.set_result(None)

    try:
        selectors = selector_queries(kind, label_selector, field_selector)
        if not resource_version:
            # "Every change after now": start from the current list version.
            resource_version = await cluster.current_resource_version(kind, namespace)
    except BaseException:
        _established()
        raise
    rv = resource_version
    path = collection_path(kind, namespace)
    loop = asyncio.get_running_loop()
    # Kinds that keep no merge-patch base are validated from the raw line in one pass
    # (pydantic-core parses and validates together): about a third less CPU per event.
    one_pass = kind in cluster.lists_without_bases and lenient_decodable(kind)
    quick_ends = 0
    connected_once = False
    while True:
        started = loop.time()
        seconds = timeout_seconds or int(MIN_WATCH_SECONDS * (1 + _jitter.random()))
        query = [
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", rv),
            ("timeoutSeconds", str(seconds)),
            *selectors,
        ]
        delivered = False
        try:
            async with cluster.transport.stream_lines(
                path, query=query, read_timeout=seconds + 30, raw=one_pass
            ) as lines:
                connected_once = True
                _established()  # the server has registered the watch
                async for line in lines:
                    decoded: T | None = None
                    if one_pass:
                        try:
                            event = event_validator(kind).validate_json(line, extra="ignore")
                        except ValueError:  # an ERROR Status or a partial bookmark object
                            event = None
                        if event is not None and event["type"] != "ERROR":
                            event_type, decoded = event["type"], event["object"]
                            new_rv = decoded.metadata.resource_version
                        else:
                            try:
                                line = json.loads(line)
                            except ValueError:
                                break  # truncated: resume from rv
                    if decoded is None:
                        event_type = line.get("type")
                        obj: dict[str, Any] = line.get("object") or {}
                        if event_type == "ERROR":
                            code = int(obj.get("code") or 500)
                            if code == 410:
                                raise Gone(str(obj.get("message") or "resourceVersion too old"))
                            raise error_from_status(code, obj, kind=kind.KIND)
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if new_rv:
                        rv = new_rv
                    if event_type == "BOOKMARK":
                        continue  # only moves rv forward
                    if event_type not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    delivered = True
                    if decoded is None:
                        decoded = cluster.decode(kind, obj)
                    if event_type == "DELETED":  # no update can follow: keep no base for it
                        cluster.forget_base(decoded.metadata.uid)
                    yield WatchEvent(type=event_type, object=decoded)
        except BaseException as err:
            _established()  # never leave writers waiting on a watch that failed
            if not isinstance(err, ServiceUnavailable):
                raise
            # Unreachable on the first try: the caller's problem (it backs off). Unreachable
            # when resuming: end the stream; the caller re-watches from the last object it
            # saw (and gets Gone if that version is too old by then).
            if not connected_once:
                raise
            return
        # A normal server-side close (timeoutSeconds) or a dropped stream: resume from rv.
        # Streams that keep ending at once with nothing in them get a growing pause.
        quick = not delivered and loop.time() - started < 1.0
        quick_ends = quick_ends + 1 if quick else 0
        if quick_ends > 1:
            await asyncio.sleep(min(0.5 * quick_ends, 5.0))


class KubeWatchStream(Generic[T]):
    """What `KubeCluster.watch` returns: the watch is opened at once, in the background.

    Like MemoryCluster's, a stream registers when `watch()` is called, not at the first
    `__anext__`: the client holds its next write until the server has accepted the watch
    (`established`), so a watch opened before a write always sees that write. Events are
    buffered until read; `aclose()` (or dropping the stream) ends the request.
    """

    def __init__(self, source: AsyncIterator[WatchEvent[T]],
                 established: asyncio.Future[None]) -> None:
        self.established = established
        self._queue: asyncio.Queue[WatchEvent[T] | BaseException | None] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._pump(source))
        self._done = False

    async def _pump(self, source: AsyncIterator[WatchEvent[T]]) -> None:
        try:
            async for event in source:
                self._queue.put_nowait(event)
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # delivered to the reader, in order
            self._queue.put_nowait(err)
            return
        finally:
            if not self.established.done():
                self.established.set_result(None)
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(BaseException):
                    await aclose()
        self._queue.put_nowait(None)

    def __aiter__(self) -> KubeWatchStream[T]:
        return self

    async def __anext__(self) -> WatchEvent[T]:
        if self._done:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is None:
            self._done = True
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._done = True
            raise item
        return item

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def close(self) -> None:
        self._done = True
        self._task.cancel()

    async def aclose(self) -> None:
        self.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def __del__(self) -> None:
        task = getattr(self, "_task", None)
        if task is not None and not task.done():
            loop = task.get_loop()
            if not loop.is_closed():
                task.cancel()
