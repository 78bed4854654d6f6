"""Score arithmetic shared by the resource and affinity plugins, kept to kube-scheduler's
integers: scores are whole numbers in [0, 100] and divisions truncate as Go's do, so two
nodes tie (or not) exactly where they would under kube-scheduler.
"""

from __future__ import annotations

import numpy as np

from phalanx.scheduler.framework.interface import MAX_NODE_SCORE


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube's helper.DefaultNormalizeScore: scale [0, max] to [0, 100] with integer
    division; `reverse` turns it into 100 - that (fewer is better). All zero: unchanged,
    or all 100 when reversed."""
    top = float(scores.max()) if scores.size else 0.0
    if top <= 0:
        return np.full(scores.size, MAX_NODE_SCORE) if reverse else scores
    out = np.floor(MAX_NODE_SCORE * scores / top)
    return MAX_NODE_SCORE - out if reverse else out


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Integer division truncating toward zero (Go's `/` on int64), for int64 arrays."""
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.where((a < 0) ^ (np.asarray(b) < 0), -q, q)


def go_round(x: np.ndarray) -> np.ndarray:
    """Go's math.Round: halves away from zero (numpy's round goes to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)
