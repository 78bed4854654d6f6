"""Test helpers that work on any Client (embedded or over the wire)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from phalanx.cluster.clock import settle, wait_for_condition


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    """Wait (on the loop's clock) until `await check()` is true; fail with its last value."""
    await settle()
    if not await wait_for_condition(check, timeout=timeout, interval=0.05):
        raise AssertionError(f"condition {check.__qualname__} still false after {timeout}s")


def assert_now(client_factory, c, ts) -> None:
    """`ts` was stamped by the server just now: exactly the virtual clock's now on an
    embedded cluster; on a real server within a few seconds (it stamps whole seconds)."""
    now = c.clock.now_dt()
    if client_factory.real:
        assert ts is not None and abs((ts - now).total_seconds()) < 5, (ts, now)
    else:
        assert ts == now
