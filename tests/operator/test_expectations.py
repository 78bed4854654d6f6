"""CreateExpectations: a created pod counts as existing until the cache shows it or the
time-to-live passes."""

from __future__ import annotations

from phalanx.operator.expectations import CreateExpectations


def test_a_created_pod_is_pending_until_observed_or_expired() -> None:
    now = [0.0]
    exp = CreateExpectations(lambda: now[0], ttl=300)
    exp.expect("ns/p-0")
    exp.expect("ns/p-1")
    assert exp.pending("ns/p-0") and exp.pending("ns/p-1") and not exp.pending("ns/p-2")
    exp.observed("ns/p-0")  # the informer delivered it
    assert not exp.pending("ns/p-0")
    now[0] = 299.9
    assert exp.pending("ns/p-1")
    now[0] = 300.0  # never seen (e.g. deleted before its ADDED event was lost): retry
    assert not exp.pending("ns/p-1") and len(exp) == 0
