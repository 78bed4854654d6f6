"""kube-scheduler's resource allocation scorers (noderesources/resource_allocation.go and
the strategies), vectorised over snapshot rows, with kube's integer results.

For each configured resource, per node: `allocatable`, `allocated` (what the node's pods
request) and `requested` (allocated + this pod). A resource counts on a node only if the
node has some of it, and a scalar one (an extended resource, hugepages...) only if the pod
asks for it. cpu and memory count kube's non-zero requests (100m / 200Mi per container that
names none) unless the scorer uses plain requests (BalancedAllocation does); everything else
counts plain requests. Resources kube never scores (`pods`, `storage`...) count nowhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.scheduler.framework.interface import MAX_NODE_SCORE
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.resources import is_counted, is_scalar
from phalanx.scheduler.scoring import go_div, go_round
from phalanx.scheduler.snapshot import Snapshot

MAX_UTILIZATION = 100
# Below this, float64 gives kube's int64 results (see ResourceScorer.allocation).
_FLOAT_EXACT = 2.0**46
_MAX = int(MAX_NODE_SCORE)
MAX_CUSTOM_PRIORITY_SCORE = 10  # shape scores are 0..10, scaled to 0..100


@dataclass(slots=True)
class Allocation:
    """Per (row, resource) int64 arrays over the resources that take part for this pod
    (`weights` aligned to them); `counted` says on which nodes each one counts."""

    requested: np.ndarray
    allocated: np.ndarray
    allocatable: np.ndarray
    counted: np.ndarray
    weights: np.ndarray


def pod_amounts(pod: PodInfo, names: Sequence[str], non_zero: bool) -> list[float]:
    """The pod's request of each resource (kube's calculatePodResourceRequestList)."""
    req = pod.score_requests if non_zero else pod.requests
    return [req.get(n, 0.0) for n in names]


@dataclass(slots=True)
class _Plan:
    """For one pod shape and snapshot layout: the columns that take part, the pod's amounts
    and the weights. `resources` is the snapshot's column list it was made for."""

    resources: list[str]
    cols: list[int]
    amounts: np.ndarray
    weights: np.ndarray
    amount_list: list[int]
    weight_list: list[int]


class ResourceScorer:
    """Gathers allocatable, allocated and requested for the configured resources on snapshot
    rows. With `non_zero`, cpu and memory count kube's non-zero requests: the snapshot's
    score_requested column (equal to requested for every other resource)."""

    def __init__(self, names: Sequence[str], weights: Sequence[int], non_zero: bool) -> None:
        self.names = list(names)
        self.weights = list(weights)
        self.non_zero = non_zero
        self._plans: dict[object, _Plan] = {}

    def _plan(self, snap: Snapshot, pod: PodInfo) -> _Plan:
        key = (snap.layout_version, pod.signature[1])
        plan = self._plans.get(key)
        # The snapshot only appends columns (and bumps layout_version); another snapshot
        # has another column list, which the plan keeps alive, so `is` tells them apart.
        if plan is not None and plan.resources is snap.resources:
            return plan
        need = pod_amounts(pod, self.names, self.non_zero)
        take = [
            (j, col)
            for j, name in enumerate(self.names)
            if (col := snap.resource_index.get(name)) is not None
            and is_counted(name)
            and not (need[j] == 0 and is_scalar(name))
        ]
        amounts = [int(need[j]) for j, _ in take]
        weights = [self.weights[j] for j, _ in take]
        plan = _Plan(
            snap.resources,
            [c for _, c in take],
            np.asarray(amounts, dtype=np.int64),
            np.asarray(weights, dtype=np.int64),
            amounts,
            weights,
        )
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def allocation(
        self, snap: Snapshot, pod: PodInfo, idx: np.ndarray, *, exact: bool = True
    ) -> Allocation:
        """`exact`: arrays kube's integer scorers can divide exactly: float64 while every
        amount is below 2**46 (products with 100 stay exact, and a whole-number quotient
        rounds to itself), int64 beyond; else float64 (kube's fractions)."""
        plan = self._plan(snap, pod)
        alloc = snap.allocatable[idx][:, plan.cols]
        used = (snap.score_requested if self.non_zero else snap.requested)[idx][:, plan.cols]
        requested = used + plan.amounts
        if exact and alloc.size and max(alloc.max(), requested.max()) >= _FLOAT_EXACT:
            alloc, used = alloc.astype(np.int64), used.astype(np.int64)
            requested = used + plan.amounts
        return Allocation(requested, used, alloc, alloc != 0, plan.weights)

    def rows(
        self, snap: Snapshot, pod: PodInfo, idx: np.ndarray
    ) -> tuple[list[list[float]], list[list[float]], list[int], list[int]]:
        """The same as Python lists (allocatable and allocated per row, then the pod's
        amounts and the weights), for resource_scoring_rows on a few rows."""
        plan = self._plan(snap, pod)
        cols = plan.cols
        source = snap.score_requested if self.non_zero else snap.requested
        # Element reads (`item`) rather than a fancy-indexed copy of each row: a few rows.
        alloc_at, used_at = snap.allocatable.item, source.item
        at = idx.tolist()
        alloc = [[alloc_at(r, c) for c in cols] for r in at]
        used = [[used_at(r, c) for c in cols] for r in at]
        return alloc, used, plan.amount_list, plan.weight_list


