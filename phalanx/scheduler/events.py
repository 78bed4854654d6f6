"""Kubernetes Events from the scheduler, written in the background without event storms.

Like client-go's recorder with its correlator: an Event repeating (same object, reason and
message) updates the count of the existing Event instead of creating a new one, and such
count updates are limited to one per object and reason per `min_interval` seconds. Writes
go through one background worker so the scheduling loop never awaits the API for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.core import Event, EventSource, ObjectReference
from phalanx.cluster.client import ApiError

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

log = logging.getLogger(__name__)

COMPONENT = "phalanx-scheduler"


@dataclass(slots=True)
class _Seen:
    name: str  # the Event object's name
    message: str
    count: int
    last_write: float
    trailing: bool = False  # a suppressed update waits to be written


class EventRecorder:
    """One Event object per (object, reason): repeats update its count and message, at most
    once per `min_interval` seconds per object and reason; the last suppressed update is
    written when the interval ends, so the Event always ends up showing the latest message."""

    def __init__(self, client: Client, *, min_interval: float = 10.0, max_pending: int = 100_000) -> None:
        self.client = client
        self.min_interval = min_interval
        self.max_pending = max_pending
        self._queue: deque[tuple[Resource, str, str, str]] = deque()
        self._seen: dict[str, dict[str, _Seen]] = {}  # uid -> reason -> state
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._seq = 0
        self.written = 0
        self.dropped = 0
        self.suppressed = 0
        self.enabled = True

    def record(self, obj: Resource, event_type: str, reason: str, message: str) -> None:
        if not self.enabled:
            return
        if len(self._queue) >= self.max_pending:
            self.dropped += 1
            return
        self._queue.append((obj, event_type, reason, message))
        self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="scheduler-events")

    async def stop(self, flush: bool = True) -> None:
        if flush:
            await self.flush()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def flush(self) -> None:
        while self._queue:
            await self._write_one(*self._queue.popleft())

    @property
    def idle(self) -> bool:
        return not self._queue

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                await self._write_one(*self._queue.popleft())

    def _trailing(self, obj: Resource, event_type: str, reason: str, uid: str) -> None:
        seen = self._seen.get(uid, {}).get(reason)
        if seen is not None and seen.trailing:
            seen.trailing = False
            seen.last_write = float("-inf")  # due now
            self.record(obj, event_type, reason, seen.message)

    async def _write_one(self, obj: Resource, event_type: str, reason: str, message: str) -> None:
        uid = obj.metadata.uid or obj.key
        now = self.client.clock.now()
        by_reason = self._seen.setdefault(uid, {})
        seen = by_reason.get(reason)
        ns = obj.metadata.namespace or "default"
        try:
            if seen is not None:
                if seen.message == message and seen.last_write == float("-inf"):
                    pass  # the trailing write of a suppressed update
                else:
                    seen.count += 1
                if now - seen.last_write < self.min_interval:
                    self.suppressed += 1
                    seen.message = message
                    if not seen.trailing:
                        seen.trailing = True
                        delay = seen.last_write + self.min_interval - now
                        asyncio.get_running_loop().call_later(delay, self._trailing, obj, event_type, reason, uid)
                    return
                seen.message = message
                seen.last_write = now
                await self.client.patch(
                    Event,
                    seen.name,
                    {"count": seen.count, "message": message, "lastTimestamp": self.client.clock.now_dt().isoformat()},
                    ns,
                )
                self.written += 1
                return
            self._seq += 1
            name = f"{obj.name}.{self._seq:x}"
            ts = self.client.clock.now_dt()
            ev = Event(
                metadata=ObjectMeta(name=name, namespace=ns),
                involved_object=ObjectReference(
                    api_version=obj.api_version,
                    kind=obj.kind,
                    name=obj.name,
                    namespace=obj.metadata.namespace,
                    uid=obj.metadata.uid,
                ),
                reason=reason,
                message=message,
                type="Warning" if event_type == "Warning" else "Normal",
                count=1,
                first_timestamp=ts,
                last_timestamp=ts,
                source=EventSource(component=COMPONENT),
                reporting_component=COMPONENT,
            )
            by_reason[reason] = _Seen(name, message, 1, now)
            await self.client.create(ev)
            self.written += 1
        except ApiError as exc:
            # Events are best effort (as in Kubernetes): never fail scheduling over one.
            log.debug("event %s on %s not written: %s", reason, obj.key, exc)

    def forget(self, uid: str) -> None:
        """Drop correlation state of a deleted object."""
        self._seen.pop(uid, None)
