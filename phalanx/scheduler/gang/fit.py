"""Does a set of pods fit into free node resources? Vectorised, for preemption what-ifs.

`free` is a (nodes x resources) matrix of allocatable minus requested (snapshot columns);
each `Need` is a request vector (the snapshot's columns and amounts, `pods` included) and how
many pods of that shape must be placed. Shapes are placed one after the other, each on the
nodes with the most room for it first (few nodes, little fragmentation). Exact for a single
shape (a gang's members are usually identical); a greedy heuristic for several.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    # The members keep apart (a required anti-affinity term that matches themselves): the
    # term's topology domain id per row (aligned with `free`; 0 = no such label, no limit).
    # At most one pod of the shape per domain.
    spread: np.ndarray | None = None


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
    if need.spread is not None:
        dom = need.spread
        labelled = dom > 0
        cap[labelled] = np.minimum(cap[labelled], 1)
        # One row per domain: the first row of each domain that can take a pod.
        rows = np.flatnonzero(labelled & (cap > 0))
        if rows.size:
            _, first = np.unique(dom[rows], return_index=True)
            keep = np.zeros(cap.size, dtype=bool)
            keep[rows[first]] = True
            cap[labelled & ~keep] = 0
    return cap


def fits(free: np.ndarray, needs: Sequence[Need]) -> int | None:
    """The row (index into `free`) where the first pod of `needs[0]` goes, or None if not
    every pod fits. `free` is not modified."""
    return _place(free.copy(), needs)


def fits_scoped(free: np.ndarray, needs: Sequence[Need], scopes: Sequence[str | None],
                domains: Mapping[str, np.ndarray],
                placed: list[list[int]] | None = None) -> int | None:
    """Like `fits`, where the pods of the needs sharing a scope name must all land in one
    domain of that scope (`domains[scope]`: domain id per row, 0 = none). Scopes are placed
    first (the one of `needs[0]` leading), each in the first domain, by most room, that
    holds all its pods; then the unscoped needs anywhere. Greedy: exact for one scope of
    one shape. `placed`, if given, receives each need's rows, one per pod, in need order."""
    work = free.copy()
    rows_of: dict[int, list[int]] = {}
    by_scope: dict[str | None, list[int]] = {}
    for i, sc in enumerate(scopes):
        by_scope.setdefault(sc, []).append(i)
    order = sorted(by_scope, key=lambda sc: (sc is None, 0 not in by_scope[sc], sc or ""))
    first: int | None = None
    for sc in order:
        group = [needs[i] for i in by_scope[sc]]
        out: list[list[int]] = []
        if sc is None:
            row = _place(work, group, out)
            if row is None:
                return None
        else:
            col = domains[sc]
            values = np.unique(col[col > 0])
            room = [
                float(
                    sum(
                        capacity(
                            work, Need(n.cols, n.vals, n.count, _and(n.mask, col == v), n.spread)
                        ).sum()
                        for n in group
                    )
                )
                for v in values.tolist()
            ]
            row = None
            for v in [values[i] for i in np.argsort(room, kind="stable")[::-1]]:
                trial = work.copy()
                sub = [
                    Need(n.cols, n.vals, n.count, _and(n.mask, col == v), n.spread) for n in group
                ]
                out = []
                row = _place(trial, sub, out)
                if row is not None:
                    work = trial
                    break
            if row is None:
                return None
        rows_of.update(zip(by_scope[sc], out, strict=True))
        if 0 in by_scope[sc]:
            first = row
    if placed is not None:
        placed[:] = [rows_of[i] for i in range(len(needs))]
    return first


def _and(mask: np.ndarray | None, other: np.ndarray) -> np.ndarray:
    return other if mask is None else mask & other


def _place(work: np.ndarray, needs: Sequence[Need], placed: list[list[int]] | None = None
           ) -> int | None:
    """Place the needs into `work` (modified); the row of needs[0]'s first pod, or None.
    `placed` receives each need's rows, one per pod."""
    free = work
    first: int | None = None
    for need in needs:
        at: list[int] = []
        if placed is not None:
            placed.append(at)
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
            at.extend([row] * take)
            left -= take
    return first if first is not None else (0 if free.shape[0] else None)


def max_placeable(free: np.ndarray, needs: Sequence[Need]) -> int:
    """How many of the pods fit at most (placing shapes in order)."""
    if len(needs) == 1:
        # One shape: each row takes what it can independently, so the greedy placement
        # below places min(count, total capacity); no sort, no copy.
        need = needs[0]
        return min(need.count, int(capacity(free, need).sum()))
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
