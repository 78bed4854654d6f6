"""Pods parked at Permit until their plugins allow them (kube-scheduler's waitingPodsMap).

Each waiting plugin's timeout rejects the pod when it passes. kube-scheduler arms a timer per
pod and plugin (time.AfterFunc); here the map keeps the deadlines in one heap under one
event-loop timer, armed at the earliest. A loop timer per waiting gang member meant a
TimerHandle, a push onto the loop's heap (compared in Python) and a cancelled handle left in
it, with thousands of members waiting at once.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Iterator

from .status import Code, Status
from .types import PodInfo

log = logging.getLogger(__name__)


class WaitingPodImpl:
    """One pod waiting at Permit. Resolves exactly once: allowed by all, rejected, or timed
    out (its timeouts run once it is added to a WaitingPods map)."""

    __slots__ = (
        "_future",
        "_info",
        "_node",
        "_on_done",
        "_pending",
        "_status",
        "_timeouts",
        "on_reject",
    )

    def __init__(self, info: PodInfo, node: str, timeouts: dict[str, float]) -> None:
        self._info = info
        self._node = node
        self._timeouts = sorted(timeouts.items())
        self._pending: dict[str, None] = dict.fromkeys(name for name, _ in self._timeouts)
        self._future: asyncio.Future[Status] = asyncio.get_running_loop().create_future()
        self._status: Status | None = None
        self._on_done: Callable[[], None] | None = None  # the map's, while it times this pod
        # Set by the scheduler: releases the pod's room in the snapshot the moment it is
        # rejected (before the rejecting code goes on, e.g. to preemption); Unreserve
        # plugins run afterwards in the pod's binding cycle.
        self.on_reject: Callable[[], None] | None = None

    @property
    def info(self) -> PodInfo:
        return self._info

    @property
    def node(self) -> str:
        return self._node

    @property
    def done(self) -> bool:
        return self._status is not None

    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        if self._status is not None:
            return
        self._pending.pop(plugin, None)
        if not self._pending:
            self._resolve(Status())

    def reject(self, plugin: str, message: str) -> None:
        if self._status is None:
            self._resolve(Status(Code.UNSCHEDULABLE, [message], plugin))

    def _timeout(self, plugin: str, seconds: float) -> None:
        if self._status is None and plugin in self._pending:
            self._resolve(Status(Code.UNSCHEDULABLE, [f"rejected due to timeout after waiting {seconds:g}s at permit"], plugin))

    def _resolve(self, status: Status) -> None:
        self._status = status
        if self._on_done is not None:
            self._on_done()
            self._on_done = None
        if not status.is_success and self.on_reject is not None:
            self.on_reject()
        if not self._future.done():
            self._future.set_result(status)

    async def wait(self) -> Status:
        return await self._future

    def __repr__(self) -> str:
        return f"WaitingPod({self._info.key} on {self._node}, pending={list(self._pending)})"


class WaitingPods:
    """uid -> WaitingPod, shared by all profiles of a scheduler; and their timeouts."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodImpl] = {}
        # (loop time due, seq, pod, plugin, seconds); entries of resolved pods stay until
        # they come due or the heap is rebuilt without them.
        self._due: list[tuple[float, int, WaitingPodImpl, str, float]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._timed = 0  # unresolved pods with entries in the heap

    def add(self, wp: WaitingPodImpl) -> None:
        """Park `wp`; each of its plugins' timeouts counts from now."""
        self._pods[wp.info.uid] = wp
        if not wp._timeouts or wp.done:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        for name, seconds in wp._timeouts:
            heapq.heappush(self._due, (now + seconds, next(self._seq), wp, name, seconds))
        self._timed += 1
        wp._on_done = self._resolved
        self._arm(loop)

    def _resolved(self) -> None:
        self._timed -= 1
        if self._timed == 0:
            # Nothing left to time out: drop the resolved pods' entries and the timer.
            self._due.clear()
            self._disarm()
        elif len(self._due) > 256 and len(self._due) > 4 * self._timed:
            self._due = [e for e in self._due if not e[2].done]
            heapq.heapify(self._due)
            self._disarm()
            self._arm(asyncio.get_running_loop())

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._due and self._due[0][0] < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = self._due[0][0]
            self._timer = loop.call_at(self._timer_at, self._fire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, float("inf")

    def _fire(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._due and self._due[0][0] <= now:
            _, _, wp, name, seconds = heapq.heappop(self._due)
            try:
                wp._timeout(name, seconds)
            except Exception:  # one pod's reject hook must not keep the others waiting
                log.exception("permit timeout of %s failed", wp.info.key)
        self._arm(loop)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodImpl | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPodImpl]:
        # A list copy: allow/reject callbacks may remove entries while callers iterate.
        # Resolved pods (allowed or rejected, binding cycle not yet resumed) are skipped.
        return iter([wp for wp in self._pods.values() if not wp.done])

    def __len__(self) -> int:
        return sum(1 for wp in self._pods.values() if not wp.done)
