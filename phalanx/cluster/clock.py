"""Time. Everything asks a `Clock`; nothing calls time.time() directly.

The embedded cluster runs on a virtual clock built into the asyncio event loop: when every
task is waiting on a timer, the loop jumps straight to the next timer instead of sleeping.
So `asyncio.sleep`, `asyncio.wait_for` and `loop.call_later` all run on virtual time, a
simulated hour takes milliseconds, and a run with the same inputs gives the same result.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

# Virtual runs start at a fixed instant so timestamps are reproducible.
VIRTUAL_EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def now_dt(self) -> datetime: ...

    def monotonic(self) -> float:
        """Seconds on the event loop's clock (what asyncio timers use)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """Wall-clock time, for a real API server."""

    def now(self) -> float:
        return time.time()

    def now_dt(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class VirtualClock:
    """Virtual time. Advanced by `VirtualTimeLoop` when the loop would otherwise sleep."""

    def __init__(self, start: float = VIRTUAL_EPOCH) -> None:
        self._start = start
        self._elapsed = 0.0

    @property
    def elapsed(self) -> float:
        """Virtual seconds since the clock started."""
        return self._elapsed

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self._elapsed += seconds

    def now(self) -> float:
        return self._start + self._elapsed

    def now_dt(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)

    def monotonic(self) -> float:
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _QuiescenceWaiter:
    __slots__ = ("after_progress", "future", "registered_at")

    def __init__(self, future: asyncio.Future[bool], after_progress: bool, progress: int):
        self.future = future
        self.after_progress = after_progress
        self.registered_at = progress


class _VirtualSelector(selectors.BaseSelector):
    """Polls real file descriptors without blocking; a wait becomes a clock jump.

    Before jumping, it wakes the `quiescent()` waiters: "everything that could run has run".
    """

    def __init__(self, clock: VirtualClock) -> None:
        self._inner = selectors.DefaultSelector()
        self._clock = clock
        # Bumped whenever the loop runs anything or time moves: lets a waiter ask for the
        # next quiescent point *after* some progress (so waiting in a loop lets time advance).
        self.progress = 0
        self.waiters: list[_QuiescenceWaiter] = []
        self.loop_fd = -1  # the loop's self-pipe, set by VirtualTimeLoop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._inner.select(0)
        if ready or (timeout is not None and timeout <= 0):
            self.progress += 1
            return ready
        # Nothing is ready: the loop is quiescent until time moves (or real I/O arrives).
        if self.waiters and self._wake_waiters(
                stalled=timeout is None and not self._waiting_on_io()):
            return []
        if timeout is None:
            # Nothing is scheduled: only real I/O (a socket, another thread) can wake us.
            ready = self._inner.select(None)
            self.progress += 1
            return ready
        self._clock.advance(timeout)
        self.progress += 1
        return []

    def _waiting_on_io(self) -> bool:
        """Some file descriptor besides the loop's own wake-up pipe is registered."""
        return any(key.fd != self.loop_fd for key in self._inner.get_map().values())

    def _wake_waiters(self, stalled: bool) -> bool:
        due, keep = [], []
        for w in self.waiters:
            if w.future.done():
                continue
            if stalled or not w.after_progress or w.registered_at < self.progress:
                due.append(w)
            else:
                keep.append(w)
        self.waiters = keep
        for w in due:
            w.future.set_result(stalled)
        return bool(due)

    def close(self) -> None:
        self._inner.close()

    def get_map(self) -> Any:
        return self._inner.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose time() is a VirtualClock."""

    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self._vselector = _VirtualSelector(self.clock)
        super().__init__(selector=self._vselector)
        self._vselector.loop_fd = self._ssock.fileno()  # type: ignore[attr-defined]

    def time(self) -> float:
        return self.clock.monotonic()

    def quiescent(self, *, after_progress: bool = False) -> asyncio.Future[bool]:
        """A future resolved at the next point where every task is waiting (on a timer, a
        future or I/O), before virtual time moves on.

        With `after_progress`, the loop must first run something or advance time, so a
        caller that checks a condition and waits again lets time move. The result is True
        when the loop is stalled: nothing is ready, no timer is pending and no socket is
        awaited.
        """
        future = self.create_future()
        sel = self._vselector
        sel.waiters.append(_QuiescenceWaiter(future, after_progress, sel.progress))
        return future


def run_virtual(
    main: Callable[[], Coroutine[Any, Any, T]] | Coroutine[Any, Any, T],
    clock: VirtualClock | None = None,
) -> T:
    """Run a coroutine to completion on virtual time (the embedded-cluster entry point)."""
    loop = VirtualTimeLoop(clock)
    try:
        asyncio.set_event_loop(loop)
        coro = main() if callable(main) else main
        return loop.run_until_complete(coro)
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


async def settle() -> None:
    """Return once every other task is blocked (virtual time has not moved meanwhile).

    The way to let background work (watch delivery, informers, garbage collection, event
    writers) finish in a test without sleeping. On a real event loop it only yields a few
    times, which is best effort.
    """
    loop = asyncio.get_running_loop()
    if isinstance(loop, VirtualTimeLoop):
        await loop.quiescent()
    else:
        for _ in range(20):
            await asyncio.sleep(0)


async def wait_for_condition(
    predicate: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float,
    interval: float = 0.1,
) -> bool:
    """Poll `predicate` on the loop's clock until true or `timeout` (virtual) seconds pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result  # type: ignore[misc]
        if result:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(interval)
