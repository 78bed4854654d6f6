"""Bounded waits that say what they waited for.

    wait_until(lambda: proc.ready(), timeout=30, what="kube-apiserver /readyz")
    await wait_until_async(pods_running, timeout=60, what="3 pods Running")

The predicate's last return value (or the last exception it raised) is kept, so a timeout
reads "timed out after 30s waiting for 3 pods Running; last seen: 2/3 Running" instead of a
bare assertion. A predicate returns something truthy when done; anything falsy means "not
yet" and is shown as the last state. `Pending(state)` is falsy and shows `state`, so a
predicate can report progress without being mistaken for done.

`stall=` makes the wait as long as the work takes, not as long as a quiet machine needs:
it gives up when the state shown has not changed for `stall` seconds (nothing is happening)
or after `timeout` in all (a backstop). A loaded machine that creates, binds and starts 14 pods
three times slower still passes; a wait on which nothing moves fails after `stall`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any


_CUT_OFF = " (then a check did not return before the deadline)"


class WaitTimeout(AssertionError):
    """A bounded wait ran out. An AssertionError, so pytest shows it as a test failure."""

    def __init__(self, what: str, timeout: float, last: object) -> None:
        super().__init__(f"timed out after {timeout:g}s waiting for {what}; last seen: {last}")
        self.what = what
        self.timeout = timeout
        self.last = last


class Pending:
    """A falsy predicate result that carries the state to report."""

    __slots__ = ("state",)

    def __init__(self, state: object) -> None:
        self.state = state

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return str(self.state)


def _describe(value: object) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    text = repr(value)
    return text if len(text) <= 2000 else text[:2000] + "..."


def wait_until(predicate: Callable[[], Any], timeout: float, *, what: str,
               interval: float = 0.1) -> Any:
    """Call `predicate` until it returns something truthy (returned) or `timeout` seconds
    pass (WaitTimeout). Exceptions from the predicate count as "not yet"."""
    deadline = time.monotonic() + timeout
    last: object = "nothing (never evaluated)"
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as err:  # noqa: BLE001 - reported as the last state
            last = err
        if time.monotonic() >= deadline:
            raise WaitTimeout(what, timeout, _describe(last))
        time.sleep(interval)


async def wait_until_async(predicate: Callable[[], Any | Awaitable[Any]], timeout: float, *,
                           what: str, interval: float = 0.1, stall: float | None = None) -> Any:
    """As `wait_until`, on the running event loop; `predicate` may be async. A single call
    that hangs is cut off at the deadline too. With `stall`, the wait ends early when the
    state shown has not changed for that long (see the module docs)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + timeout
    deadline = end if stall is None else min(end, start + stall)
    shown: str | None = None
    last: object = "nothing (never evaluated)"
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await asyncio.wait_for(value, max(deadline - loop.time(), 0.01))
            if value:
                return value
            last = value
        except TimeoutError:
            # Keep what the last completed check saw: that is what the reader needs.
            if not str(last).endswith(_CUT_OFF):
                last = Pending(f"{_describe(last)}{_CUT_OFF}")
        except Exception as err:  # noqa: BLE001 - reported as the last state
            last = err
        now = loop.time()
        if stall is not None and not isinstance(last, BaseException):
            state = _describe(last)
            if state != shown:  # progress: the stall clock starts again
                shown, deadline = state, min(end, now + stall)
        if now >= deadline:
            if stall is not None and now < end:
                raise WaitTimeout(f"{what} (nothing changed for {stall:g}s)", now - start,
                                  _describe(last))
            raise WaitTimeout(what, timeout, _describe(last))
        await asyncio.sleep(interval)
