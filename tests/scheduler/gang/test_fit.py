"""gang/fit.py: where the planned pods land (`placed`), as preemption nominates them, and
how many pods of a gang fit at most (`max_placeable`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.scheduler.gang.fit import Need, capacity, fits_scoped, max_placeable

GPU = np.array([0])


def _need(gpus: float, count: int, mask: list[bool] | None = None) -> Need:
    return Need(GPU, np.array([gpus]), count, None if mask is None else np.array(mask))


def test_placed_gives_one_row_per_pod_in_need_order() -> None:
    free = np.array([[8.0], [0.0], [16.0], [8.0]])
    placed: list[list[int]] = []
    first = fits_scoped(free, [_need(8, 2), _need(4, 3)], [None, None], {}, placed)
    assert first == 2
    assert [len(rows) for rows in placed] == [2, 3]
    assert placed[0][0] == first
    assert 1 not in placed[0] + placed[1]


def test_placed_follows_the_scoped_needs_back_to_their_order() -> None:
    """A scoped need is placed first, yet `placed` stays in the callers' need order."""
    free = np.array([[8.0], [8.0], [8.0], [8.0]])
    domains = {"rack": np.array([1, 1, 2, 2])}
    placed: list[list[int]] = []
    first = fits_scoped(free, [_need(8, 1), _need(8, 2)], [None, "rack"], domains, placed)
    assert first is not None
    assert len(placed[0]) == 1 and len(placed[1]) == 2
    assert len({int(domains["rack"][r]) for r in placed[1]}) == 1
    assert placed[0][0] not in placed[1]


def test_placed_untouched_when_the_pods_do_not_fit() -> None:
    placed: list[list[int]] = [[99]]
    assert fits_scoped(np.array([[8.0]]), [_need(8, 2)], [None], {}, placed) is None
    assert placed == [[99]]


@settings(max_examples=200, deadline=None)
@given(free=st.lists(st.integers(0, 16), min_size=1, max_size=8),
       needs=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 6)),
                      min_size=1, max_size=3))
def test_placed_never_overfills_a_node(free: list[int], needs: list[tuple[int, int]]) -> None:
    room = np.array([[float(f)] for f in free])
    placed: list[list[int]] = []
    first = fits_scoped(room, [_need(g, n) for g, n in needs], [None] * len(needs), {}, placed)
    if first is None:
        return
    used = np.zeros(len(free))
    for (gpus, count), rows in zip(needs, placed, strict=True):
        assert len(rows) == count
        for r in rows:
            used[r] += gpus
    assert (used <= np.array(free)).all()
    assert placed[0][0] == first


def _greedy_placeable(free: np.ndarray, need: Need) -> int:
    """The row-by-row greedy placement (most room first) that max_placeable models."""
    work = free.copy()
    left = need.count
    cap = capacity(work, need)
    for row in np.argsort(-cap, kind="stable").tolist():
        take = min(int(cap[row]), left)
        if take <= 0:
            break
        work[row, need.cols] -= take * need.vals
        left -= take
    return need.count - left


@settings(max_examples=300, deadline=None)
@given(free=st.lists(st.tuples(st.integers(0, 16), st.integers(0, 64)), min_size=1, max_size=10),
       gpus=st.sampled_from([0, 1, 2, 4, 8]), cpu=st.integers(0, 32), count=st.integers(1, 40),
       mask=st.none() | st.lists(st.booleans(), min_size=10, max_size=10),
       spread=st.none() | st.lists(st.integers(0, 3), min_size=10, max_size=10))
def test_max_placeable_one_shape_matches_the_greedy_placement(
        free: list[tuple[int, int]], gpus: int, cpu: int, count: int,
        mask: list[bool] | None, spread: list[int] | None) -> None:
    room = np.array([[float(g), float(c)] for g, c in free])
    n = room.shape[0]
    need = Need(np.array([0, 1]), np.array([float(gpus), float(cpu)]), count,
                None if mask is None else np.array(mask[:n]),
                None if spread is None else np.array(spread[:n]))
    assert max_placeable(room, [need]) == _greedy_placeable(room, need)


def test_max_placeable_several_shapes_place_in_order() -> None:
    """The first shape takes the big rows, so the second finds less room than on its own."""
    free = np.array([[8.0], [4.0]])
    assert max_placeable(free, [_need(8, 1), _need(4, 2)]) == 2
    assert max_placeable(free, [_need(4, 2)]) == 2
    assert max_placeable(free, [_need(4, 3), _need(8, 1)]) == 3
