"""The scheduling queue: activeQ, backoffQ and the unschedulable pool (kube's PriorityQueue).

- activeQ: a heap ordered by the profile's QueueSort key (PrioritySort: priority, then age).
- backoffQ: pods that failed recently wait 1s, 2s, 4s ... (capped) before their next try.
- unschedulable pool: pods a plugin rejected stay here until a cluster event that plugin
  registered for (and whose queueing hint agrees) may help, or at most
  podMaxInUnschedulablePodsDuration. Pods that failed PreEnqueue (scheduling gates, an
  incomplete gang) are parked here as *gated* and re-checked on their events or `activate`.

The pool is indexed by rejecting plugin, so an event only looks at pods that one of its
interested plugins rejected: an assigned-pod ADD after every bind costs nothing when no
plugin registered for it. Gated pods are filed apart from rejected ones, so events that
cannot admit a gated pod (`ClusterEventWithHint.gated=False`, e.g. freed room for a gang
whose members wait behind their representative) never scan them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from phalanx.scheduler.framework.runtime import Framework
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
)

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "inFlight"
_ANY_PLUGIN = ""  # index bucket for pods rejected without a plugin (errors): any event helps
# Pool bucket: (profile, plugin, gated). Gated pods wait for their gating plugin's events.
Bucket = tuple[str, str, bool]
# asyncio runs a timer up to its clock resolution early; treat anything that close as due,
# or a wait of 1e-12s would spin forever without the (virtual) clock moving.
_EPSILON = 1e-6


class SchedulingQueue:
    """One queue for all profiles (profiles must share a QueueSort, as in kube-scheduler)."""

    def __init__(
        self,
        frameworks: dict[str, Framework],
        now: Callable[[], float],
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = 300.0,
    ) -> None:
        self._frameworks = frameworks
        self._now = now
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._pods: dict[str, QueuedPodInfo] = {}  # every pod the queue knows, by key
        self._where: dict[str, str] = {}
        self._active: list[tuple[Any, int, str]] = []  # (sort key, entry id, key); lazy deletion
        self._active_entry: dict[str, int] = {}
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_entry: dict[str, int] = {}
        self._unsched_by_plugin: dict[Bucket, dict[str, None]] = {}
        self._unsched_since: dict[str, float] = {}
        self._unsched_index: dict[str, list[Bucket]] = {}  # key -> buckets it was filed under
        # Gated pods an event may have freed: PreEnqueue re-runs once before the next pop, so
        # a burst of events (a gang's members arriving) costs one check per pod, not one per event.
        self._recheck: dict[str, None] = {}
        self._in_flight: dict[str, None] = {}
        self._entry = itertools.count()
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._closed = False
        # event -> plugins registered per profile (built once)
        self._registrations: dict[str, dict[str, list[ClusterEventWithHint]]] = {
            name: fw.events_to_register() for name, fw in frameworks.items()
        }
        # (resource, action) -> the registrations that event matches, in registration order
        self._matching: dict[tuple[str, int], list[tuple[str, str, ClusterEventWithHint]]] = {}
        self.moves = 0  # pods moved by events (stats)
        self._failed_since: float | None = None  # set during on_event(failed_since=...)

    # --- sizes and introspection --------------------------------------------------------

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def counts(self) -> dict[str, int]:
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0, "gated": 0}
        for key, where in self._where.items():
            out[where] += 1
            if where == UNSCHEDULABLE and self._pods[key].gated:
                out["gated"] += 1
        return out

    def has_work(self) -> bool:
        """Pods in activeQ or backoffQ, gated pods due for a PreEnqueue re-check, or pods
        being scheduled."""
        return bool(self._active_entry or self._backoff_entry or self._recheck or self._in_flight)

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def where(self, key: str) -> str | None:
        return self._where.get(key)

    def pending(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self._pods.values()))

    def _fw(self, info: PodInfo) -> Framework:
        return self._frameworks[info.scheduler_name]

    # --- placement helpers --------------------------------------------------------------

    def _detach(self, key: str) -> None:
        where = self._where.pop(key, None)
        self._recheck.pop(key, None)
        if where == ACTIVE:
            self._active_entry.pop(key, None)
        elif where == IN_FLIGHT:
            self._in_flight.pop(key, None)
        elif where == BACKOFF:
            self._backoff_entry.pop(key, None)
        elif where == UNSCHEDULABLE:
            self._unsched_since.pop(key, None)
            for plugin in self._unsched_index.pop(key, ()):
                bucket = self._unsched_by_plugin.get(plugin)
                if bucket is not None:
                    bucket.pop(key, None)

    @staticmethod
    def _plugins_of(qpi: QueuedPodInfo) -> list[str]:
        """The plugins whose events may help the pod ([_ANY_PLUGIN]: any event)."""
        if qpi.gated:
            return [qpi.gating_plugin or _ANY_PLUGIN]
        return sorted(qpi.unschedulable_plugins | qpi.pending_plugins) or [_ANY_PLUGIN]

    @staticmethod
    def _index_keys(qpi: QueuedPodInfo) -> list[Bucket]:
        """Pool buckets: one per (profile, plugin, gated), so events scan only their own pods."""
        profile = qpi.info.scheduler_name
        return [(profile, p, qpi.gated) for p in SchedulingQueue._plugins_of(qpi)]

    def _to_active(self, qpi: QueuedPodInfo) -> None:
        self._detach(qpi.key)
        entry = next(self._entry)
        heapq.heappush(self._active, (self._fw(qpi.info).sort_key(qpi), entry, qpi.key))
        self._active_entry[qpi.key] = entry
        self._where[qpi.key] = ACTIVE
        self._wakeup.set()

    def _to_backoff(self, qpi: QueuedPodInfo) -> None:
        self._detach(qpi.key)
        entry = next(self._entry)
        heapq.heappush(self._backoff, (qpi.backoff_expiry, entry, qpi.key))
        self._backoff_entry[qpi.key] = entry
        self._where[qpi.key] = BACKOFF
        self._wakeup.set()

    def _to_unschedulable(self, qpi: QueuedPodInfo) -> None:
        self._detach(qpi.key)
        self._where[qpi.key] = UNSCHEDULABLE
        if not qpi.gated:  # gated pods wait for their gate, never for a timeout
            self._unsched_since[qpi.key] = self._now()
        buckets = self._index_keys(qpi)
        self._unsched_index[qpi.key] = buckets
        for plugin in buckets:
            self._unsched_by_plugin.setdefault(plugin, {})[qpi.key] = None

    def _gate_or_activate(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; activeQ when admitted, else the pool as gated. True if admitted."""
        st: Status = self._fw(qpi.info).run_pre_enqueue(qpi.info)
        if st.is_success:
            qpi.gated = False
            qpi.gating_plugin = ""
            self._to_active(qpi)
            return True
        qpi.gated = True
        qpi.gating_plugin = st.plugin
        self._to_unschedulable(qpi)
        return False

    def backoff_duration(self, attempts: int) -> float:
        # Exponent capped: 2.0 ** 1024 overflows, and a pod may legitimately be tried that often.
        d = self.initial_backoff * (2.0 ** min(max(0, attempts - 1), 60))
        return min(d, self.max_backoff)

    def _requeue(self, qpi: QueuedPodInfo) -> None:
        """After an event helped: backoffQ while still backing off, else activeQ. Gated pods
        are re-checked (PreEnqueue) just before the next pop."""
        if qpi.gated:
            self._recheck[qpi.key] = None
            self._wakeup.set()
            return
        if qpi.attempts and qpi.backoff_expiry > self._now() and not qpi.gated:
            self._to_backoff(qpi)
        else:
            self._gate_or_activate(qpi)

    # --- informer-facing ----------------------------------------------------------------

    def add(self, info: PodInfo) -> None:
        """A new unscheduled pod (or one the scheduler forgot)."""
        if info.key in self._pods:
            self.update(info)
            return
        qpi = QueuedPodInfo(info, self._now(), next(self._seq))
        self._pods[info.key] = qpi
        self._gate_or_activate(qpi)

    def update(self, info: PodInfo) -> None:
        """The pod object changed. Gated pods re-run PreEnqueue; rejected pods get another
        chance (their spec may now fit); in-flight pods keep the new object for the next try."""
        qpi = self._pods.get(info.key)
        if qpi is None:
            self.add(info)
            return
        qpi.info = info
        where = self._where.get(info.key)
        if where == UNSCHEDULABLE:
            if qpi.gated:
                self._gate_or_activate(qpi)
            else:
                self._requeue(qpi)
        elif where == ACTIVE:
            self._to_active(qpi)  # re-sort (priority may have changed)

    def delete(self, key: str) -> QueuedPodInfo | None:
        qpi = self._pods.pop(key, None)
        if qpi is not None:
            self._detach(key)
        return qpi

    # --- scheduler-facing ---------------------------------------------------------------

    def _flush_backoff(self) -> None:
        now = self._now() + _EPSILON
        while self._backoff and self._backoff[0][0] <= now:
            _, entry, key = heapq.heappop(self._backoff)
            if self._backoff_entry.get(key) == entry:
                # PreEnqueue runs on every move to activeQ, as in kube-scheduler: a gang
                # member released from Permit waits gated behind its representative.
                self._gate_or_activate(self._pods[key])

    def _flush_unschedulable_timeouts(self) -> None:
        if not self._unsched_since:
            return
        cutoff = self._now() + _EPSILON - self.max_in_unschedulable
        old: list[str] = []
        for k, t in self._unsched_since.items():  # insertion order is time order
            if t > cutoff:
                break
            old.append(k)
        for key in old:
            self.moves += 1
            self._requeue(self._pods[key])

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None. The pod is in flight until `done`/`requeue_failed`."""
        self._flush_backoff()
        if self._recheck:
            keys, self._recheck = list(self._recheck), {}
            for key in keys:
                qpi = self._pods.get(key)
                if qpi is not None and qpi.gated and self._where.get(key) == UNSCHEDULABLE:
                    self._gate_or_activate(qpi)
        while self._active:
            filed, entry, key = heapq.heappop(self._active)
            if self._active_entry.get(key) != entry:
                continue  # stale entry (moved or re-sorted)
            qpi = self._pods[key]
            if self._key_worse(qpi, filed):
                continue  # re-filed under its current key (a queue's fair-share order)
            self._detach(key)
            self._where[key] = IN_FLIGHT
            self._in_flight[key] = None
            qpi.attempts += 1
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = self._now()
            return qpi
        return None

    def _key_worse(self, qpi: QueuedPodInfo, filed: Any) -> bool:
        """When the QueueSort's keys depend on the cluster (fair share), re-file the head if
        its key got worse since it was queued: it then pops after those now ahead of it."""
        sort = getattr(self._fw(qpi.info), "queue_sort", None)
        changing = getattr(sort, "keys_may_change", None)
        if changing is None or not changing():
            return False
        fresh = sort.sort_key(qpi)
        if not fresh > filed:
            return False
        entry = next(self._entry)
        heapq.heappush(self._active, (fresh, entry, qpi.key))
        self._active_entry[qpi.key] = entry
        return True

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for the next pod (virtual time passes while only backoff timers remain).
        None once the queue is closed."""
        while not self._closed:
            qpi = self.pop_nowait()
            if qpi is not None:
                return qpi
            self._wakeup.clear()
            timeout = None
            if self._backoff:
                timeout = max(0.0, self._backoff[0][0] - self._now())
            if self._unsched_since:
                oldest = next(iter(self._unsched_since.values()))  # insertion order is time order
                nxt = oldest + self.max_in_unschedulable - self._now()
                timeout = max(0.0, nxt) if timeout is None else min(timeout, max(0.0, nxt))
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                self._flush_unschedulable_timeouts()
        return None

    def done(self, key: str) -> None:
        """The pod was assumed (its binding cycle owns it now): it leaves the queue."""
        if self._where.get(key) == IN_FLIGHT:
            self._detach(key)
            self._pods.pop(key, None)

    def requeue_failed(self, qpi: QueuedPodInfo, status: Status, *, backoff: bool = False) -> None:
        """A scheduling or binding cycle failed. Errors (and `backoff=True`, e.g. rejections
        by peers in the binding cycle) go to backoffQ; rejections wait in the pool for an
        event their rejecting plugins registered for."""
        key = qpi.key
        if key not in self._pods:
            self._pods[key] = qpi  # the binding cycle returns a pod that had left the queue
        qpi.timestamp = self._now()
        qpi.backoff_expiry = self._now() + self.backoff_duration(qpi.attempts)
        qpi.gated = False
        if status.is_error or backoff:
            self._to_backoff(qpi)
        else:
            self._to_unschedulable(qpi)

    def activate(self, keys: Iterable[str]) -> int:
        """Move pods to activeQ now, if PreEnqueue admits them (else they stay gated)."""
        moved = 0
        for key in keys:
            qpi = self._pods.get(key)
            where = self._where.get(key)
            if qpi is None or where in (None, ACTIVE, IN_FLIGHT):
                continue
            if not qpi.gated:
                qpi.backoff_expiry = 0.0
            moved += self._gate_or_activate(qpi)
        return moved

    def on_event(self, event: ClusterEvent, old: Any = None, new: Any = None, *,
                 failed_since: float | None = None) -> int:
        """Move pods that `event` may help (per their rejecting plugins' registrations).

        `failed_since`: only pods whose last attempt failed at or after that time (queue
        clock) can be helped, e.g. by a reservation released: a pod that failed before the
        room was taken saw it free, so giving it back changes nothing for that pod."""
        if not self._unsched_index:
            return 0
        self._failed_since = failed_since
        try:
            forced = event is EVENT_FORCE_ACTIVATE or event is EVENT_UNSCHEDULABLE_TIMEOUT
            if forced:
                keys = list(self._unsched_index)
                moved = sum(1 for k in keys if self._move_if(k, None, old, new))
                self.moves += moved
                return moved
            return self._on_event(event, old, new)
        finally:
            self._failed_since = None

    def _on_event(self, event: ClusterEvent, old: Any, new: Any) -> int:
        moved = 0
        buckets = self._unsched_by_plugin
        for profile, plugin, reg in self._registrations_for(event):
            rejected = buckets.get((profile, plugin, False))
            gated = buckets.get((profile, plugin, True)) if reg.gated else None
            if not rejected and not gated:
                continue
            pools = [b for b in (rejected, gated) if b]
            found = reg.targets(old, new) if reg.targets is not None else None
            targets = None if found is None else list(found)
            for bucket in pools:
                pool = list(bucket) if targets is None else [k for k in targets if k in bucket]
                for key in pool:
                    moved += self._move_if(key, reg, old, new)
        for bucket_key in [k for k in buckets if k[1] == _ANY_PLUGIN]:
            for key in list(buckets[bucket_key]):  # rejected without a plugin
                moved += self._move_if(key, None, old, new)
        self.moves += moved
        return moved

    def _registrations_for(self, event: ClusterEvent
                           ) -> list[tuple[str, str, ClusterEventWithHint]]:
        """(profile, plugin, registration) for each registration `event` matches, worked
        out once per kind of event: three events a pod, each would otherwise walk every
        plugin of every profile."""
        key = (event.resource, int(event.action))
        found = self._matching.get(key)
        if found is None:
            found = self._matching[key] = [
                (profile, plugin, reg) for profile, regs in self._registrations.items()
                for plugin, evs in regs.items() for reg in evs if reg.event.matches(event)]
        return found

    def _move_if(self, key: str, reg: ClusterEventWithHint | None, old: Any, new: Any) -> bool:
        qpi = self._pods.get(key)
        if qpi is None or self._where.get(key) != UNSCHEDULABLE:
            return False
        if self._failed_since is not None and (qpi.gated or qpi.timestamp < self._failed_since):
            return False
        if reg is not None and reg.hint is not None and reg.hint(qpi.info, old, new) != QueueingHint.QUEUE:
            return False
        self._requeue(qpi)
        return True

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
