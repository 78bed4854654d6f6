"""Pods parked at Permit until their plugins allow them (kube-scheduler's waitingPodsMap)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from .status import Code, Status
from .types import PodInfo


class WaitingPodImpl:
    """One pod waiting at Permit. Resolves exactly once: allowed by all, rejected, or timed out."""

    __slots__ = ("_info", "_node", "_pending", "_timers", "_future", "_status", "on_reject")

    def __init__(self, info: PodInfo, node: str, timeouts: dict[str, float]) -> None:
        self._info = info
        self._node = node
        self._pending: dict[str, None] = dict.fromkeys(sorted(timeouts))
        loop = asyncio.get_running_loop()
        self._future: asyncio.Future[Status] = loop.create_future()
        self._status: Status | None = None
        # Set by the scheduler: releases the pod's room in the snapshot the moment it is
        # rejected (before the rejecting code goes on, e.g. to preemption); Unreserve
        # plugins run afterwards in the pod's binding cycle.
        self.on_reject: Callable[[], None] | None = None
        # One timer per waiting plugin: its own timeout rejects the pod.
        self._timers = [
            loop.call_later(t, self._timeout, name, t) for name, t in sorted(timeouts.items())
        ]

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
        for t in self._timers:
            t.cancel()
        if not status.is_success and self.on_reject is not None:
            self.on_reject()
        if not self._future.done():
            self._future.set_result(status)

    async def wait(self) -> Status:
        return await self._future

    def __repr__(self) -> str:
        return f"WaitingPod({self._info.key} on {self._node}, pending={list(self._pending)})"


class WaitingPods:
    """uid -> WaitingPod, shared by all profiles of a scheduler."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodImpl] = {}

    def add(self, wp: WaitingPodImpl) -> None:
        self._pods[wp.info.uid] = wp

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
