"""The rotating sample of feasible rows a cycle scores (percentageOfNodesToScore below 100%):
kube-scheduler's nextStartNodeIndex. `score_window` is held to the definition, the k rows at
positions start, start+1, ... modulo the number of feasible rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.scheduler.cycle import score_window


@st.composite
def cases(draw):
    rows = np.asarray(sorted(draw(st.sets(st.integers(0, 300), min_size=2, max_size=80))),
                      dtype=np.int64)
    k = draw(st.integers(1, rows.size - 1))
    return rows, draw(st.integers(0, 320)), k


@settings(deadline=None)
@given(cases())
def test_the_window_is_k_rows_from_the_start_row_wrapping_around(case):
    rows, start_row, k = case
    start = int(np.searchsorted(rows, start_row))
    expected = rows[np.arange(start, start + k) % rows.size]
    assert np.array_equal(score_window(rows, start_row, k), expected)


def test_successive_windows_visit_every_row_in_turn():
    rows = np.array([2, 5, 7, 11, 13], dtype=np.int64)
    seen, start_row = [], 0
    for _ in range(5):
        w = score_window(rows, start_row, 2)
        seen += w.tolist()
        start_row = int(w[-1]) + 1
    assert seen == [2, 5, 7, 11, 13, 2, 5, 7, 11, 13]
