"""FilterResult.all_pass: a verdict the cycle takes without copying its rows through an
all-True mask, and that a diagnosis counts exactly as the same verdict given as a mask."""

from __future__ import annotations

import numpy as np

from phalanx.scheduler.framework.runtime import Framework
from phalanx.scheduler.framework.types import Diagnosis, FilterResult, Rejection


def test_all_pass_is_flagged_and_still_a_full_mask():
    res = FilterResult.all_pass(7)
    assert res.all_passed
    assert res.feasible.dtype == bool and res.feasible.shape == (7,) and res.feasible.all()
    for other in (FilterResult(np.ones(7, dtype=bool)), FilterResult.reject_all(7, "no"),
                  FilterResult.from_mask(np.ones(7, dtype=bool), "x")):
        assert not other.all_passed


def _account(res: FilterResult, rows: np.ndarray) -> tuple[np.ndarray, Diagnosis, np.ndarray]:
    diag = Diagnosis(total_nodes=10)
    codes = np.zeros(10, dtype=np.int8)
    return Framework._account("P", res, rows, diag, codes), diag, codes


def test_a_diagnosis_counts_an_all_pass_as_the_same_verdict_given_as_a_mask():
    rows = np.array([1, 3, 4, 8], dtype=np.int64)
    flagged = _account(FilterResult.all_pass(rows.size), rows)
    masked = _account(FilterResult(np.ones(rows.size, dtype=bool)), rows)
    assert np.array_equal(flagged[0], rows) and np.array_equal(masked[0], rows)
    assert flagged[1] == masked[1] == Diagnosis(total_nodes=10)
    assert np.array_equal(flagged[2], masked[2])


def test_a_partial_verdict_is_still_applied():
    rows = np.array([1, 3, 4, 8], dtype=np.int64)
    mask = np.array([True, False, True, False])
    kept, diag, _ = _account(FilterResult(mask, [Rejection("Insufficient cpu", ~mask)]), rows)
    assert kept.tolist() == [1, 4]
    assert diag.reason_counts == {"Insufficient cpu": 2} and diag.plugin_counts == {"P": 2}


def test_all_pass_masks_are_read_only_and_any_length():
    import pytest

    small, large = FilterResult.all_pass(3), FilterResult.all_pass(10_000)
    assert small.feasible.shape == (3,) and large.feasible.shape == (10_000,)
    assert small.feasible.all() and large.feasible.all()
    assert FilterResult.all_pass(0).feasible.shape == (0,)
    with pytest.raises(ValueError):  # shared: no caller may change it
        large.feasible[0] = False
