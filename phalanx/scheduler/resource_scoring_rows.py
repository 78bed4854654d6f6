"""The resource scorers of resource_scoring.py, one node at a time in Python numbers.

A scheduling cycle re-scores only the few nodes that changed since the pod's signature was
last scored (signature_cache.py), usually one to four: there NumPy's fixed cost per call
dominates, and these loops cost a tenth of it. Same formulas, same integer and float
operations in the same order, so both paths give identical scores (a randomised test
holds them to that: tests/scheduler/plugins/test_resource_scoring_paths.py).

Each function takes per node (row) its `alloc` and `used` per taking-part resource (floats
holding whole numbers), then the pod's `amounts` and the `weights`, and returns the scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX = 100
HALF = MAX // 2
MAX_UTILIZATION = 100
# Rows up to this many are scored here rather than vectorised.
SMALL = 8


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


Rows = Sequence[Sequence[float]]


def least_allocated(
    alloc: Rows, used: Rows, amounts: Sequence[int], weights: Sequence[int]
) -> list[int]:
    out = []
    for alloc_row, used_row in zip(alloc, used, strict=True):
        total = wsum = 0
        for a, u, n, w in zip(alloc_row, used_row, amounts, weights, strict=True):
            if a:
                cap, req = int(a), int(u) + n
                if req <= cap:
                    total += (cap - req) * MAX // cap * w
                wsum += w
        out.append(total // wsum if wsum else 0)
    return out


def most_allocated(
    alloc: Rows, used: Rows, amounts: Sequence[int], weights: Sequence[int]
) -> list[int]:
    out = []
    for alloc_row, used_row in zip(alloc, used, strict=True):
        total = wsum = 0
        for a, u, n, w in zip(alloc_row, used_row, amounts, weights, strict=True):
            if a:
                cap, req = int(a), int(u) + n
                total += (req if req < cap else cap) * MAX // cap * w
                wsum += w
        out.append(total // wsum if wsum else 0)
    return out


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            u0, s0 = shape[i - 1]
            return s0 + _go_div((s - s0) * (p - u0), u - u0)
    return shape[-1][1]


def requested_to_capacity_ratio(
    alloc: Rows,
    used: Rows,
    amounts: Sequence[int],
    weights: Sequence[int],
    shape: Sequence[tuple[int, int]],
) -> list[int]:
    """`shape`: scores already scaled to 0..100."""
    out = []
    for alloc_row, used_row in zip(alloc, used, strict=True):
        total = wsum = 0
        for a, u, n, w in zip(alloc_row, used_row, amounts, weights, strict=True):
            if a:
                cap, req = int(a), int(u) + n
                util = MAX_UTILIZATION if req > cap else req * MAX_UTILIZATION // cap
                score = broken_linear(shape, util)
                if score > 0:
                    total += score * w
                    wsum += w
        out.append(int(math.floor(total / wsum + 0.5)) if wsum else 0)
    return out


def _balance(fracs: list[float]) -> int:
    std = 0.0
    if len(fracs) == 2:
        std = abs((fracs[0] - fracs[1]) / 2)
    elif len(fracs) > 2:
        mean = sum(fracs) / len(fracs)
        std = math.sqrt(sum([(f - mean) * (f - mean) for f in fracs]) / len(fracs))
    return math.trunc((1 - std) * MAX)


def balanced_allocation(alloc: Rows, used: Rows, amounts: Sequence[int]) -> list[int]:
    out = []
    for alloc_row, used_row in zip(alloc, used, strict=True):
        with_pod: list[float] = []
        without: list[float] = []
        for a, u, n in zip(alloc_row, used_row, amounts, strict=True):
            if a:
                r = (u + n) / a
                f = u / a
                with_pod.append(r if r < 1.0 else 1.0)
                without.append(f if f < 1.0 else 1.0)
        out.append(HALF + (HALF + _balance(with_pod) - _balance(without)) // 2)
    return out
