"""An Event recorder like client-go's: aggregated, spam-filtered, written in the background.

    recorder = EventRecorder(client, "phalanx-scheduler")
    recorder.event(pod, "Warning", "GangIncomplete", "3/8 members created; waiting for 5")
    await recorder.flush()   # tests: wait until everything is written

`event()` never blocks and never raises for API trouble: the write happens in a background
task (retried with backoff, then dropped with a log line; dropped at once when the server
refuses it as Invalid or Forbidden, which no retry changes). What keeps 10k pods from
flooding the API, as client-go's EventCorrelator does:
- dedup: the same object + type + reason + message bumps `count` and `lastTimestamp` of
  the existing Event (one patch) instead of creating another;
- aggregation: more than `max_similar` different messages for the same object + reason
  within `similar_window` seconds collapse into one Event,
  "(combined from similar events): <latest message>";
- spam filter: a token bucket per object (burst 25, then one per 5 minutes by default, on
  the client's clock) drops the rest; `dropped` counts them;
- coalescing: bumps that arrive while a write is queued become one write.
The correlation caches are LRUs of `cache_size` objects (client-go keeps 4096; we keep more
so a 10k-pod gang still folds repeats instead of starting new Events).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from phalanx.api.base import Resource

from .client import AlreadyExists, ApiError, Client, Forbidden, Invalid, NotFound

log = logging.getLogger(__name__)

COMBINED_PREFIX = "(combined from similar events): "
EventType = Literal["Normal", "Warning"]
_ObjRef = tuple[str, str, str, str, str]  # apiVersion, kind, namespace, name, uid


@dataclass(slots=True)
class _TokenBucket:
    tokens: float
    last: float

    def take(self, now: float, rate: float, burst: int) -> bool:
        self.tokens = min(float(burst), self.tokens + (now - self.last) * rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class _Similar:
    since: float
    messages: dict[str, None]


@dataclass(slots=True)
class _Record:
    """One Event object as we last wrote (or will write) it."""

    ref: _ObjRef
    name: str
    namespace: str
    type: str
    reason: str
    message: str
    count: int
    first: float
    last: float
    created: bool = False


class EventRecorder:
    def __init__(
        self,
        client: Client,
        component: str,
        *,
        host: str | None = None,
        event_kind: type[Resource] | None = None,
        burst: int = 25,
        refill_per_second: float = 1 / 300,
        max_similar: int = 10,
        similar_window: float = 600.0,
        cache_size: int = 16_384,
        max_attempts: int = 12,
    ) -> None:
        if event_kind is None:
            from phalanx.api.core import Event

            event_kind = Event
        self.client = client
        self.component = component
        self.host = host
        self.event_kind = event_kind
        self.burst = burst
        self.refill_per_second = refill_per_second
        self.max_similar = max_similar
        self.similar_window = similar_window
        self.cache_size = cache_size
        self.max_attempts = max_attempts
        self._records: OrderedDict[tuple[Any, ...], _Record] = OrderedDict()
        self._similar: OrderedDict[tuple[Any, ...], _Similar] = OrderedDict()
        self._buckets: OrderedDict[_ObjRef, _TokenBucket] = OrderedDict()
        self._pending: OrderedDict[int, _Record] = OrderedDict()  # id(record) -> record
        self._task: asyncio.Task[None] | None = None
        self._last_nanos = 0
        # Counters for tests and reports.
        self.recorded = 0     # accepted by the filters
        self.aggregated = 0   # folded into an existing Event (count bump)
        self.dropped = 0      # dropped by the spam filter
        self.writes = 0       # API writes made
        self.failed = 0       # writes given up after retries

    # ------------------------------------------------------------------ recording

    def event(self, obj: Resource, type_: EventType, reason: str, message: str) -> None:
        """Record an event about `obj`. Returns at once; the write happens later."""
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be 'Normal' or 'Warning', got {type_!r}")
        now = self.client.clock.now()
        m = obj.metadata
        ref: _ObjRef = (obj.api_version, obj.kind, m.namespace or "", m.name or "", m.uid or "")
        key = self._correlate(ref, type_, reason, message, now)
        if key is None:
            return
        key, message = key
        if not self._bucket(ref, now):
            self.dropped += 1
            return
        self.recorded += 1
        rec = self._records.get(key)
        if rec is not None:
            self._records.move_to_end(key)
            rec.count += 1
            rec.last = now
            rec.message = message
            self.aggregated += 1
        else:
            rec = _Record(ref, self._name_for(ref[3], now), ref[2] or "default", type_, reason,
                          message, 1, now, now)
            self._records[key] = rec
            if len(self._records) > self.cache_size:
                self._records.popitem(last=False)
        self._pending[id(rec)] = rec
        self._ensure_writer()

    def normal(self, obj: Resource, reason: str, message: str) -> None:
        self.event(obj, "Normal", reason, message)

    def warning(self, obj: Resource, reason: str, message: str) -> None:
        self.event(obj, "Warning", reason, message)

    def _correlate(self, ref: _ObjRef, type_: str, reason: str, message: str,
                   now: float) -> tuple[tuple[Any, ...], str] | None:
        """The dedup key and (maybe combined) message for this event."""
        similar_key = (ref, type_, reason)
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.since > self.similar_window:
            similar = self._similar[similar_key] = _Similar(now, {})
            if len(self._similar) > self.cache_size:
                self._similar.popitem(last=False)
        else:
            self._similar.move_to_end(similar_key)
        similar.messages[message] = None
        if len(similar.messages) > self.max_similar:
            return (ref, type_, reason, None), COMBINED_PREFIX + message
        return (ref, type_, reason, message), message

    def _bucket(self, ref: _ObjRef, now: float) -> bool:
        bucket = self._buckets.get(ref)
        if bucket is None:
            bucket = self._buckets[ref] = _TokenBucket(float(self.burst), now)
            if len(self._buckets) > self.cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(ref)
        return bucket.take(now, self.refill_per_second, self.burst)

    def _name_for(self, obj_name: str, now: float) -> str:
        # client-go: <object>.<unix nanos in hex>; kept unique within this recorder.
        nanos = max(int(now * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{obj_name}.{nanos:x}"

    # ------------------------------------------------------------------ writing

    def _ensure_writer(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._write_all(), name=f"event recorder {self.component}")

    async def _write_all(self) -> None:
        while self._pending:
            _, rec = self._pending.popitem(last=False)
            await self._write(rec)

    async def _write(self, rec: _Record) -> None:
        delay = 0.01
        for attempt in range(1, self.max_attempts + 1):
            try:
                if rec.created:
                    try:
                        await self.client.patch(self.event_kind, rec.name, {
                            "count": rec.count, "message": rec.message,
                            "lastTimestamp": _iso(rec.last),
                        }, rec.namespace)
                    except NotFound:  # deleted (e.g. TTL) meanwhile: write it afresh
                        rec.created = False
                        continue
                else:
                    try:
                        await self.client.create(self._build(rec))
                    except AlreadyExists:
                        rec.name = self._name_for(rec.ref[3], rec.last)
                        continue
                    rec.created = True
                self.writes += 1
                return
            except (Invalid, Forbidden) as err:
                # Refused for good (validation, RBAC, a terminating namespace): retrying only
                # holds up every Event queued behind this one.
                self.failed += 1
                log.warning("event %s/%s (%s) refused: %s", rec.namespace, rec.name,
                            rec.reason, err)
                return
            except ApiError as err:
                if attempt == self.max_attempts:
                    self.failed += 1
                    log.warning("event %s/%s (%s) dropped after %d attempts: %s", rec.namespace,
                                rec.name, rec.reason, attempt, err)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _build(self, rec: _Record) -> Resource:
        api_version, kind, ns, name, uid = rec.ref
        return self.event_kind.model_validate({
            "metadata": {"name": rec.name, "namespace": rec.namespace},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                               "namespace": ns or None, "uid": uid or None},
            "type": rec.type,
            "reason": rec.reason,
            "message": rec.message,
            "count": rec.count,
            "firstTimestamp": _iso(rec.first),
            "lastTimestamp": _iso(rec.last),
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        })

    async def flush(self) -> None:
        """Wait until every recorded event is written (or given up)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self) -> None:
        await self.flush()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
