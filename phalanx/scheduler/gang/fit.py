"""Does a set of pods fit into free node resources? Vectorised, for preemption what-ifs.

`free` is a (nodes x resources) matrix of allocatable minus requested (snapshot columns);
each `Need` is a request vector (the snapshot's columns and amounts, `pods` included) and how
many pods of that shape must be placed. Shapes are placed one after the other, each on the
nodes with the most room for it first (few nodes, little fragmentation). Exact for a single
shape (a gang's members are usually identical); a greedy heuristic for several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_EPS = 1e-9


@dataclass(slots=True)
class Need:
    cols: np.ndarray  # int column indices
    vals: np.ndarray  # float amounts per column (> 0 where it matters)
    count: int
    # Rows (aligned with `free`) this shape may use at all (its other filters); None: all.
    mask: np.ndarray | None = None


def capacity(free: np.ndarray, need: Need) -> np.ndarray:
    """Pods of `need`'s shape each row can still take (int array)."""
    used = need.vals > 0
    if not used.any():
        cap = np.full(free.shape[0], need.count, dtype=np.int64)
    else:
        per = (free[:, need.cols[used]] + _EPS) / need.vals[used]
        cap = np.maximum(np.floor(per.min(axis=1)), 0).astype(np.int64)
    if need.mask is not None:
        cap[~need.mask] = 0
    return cap


def fits(free: np.ndarray, needs: Sequence[Need]) -> int | None:
    """The row (index into `free`) where the first pod of `needs[0]` goes, or None if not
    every pod fits. `free` is not modified."""
    work = free.copy()
    first: int | None = None
    for need in needs:
        cap = capacity(work, need)
        if int(cap.sum()) < need.count:
            return None
        order = np.argsort(-cap, kind="stable")
        left = need.count
        for row in order.tolist():
            if left <= 0:
                break
            take = min(int(cap[row]), left)
            if take <= 0:
                break
            if first is None:
                first = row
            work[row, need.cols] -= take * need.vals
            left -= take
    return first if first is not None else (0 if free.shape[0] else None)


def max_placeable(free: np.ndarray, needs: Sequence[Need]) -> int:
    """How many of the pods fit at most (placing shapes in order)."""
    work = free.copy()
    placed = 0
    for need in needs:
        cap = capacity(work, need)
        order = np.argsort(-cap, kind="stable")
        left = need.count
        for row in order.tolist():
            take = min(int(cap[row]), left)
            if take <= 0:
                break
            work[row, need.cols] -= take * need.vals
            left -= take
        placed += need.count - left
    return placed
