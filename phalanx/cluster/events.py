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
- coalescing: bumps that arrive while a write is queued become one write;
- `concurrency` writers (client-go writes each Event from its own goroutine, bounded only by
  the client's rate limit): a queue of Events drains at that many writes in flight, so a burst
  of Events (one per bound pod) is written while the binds go on, not long after them. One
  Event is never written by two writers at once (an update that arrives while it is being
  written is written again after it, with the latest count and message).
The correlation caches are LRUs of `cache_size` objects (client-go keeps 4096; we keep more
so a 10k-pod gang still folds repeats instead of starting new Events).

The scheduler's mode, `per_reason=True` (usually with `burst=None`, `min_interval`): one Event
per object + reason whose count and message follow the latest call (a FailedScheduling Event
shows the current "0/N nodes are available" and how often it was said, not one Event per
wording). `min_interval` > 0 limits each Event to one write per that many seconds; updates in
between are held (`suppressed`) and one trailing write at the interval's end carries the
latest message and count. `max_pending` bounds the Events waiting for a write (beyond it new
ones are `dropped`), `enabled = False` turns recording off, `forget(uid)` drops what is kept
for a deleted object.
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
    key: tuple[Any, ...] = ()
    last_write: float = float("-inf")  # when a write was last queued (min_interval)
    trailing: asyncio.TimerHandle | None = None  # a held update's write at the interval's end


class EventRecorder:
    def __init__(
        self,
        client: Client,
        component: str,
        *,
        host: str | None = None,
        event_kind: type[Resource] | None = None,
        burst: int | None = 25,
        refill_per_second: float = 1 / 300,
        max_similar: int = 10,
        similar_window: float = 600.0,
        cache_size: int = 16_384,
        max_attempts: int = 12,
        per_reason: bool = False,
        min_interval: float = 0.0,
        max_pending: int | None = None,
        concurrency: int = 1,
    ) -> None:
        """`burst=None` turns the spam filter off; `per_reason`, `min_interval` and
        `max_pending` are described in the module docstring, so is `concurrency`."""
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
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
        self.per_reason = per_reason
        self.min_interval = min_interval
        self.max_pending = max_pending
        self.concurrency = concurrency
        self.enabled = True
        self._records: OrderedDict[tuple[Any, ...], _Record] = OrderedDict()
        self._similar: OrderedDict[tuple[Any, ...], _Similar] = OrderedDict()
        self._buckets: OrderedDict[_ObjRef, _TokenBucket] = OrderedDict()
        self._pending: OrderedDict[int, _Record] = OrderedDict()  # id(record) -> record
        self._by_uid: dict[str, dict[tuple[Any, ...], None]] = {}  # for forget()
        self._held: dict[int, _Record] = {}  # records with a trailing write scheduled
        self._tasks: set[asyncio.Task[None]] = set()
        self._writing: set[int] = set()  # id(record) of Events being written
        self._again: set[int] = set()  # ... and queued again meanwhile
        self._last_nanos = 0
        # Counters for tests and reports.
        self.recorded = 0     # accepted by the filters
        self.aggregated = 0   # folded into an existing Event (count bump)
        self.dropped = 0      # dropped by the spam filter or because max_pending was reached
        self.suppressed = 0   # updates held back by min_interval (a trailing write follows)
        self.writes = 0       # API writes made
        self.failed = 0       # writes given up after retries

    @property
    def written(self) -> int:
        """API writes made (the scheduler's name for `writes`)."""
        return self.writes

    @property
    def idle(self) -> bool:
        """Nothing queued or being written (held trailing writes do not count)."""
        return not self._pending and not self._tasks

    # ------------------------------------------------------------------ recording

    def event(self, obj: Resource, type_: EventType, reason: str, message: str) -> None:
        """Record an event about `obj`. Returns at once; the write happens later."""
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be 'Normal' or 'Warning', got {type_!r}")
        if not self.enabled:
            return
        now = self.client.clock.now()
        m = obj.metadata
        ref: _ObjRef = (obj.api_version, obj.kind, m.namespace or "", m.name or "", m.uid or "")
        key: tuple[Any, ...]
        if self.per_reason:
            key = (ref, reason)
        else:
            key, message = self._correlate(ref, type_, reason, message, now)
        if self.burst is not None and not self._bucket(ref, now):
            self.dropped += 1
            return
        rec = self._records.get(key)
        if rec is None and self.max_pending is not None and len(self._pending) >= self.max_pending:
            self.dropped += 1
            return
        self.recorded += 1
        if rec is not None:
            self._records.move_to_end(key)
            rec.count += 1
            rec.last = now
            rec.message = message
            self.aggregated += 1
        else:
            rec = _Record(ref, self._name_for(ref[3], now), ref[2] or "default", type_, reason,
                          message, 1, now, now, key=key)
            self._records[key] = rec
            self._by_uid.setdefault(m.uid or obj.key, {})[key] = None
            if len(self._records) > self.cache_size:
                self._evict(self._records.popitem(last=False)[1])
        if self.min_interval > 0 and id(rec) not in self._pending:
            wait = rec.last_write + self.min_interval - now
            if wait > 0:
                # Written less than min_interval ago: hold this update; one trailing write
                # at the interval's end carries the latest message and count.
                self.suppressed += 1
                if rec.trailing is None:
                    rec.trailing = asyncio.get_running_loop().call_later(wait, self._release, rec)
                    self._held[id(rec)] = rec
                return
            rec.last_write = now
        self._pending[id(rec)] = rec
        self._ensure_writer()

    def record(self, obj: Resource, event_type: str, reason: str, message: str) -> None:
        """`event()` for callers (scheduler plugins) whose type may be any string: not
        "Warning" means "Normal"."""
        self.event(obj, "Warning" if event_type == "Warning" else "Normal", reason, message)

    def normal(self, obj: Resource, reason: str, message: str) -> None:
        self.event(obj, "Normal", reason, message)

    def warning(self, obj: Resource, reason: str, message: str) -> None:
        self.event(obj, "Warning", reason, message)

    def _release(self, rec: _Record) -> None:
        """min_interval is over: queue the held update of `rec`."""
        rec.trailing = None
        self._held.pop(id(rec), None)
        rec.last_write = self.client.clock.now()
        self._pending[id(rec)] = rec
        self._ensure_writer()

    def _evict(self, rec: _Record) -> None:
        keys = self._by_uid.get(rec.ref[4] or _obj_key(rec.ref))
        if keys is not None:
            keys.pop(rec.key, None)
            if not keys:
                del self._by_uid[rec.ref[4] or _obj_key(rec.ref)]
        if rec.trailing is not None:
            rec.trailing.cancel()
            rec.trailing = None
            self._held.pop(id(rec), None)

    def forget(self, uid: str) -> None:
        """Drop everything kept for a deleted object (its uid, or namespace/name without one):
        its Events' correlation state, held trailing writes and spam-filter bucket."""
        for key in self._by_uid.pop(uid, {}):
            rec = self._records.pop(key, None)
            if rec is None:
                continue
            if rec.trailing is not None:
                rec.trailing.cancel()
                rec.trailing = None
                self._held.pop(id(rec), None)
            self._buckets.pop(rec.ref, None)
            self._similar.pop((rec.ref, rec.type, rec.reason), None)

    def _correlate(self, ref: _ObjRef, type_: str, reason: str, message: str,
                   now: float) -> tuple[tuple[Any, ...], str]:
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
        wanted = min(self.concurrency, len(self._pending))
        # A writer leaves _tasks as it returns (`_write_all`), not when its done-callback
        # runs later: one that writes nothing more must not count (else a new Event waits
        # for no writer). The callback still takes out a writer cancelled before it ran.
        while len(self._tasks) < wanted:
            task = asyncio.get_running_loop().create_task(
                self._write_all(), name=f"event recorder {self.component}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write_all(self) -> None:
        try:
            await self._write_pending()
        finally:
            self._tasks.discard(asyncio.current_task())  # type: ignore[arg-type]

    async def _write_pending(self) -> None:
        while self._pending:
            key, rec = self._pending.popitem(last=False)
            if key in self._writing:  # another writer has it: it writes it again after
                self._again.add(key)
                continue
            self._writing.add(key)
            try:
                await self._write(rec)
            finally:
                self._writing.discard(key)
                if key in self._again:
                    self._again.discard(key)
                    self._pending[key] = rec

    async def _write(self, rec: _Record) -> None:
        delay = 0.01
        for attempt in range(1, self.max_attempts + 1):
            try:
                if rec.created:
                    try:
                        await self.client.patch(self.event_kind, rec.name, {
                            "count": rec.count, "message": rec.message,
                            "lastTimestamp": _iso(rec.last),
                        }, rec.namespace, returning=False)
                    except NotFound:  # deleted (e.g. TTL) meanwhile: write it afresh
                        rec.created = False
                        continue
                else:
                    try:
                        # Built for this write alone and not read back: the embedded
                        # server may keep it as it is (no copy is made either way).
                        await self.client.create(self._build(rec), returning=False,
                                                 hand_over=True)
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
        kind_ = self.event_kind
        return kind_.model_validate({
            "apiVersion": kind_.API_VERSION,  # given, not filled in after validation
            "kind": kind_.KIND,
            "metadata": {"name": rec.name, "namespace": rec.namespace},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                               "namespace": ns or None, "uid": uid or None},
            "type": rec.type,
            "reason": rec.reason,
            "message": rec.message,
            "count": rec.count,
            # datetimes, not strings: nothing to format here and parse back in validation
            "firstTimestamp": datetime.fromtimestamp(rec.first, UTC),
            "lastTimestamp": datetime.fromtimestamp(rec.last, UTC),
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        })

    async def flush(self) -> None:
        """Wait until every recorded event is written (or given up)."""
        while self._tasks:
            await asyncio.shield(asyncio.gather(*self._tasks, return_exceptions=True))

    async def close(self) -> None:
        await self.flush()

    def start(self) -> None:
        """Nothing to start: the writer task starts with the first event (kept for callers
        with a start/stop lifecycle)."""

    async def stop(self, flush: bool = True) -> None:
        """Write what is queued (unless `flush` is False), then stop: held trailing writes
        and anything still queued are discarded."""
        if flush:
            await self.flush()
        for rec in self._held.values():
            if rec.trailing is not None:
                rec.trailing.cancel()
                rec.trailing = None
        self._held.clear()
        self._pending.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._writing.clear()
        self._again.clear()


def _obj_key(ref: _ObjRef) -> str:
    """namespace/name (name when cluster-scoped), as Resource.key: forget()'s key without a uid."""
    return f"{ref[2]}/{ref[3]}" if ref[2] else ref[3]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
