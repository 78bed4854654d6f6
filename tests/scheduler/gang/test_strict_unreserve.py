"""A Strict member unreserved before the deadline releases its whole gang group.

Unreserve before the schedule timeout means a failed bind, a Permit or PreBind rejection by
another plugin, or the pod deleted while it waited: in Strict mode the members still waiting
at Permit must be released at once (issue 21, "Gang invariants"), not hold their nodes until
the timeout. NonStrict keeps them (Koordinator: the gang accumulates)."""

from __future__ import annotations

from phalanx.scheduler.gang import GangCache, GangManager, GangMode

from .fakes import FakeSource, gang_obj, gid, pod

SRC = FakeSource()


def _two_waiting(mode: GangMode) -> tuple[GangCache, GangManager]:
    cache = GangCache({"test-scheduler": [SRC]})
    mgr = GangManager(cache, default_timeout=60.0)
    cache.set_object(SRC, gang_obj("g", 3, mode=mode))
    for i, n in enumerate("abc"):
        cache.add_pod(pod(n, "g", t=i))
    assert mgr.admit("ns/a").ok
    for key in ("ns/a", "ns/b"):
        mgr.reserved(key, "n1")
        assert mgr.permit(key, now=0.0).wait
    return cache, mgr


def test_a_strict_member_unreserved_before_the_deadline_releases_the_others() -> None:
    cache, mgr = _two_waiting(GangMode.STRICT)
    reject, timed_out = mgr.unreserved("ns/b", now=1.0)  # 59 s before the deadline
    assert (reject, timed_out) == (["ns/a"], False)
    st = cache.get(gid("g"))
    assert st is not None and not st.waiting and st.placed == 1  # a, until its rejection lands
    assert st.resets == 1
    # The released member retries: it leads the gang again.
    assert mgr.representative(gid("g")) in ("ns/b", "ns/c")
    assert mgr.admit(mgr.representative(gid("g")) or "").ok


def test_a_non_strict_member_unreserved_before_the_deadline_keeps_the_others() -> None:
    cache, mgr = _two_waiting(GangMode.NON_STRICT)
    assert mgr.unreserved("ns/b", now=1.0) == ([], False)
    st = cache.get(gid("g"))
    assert st is not None and st.waiting == {"ns/a"}


def test_the_retry_delay_of_a_gang_reset_thousands_of_times_stays_at_its_maximum() -> None:
    """A gang waiting for days (a multi-tenant trace) resets thousands of times; the delay
    doubles up to its maximum and stays there instead of overflowing."""
    from phalanx.scheduler.plugins.coscheduling import (
        RETRY_INITIAL_SECONDS,
        RETRY_MAX_SECONDS,
        retry_delay,
    )

    assert retry_delay(0) == retry_delay(1) == RETRY_INITIAL_SECONDS
    assert retry_delay(2) == min(2 * RETRY_INITIAL_SECONDS, RETRY_MAX_SECONDS)
    assert retry_delay(1100) == retry_delay(10**6) == RETRY_MAX_SECONDS
