"""A rate-limited work queue of keys, with client-go's guarantees.

- A key queued twice is processed once (dedup while waiting).
- A key is never processed by two workers at once: added while being processed, it is
  queued again (once) when the worker calls `done`.
- `add_after` delays an add (the earliest pending time wins); `add_rate_limited` delays by
  the per-key exponential backoff; `forget` resets that backoff after a success.
- `shutdown` wakes every waiting worker with `ShutDown`.

Timers run on the event loop's clock, so on the embedded cluster delays are virtual.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue was shut down; workers should return."""


class ExponentialBackoff(Generic[K]):
    """Per-key delay `base * 2**failures`, capped (controller-runtime: 5ms .. 1000s)."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        if n > 60:  # 2**60 * base is past any cap; avoid float overflow
            return self.max_delay
        return min(self.base * (2 ** n), self.max_delay)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


class WorkQueue(Generic[K]):
    def __init__(self, name: str = "", rate_limiter: ExponentialBackoff[K] | None = None) -> None:
        self.name = name
        self.rate_limiter: ExponentialBackoff[K] = rate_limiter or ExponentialBackoff()
        self._queue: deque[K] = deque()
        self._dirty: dict[K, None] = {}  # queued, or to be re-queued when processing ends
        self._processing: dict[K, None] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._delayed: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._shutting_down = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.adds = 0  # keys that entered the queue (after dedup)

    def __len__(self) -> int:
        return len(self._queue)

    def __repr__(self) -> str:
        return (f"<WorkQueue {self.name}: {len(self._queue)} queued, {len(self._processing)} "
                f"processing, {len(self._delayed)} delayed>")

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> int:
        return len(self._processing)

    # ------------------------------------------------------------------ adding

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty[key] = None
        if key in self._processing:
            return  # re-queued by done()
        self._push(key)

    def _push(self, key: K) -> None:
        self._queue.append(key)
        self.adds += 1
        self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = self._running_loop()
        when = loop.time() + delay
        pending = self._delayed.get(key)
        if pending is not None:
            if pending[0] <= when:
                return
            pending[1].cancel()
        self._delayed[key] = (when, loop.call_at(when, self._fire, key))

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        # Remembered: each `get_running_loop()` costs a getpid() system call. A queue's
        # timers and waiters live on one loop; a closed one is looked up afresh.
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def _fire(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> None:
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)

    # ------------------------------------------------------------------ processing

    async def get(self) -> K:
        """The next key; mark it processed with `done(key)`. Raises ShutDown."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = self._running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                # Pass a wake-up we may have consumed on to the next worker.
                if waiter.done() and not waiter.cancelled() and self._queue:
                    self._wake_one()
                raise
        key = self._queue.popleft()
        self._processing[key] = None
        del self._dirty[key]
        return key

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def done(self, key: K) -> None:
        self._processing.pop(key, None)
        if key in self._dirty and not self._shutting_down:
            self._push(key)

    def shutdown(self) -> None:
        self._shutting_down = True
        for _, handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    # ------------------------------------------------------------------ idleness

    def next_delayed(self) -> float | None:
        """Loop time of the earliest delayed add, if any."""
        return min((w for w, _ in self._delayed.values()), default=None)

    def idle(self, until: float | None = None) -> bool:
        """Nothing queued or processing, and no delayed add due at or before `until`."""
        if self._queue or self._processing:
            return False
        if until is None or not self._delayed:
            return True
        nxt = self.next_delayed()
        return nxt is None or nxt > until