def scaled_shape(shape: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """A RequestedToCapacityRatio shape with its 0..10 scores scaled to 0..100."""
    return [(u, s * (_MAX // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]


def allocation(
    snap: Snapshot,
    pod: PodInfo,
    idx: np.ndarray,
    names: Sequence[str],
    weights: Sequence[int],
    non_zero: bool,
) -> Allocation:
    """One-off ResourceScorer(names, weights, non_zero).allocation(snap, pod, idx)."""
    return ResourceScorer(names, weights, non_zero).allocation(snap, pod, idx)


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Go's integer division for the non-negative amounts here, in either dtype."""
    return x // y if x.dtype.kind == "i" else np.floor(x / y)


def _weighted_mean(scores: np.ndarray, a: Allocation) -> np.ndarray:
    """Sum(score * weight) // sum(weight) over the resources counted on each node (0 if none)."""
    w = a.counted * a.weights
    return _div((scores * w).sum(axis=1), np.maximum(w.sum(axis=1), 1))


def least_allocated(a: Allocation) -> np.ndarray:
    """Free share after placing the pod, 0..100, weighted mean (integer divisions)."""
    free = np.maximum(a.allocatable - a.requested, 0)
    return _weighted_mean(_div(free * _MAX, np.maximum(a.allocatable, 1)), a)


def most_allocated(a: Allocation) -> np.ndarray:
    """Used share after placing the pod (capped at capacity), 0..100, weighted mean."""
    used = np.minimum(a.requested, a.allocatable)
    return _weighted_mean(_div(used * _MAX, np.maximum(a.allocatable, 1)), a)


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """kube's BuildBrokenLinearFunction: shape[0]'s score below the first point, the last
    one's above the last, linear (Go-truncated) in between."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        hit = (p <= u) & ~done
        if i == 0:
            value = np.full(p.shape, s, dtype=np.int64)
        else:
            u0, s0 = shape[i - 1]
            value = s0 + go_div((s - s0) * (p - u0), u - u0)
        out = np.where(hit, value, out)
        done |= hit
    return out


def requested_to_capacity_ratio(a: Allocation, shape: Sequence[tuple[int, int]]) -> np.ndarray:
    """The configured utilisation -> score curve (scores 0..10 scaled to 0..100); resources
    scoring 0 leave the mean, which is rounded half away from zero."""
    scaled = scaled_shape(shape)
    cap = np.maximum(a.allocatable, 1)
    over = (a.allocatable == 0) | (a.requested > a.allocatable)
    share = _div(a.requested * MAX_UTILIZATION, cap).astype(np.int64)
    util = np.where(over, MAX_UTILIZATION, share)
    scores = broken_linear(scaled, util)
    w = (a.counted & (scores > 0)) * a.weights
    total = (scores * w).sum(axis=1)
    weight_sum = w.sum(axis=1)
    mean = total.astype(np.float64) / np.maximum(weight_sum, 1)
    return np.where(weight_sum > 0, go_round(mean), 0).astype(np.int64)


def _std(frac: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Standard deviation of the counted fractions along the last axis (kube's formula:
    |f0 - f1| / 2 for two, the population deviation for more, 0 for fewer)."""
    k = frac.shape[-1]
    if k == 2:  # the usual cpu + memory
        return np.abs((frac[..., 0] - frac[..., 1]) / 2) * (counted[:, 0] & counted[:, 1])
    n = counted.sum(axis=1)
    std = np.zeros(frac.shape[:-1])
    two = n == 2
    if two.any():
        hi = np.where(counted, frac, -np.inf).max(axis=-1)
        lo = np.where(counted, frac, np.inf).min(axis=-1)
        std = np.where(two, np.abs((hi - lo) / 2), std)
    many = n > 2
    if many.any():
        total = np.zeros(frac.shape[:-1])
        for j in range(k):  # summed in resource order, as kube does
            total += frac[..., j]
        mean = total / np.maximum(n, 1)
        sq = np.zeros(frac.shape[:-1])
        for j in range(k):
            d = (frac[..., j] - mean) * counted[:, j]
            sq += d * d
        std = np.where(many, np.sqrt(sq / np.maximum(n, 1)), std)
    return std


def _balance_score(
    used: np.ndarray, cap: np.ndarray, counted: np.ndarray, everywhere: bool
) -> np.ndarray:
    """trunc((1 - std) * 100) per row; `everywhere`: every resource counts on every row."""
    frac = np.minimum(used / cap, 1.0)
    if frac.shape[1] == 2:  # the usual cpu + memory: kube's |f0 - f1| / 2
        std = np.abs((frac[:, 0] - frac[:, 1]) / 2)
        if not everywhere:
            std *= counted[:, 0] & counted[:, 1]
    else:
        std = _std(frac if everywhere else frac * counted, counted)
    return np.trunc((1 - std) * MAX_NODE_SCORE)


def balanced_allocation(a: Allocation) -> np.ndarray:
    """How much placing the pod improves the balance of the node's resource use: 75 when
    it changes nothing, towards 100 when better balanced, towards 50 when worse. Fractions
    are float64 as in kube; scores whole numbers."""
    cap = np.maximum(a.allocatable, 1)
    everywhere = bool(a.counted.all())
    with_pod = _balance_score(a.requested, cap, a.counted, everywhere)
    without = _balance_score(a.allocated, cap, a.counted, everywhere)
    half = MAX_NODE_SCORE / 2
    return half + np.floor((half + with_pod - without) / 2)
