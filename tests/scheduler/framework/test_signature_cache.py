"""SignatureEntry.set_feasible: the element-by-element update of a few rows and the vectorised
one of many leave the same feasibility, and the kept feasible rows follow every flip."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.scheduler.framework.signature_cache import SignatureEntry

N = 40


@settings(max_examples=300, deadline=None)
@given(
    before=st.lists(st.booleans(), min_size=N, max_size=N),
    steps=st.lists(
        st.tuples(st.sets(st.integers(0, N - 1), max_size=20), st.randoms(use_true_random=False)),
        min_size=1,
        max_size=6,
    ),
)
def test_set_feasible_marks_exactly_the_rows_that_passed(before, steps):
    entry = SignatureEntry(N)
    entry.feasible[:] = before
    expected = np.asarray(before, dtype=bool)
    assert np.array_equal(entry.feasible_rows(N), np.flatnonzero(expected))
    for dirty_set, rng in steps:
        dirty = np.asarray(sorted(dirty_set), dtype=np.int64)
        ok = np.asarray(sorted(r for r in dirty_set if rng.random() < 0.5), dtype=np.int64)
        entry.set_feasible(dirty, ok)
        expected[dirty] = False
        expected[ok] = True
        assert np.array_equal(entry.feasible, expected)
        # The rows kept between refreshes are dropped when a row flips, kept otherwise.
        assert np.array_equal(entry.feasible_rows(N), np.flatnonzero(expected))
