"""Whole-gang placement of a gang's minimum: one node per needed member, before any is placed.

Members are placed one per scheduling cycle, each on the best node for it at that moment.
For members of one shape that is exact (any order fills the same room), but a gang whose
groups differ (a big leader and small workers, a GPU group and a CPU group) can be placed
badly: small members on the only nodes the big ones fit, and the gang fails although some
assignment would satisfy every group's minimum. So when such a gang starts, the
coscheduling plugin asks `plan` for an assignment of its needed members (per group, up to
each group's minimum) and steers each member to its planned node.

`plan` tries best-fit decreasing first (each member, largest first, on the feasible node it
leaves fullest: bin-packing, like the default score), then a bounded depth-first search that
treats nodes in the same state as one and identical members in node order, so on small
instances it is exact: it returns None only when no assignment exists. Past its budget it
gives up with UNKNOWN and the gang is placed member by member as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

_EPS = 1e-9
DEFAULT_BUDGET = 20_000  # search nodes visited before giving up


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()


@dataclass(slots=True)
class Item:
    """One member to place: its request (snapshot columns and amounts) and the rows it may
    use (its filters' verdict with the cluster as it is)."""

    key: str
    cols: np.ndarray
    vals: np.ndarray
    mask: np.ndarray  # bool over the rows of `free`
    shape: object = None  # equal shapes: interchangeable members


def _fits(work: np.ndarray, it: Item) -> np.ndarray:
    return it.mask & np.all(work[:, it.cols] + _EPS >= it.vals, axis=1)


def _greedy(free: np.ndarray, items: Sequence[Item]) -> list[int] | None:
    work = free.copy()
    out: list[int] = []
    for it in items:
        ok = np.flatnonzero(_fits(work, it))
        if ok.size == 0:
            return None
        if it.cols.size:
            # Best fit: the node this member leaves with the least room (for its own shape).
            left = (work[np.ix_(ok, it.cols)] - it.vals) / np.maximum(it.vals, _EPS)
            row = int(ok[np.argmin(left.min(axis=1))])  # first minimum: lowest row
        else:  # the profile checks no resources: the lowest row
            row = int(ok[0])
        work[row, it.cols] -= it.vals
        out.append(row)
    return out


def plan(
    free: np.ndarray, items: Sequence[Item], *, budget: int = DEFAULT_BUDGET
) -> list[int] | None | _Unknown:
    """A row per item such that every item fits its row together with the others, None if
    there is none, UNKNOWN if the search ran out of budget. `free` is not modified."""
    if not items:
        return []
    order = sorted(range(len(items)), key=lambda i: -float(items[i].vals.sum()))
    ordered = [items[i] for i in order]
    rows = _greedy(free, ordered)
    if rows is None:
        rows_or = _search(free, ordered, budget)
        if rows_or is None or isinstance(rows_or, _Unknown):
            return rows_or
        rows = rows_or
    out = [0] * len(items)
    for pos, i in enumerate(order):
        out[i] = rows[pos]
    return out


def _search(free: np.ndarray, items: list[Item], budget: int) -> list[int] | None | _Unknown:
    work = free.copy()
    chosen: list[int] = []
    visits = 0
    # Only rows some item may use matter; rows none can use are dropped up front.
    useful = np.zeros(free.shape[0], dtype=bool)
    for it in items:
        useful |= it.mask
    masks = (
        np.stack([it.mask for it in items]) if items else np.zeros((0, free.shape[0]), dtype=bool)
    )

    def rec(i: int) -> bool | None:
        nonlocal visits
        if i == len(items):
            return True
        visits += 1
        if visits > budget:
            return None
        it = items[i]
        cand = np.flatnonzero(_fits(work, it) & useful)
        if i > 0 and items[i - 1].shape == it.shape and it.shape is not None:
            cand = cand[cand >= chosen[-1]]  # identical members: in node order only
        seen: set[tuple[object, ...]] = set()
        for row in cand.tolist():
            # Nodes with the same room and the same remaining items allowed are equivalent.
            sig = (tuple(work[row].tolist()), masks[i:, row].tobytes())
            if sig in seen:
                continue
            seen.add(sig)
            work[row, it.cols] -= it.vals
            chosen.append(row)
            r = rec(i + 1)
            if r:
                return True
            chosen.pop()
            work[row, it.cols] += it.vals
            if r is None:
                return None
        return False

    found = rec(0)
    if found is None:
        return UNKNOWN
    return list(chosen) if found else None
