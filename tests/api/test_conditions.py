"""set_condition (phalanx/api/base.py): lastTransitionTime is when the *status* last changed.

Gang termination measures a breach from it: a breach that gets worse (its message says so)
must not restart that timer (issue 21, "Gang invariants")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from phalanx.api.base import Condition, get_condition, set_condition

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_only_a_status_change_moves_last_transition_time() -> None:
    conds: list[Condition] = []
    assert set_condition(conds, "MinAvailableBreached", True, "InsufficientReadyPods",
                         "1/3 ready, 2 needed", now=_at(0))
    # Worse, then with another reason: written (True), but the transition stays at 0.
    assert set_condition(conds, "MinAvailableBreached", True, "InsufficientReadyPods",
                         "0/3 ready, 2 needed", now=_at(5))
    assert set_condition(conds, "MinAvailableBreached", True, "InsufficientScheduledPods",
                         "0/3 ready, 2 needed", now=_at(6))
    c = get_condition(conds, "MinAvailableBreached")
    assert c is not None and c.last_transition_time == _at(0)
    assert (c.reason, c.message) == ("InsufficientScheduledPods", "0/3 ready, 2 needed")
    # Nothing changed: no write, nothing moves.
    assert not set_condition(conds, "MinAvailableBreached", True, "InsufficientScheduledPods",
                             "0/3 ready, 2 needed", now=_at(7))
    assert c.last_transition_time == _at(0)
    # The status flips: now it moves.
    assert set_condition(conds, "MinAvailableBreached", False, "SufficientReadyPods",
                         "3/3 ready", now=_at(8))
    assert c.status == "False" and c.last_transition_time == _at(8)
