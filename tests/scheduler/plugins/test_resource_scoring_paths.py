"""The resource scorers' two paths agree: vectorised over many rows (resource_scoring.py) and
per row in Python (resource_scoring_rows.py, used for the few rows a cycle re-scores). So do
NodeResourcesFit's filter paths: Python floats for a few rows that all fit, NumPy otherwise.

Seeded random nodes, bound pods and incoming pods, for every scoring strategy and for
NodeResourcesBalancedAllocation with two and three resources: each node's score from a
one-row call (the Python path) equals its score from the all-rows call (NumPy).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from phalanx.scheduler import resource_scoring_rows
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.balancedallocation import NodeResourcesBalancedAllocation
from phalanx.scheduler.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from phalanx.scheduler.resource_args import NodeResourcesBalancedAllocationArgs

from .kube.nodeplugin_harness import handle, node, pod, snapshot

EXT = "example.com/dev"
GPU = "nvidia.com/gpu"


def _maybe(rng: random.Random, value: str) -> str | None:
    return value if rng.random() < 0.8 else None


def _requests(rng: random.Random) -> dict[str, str]:
    out = {}
    for name, amount in (
        ("cpu", f"{rng.randint(0, 4000)}m"),
        ("memory", str(rng.randint(0, 8 << 30))),
        (GPU, str(rng.randint(0, 4))),
        (EXT, str(rng.randint(0, 3))),
    ):
        if rng.random() < 0.6:
            out[name] = amount
    return out


def _case(seed: int, huge: bool = False) -> tuple[Any, PodInfo]:
    """`huge`: node memory up to 2**54 bytes, past where the vectorised scorers switch from
    float64 to int64 (2**46)."""
    rng = random.Random(seed)
    shift = 46 if huge else 30
    nodes = []
    for i in range(rng.randint(9, 24)):
        capacity = {
            k: v
            for k, v in (
                ("cpu", _maybe(rng, str(rng.randint(1, 64)))),
                ("memory", _maybe(rng, str(rng.randint(1, 256) << shift))),
                (GPU, _maybe(rng, str(rng.choice([0, 4, 8])))),
                (EXT, _maybe(rng, str(rng.randint(0, 6)))),
            )
            if v is not None
        }
        nodes.append(node(f"n{i}", capacity=capacity, pods="110"))
    bound = [
        pod(
            f"b{j}",
            containers=[_requests(rng) or None for _ in range(rng.randint(0, 2))],
            node_name=f"n{rng.randrange(len(nodes))}",
        )
        for j in range(rng.randint(0, 40))
    ]
    incoming = pod("p", containers=[_requests(rng) or None for _ in range(rng.randint(0, 3))])
    return snapshot(nodes, bound), PodInfo(incoming)


def _strategies(rng: random.Random) -> list[Any]:
    resources = [
        {"name": n, "weight": rng.randint(1, 100)}
        for n in ("cpu", "memory", GPU, EXT)
        if rng.random() < 0.8
    ] or [{"name": "cpu", "weight": 1}]
    points = sorted(rng.sample(range(0, 101), rng.randint(1, 4)))
    shape = [{"utilization": u, "score": rng.randint(0, 10)} for u in points]
    fits = [
        NodeResourcesFit(handle(), NodeResourcesFitArgs.model_validate({"scoringStrategy": s}))
        for s in (
            {"type": "LeastAllocated", "resources": resources},
            {"type": "MostAllocated", "resources": resources},
            {
                "type": "RequestedToCapacityRatio",
                "resources": resources,
                "requestedToCapacityRatio": {"shape": shape},
            },
        )
    ]
    balanced = [
        NodeResourcesBalancedAllocation(
            handle(),
            NodeResourcesBalancedAllocationArgs.model_validate(
                {"resources": [{"name": n, "weight": 1} for n in names]}
            ),
        )
        for names in (["cpu", "memory"], ["cpu", "memory", GPU], ["cpu", GPU, EXT, "memory"])
    ]
    return fits + balanced


@pytest.mark.parametrize("huge", [False, True], ids=["normal", "huge"])
@pytest.mark.parametrize("seed", range(40))
def test_per_row_scores_equal_vectorised_scores(seed, huge):
    snap, p = _case(seed, huge)
    rows = snap.valid_rows()
    assert rows.size > resource_scoring_rows.SMALL  # the all-rows call is vectorised
    for plugin in _strategies(random.Random(seed)):
        st = CycleState()
        vectorised = np.asarray(plugin.score(st, p, snap, rows))
        one_by_one = np.asarray(
            [plugin.score(st, p, snap, rows[i : i + 1])[0] for i in range(rows.size)]
        )
        assert np.array_equal(vectorised, one_by_one), (
            type(plugin).__name__,
            vectorised,
            one_by_one,
        )


@pytest.mark.parametrize("huge", [False, True], ids=["normal", "huge"])
@pytest.mark.parametrize("seed", range(40))
def test_few_row_filter_equals_vectorised_filter(seed, huge):
    snap, p = _case(seed, huge)
    rows = snap.valid_rows()
    plugin = NodeResourcesFit(handle())
    st = CycleState()
    vectorised = plugin.filter(st, p, snap, rows).feasible
    one_by_one = np.asarray([plugin.filter(st, p, snap, rows[i : i + 1]).feasible[0]
                             for i in range(rows.size)])
    assert np.array_equal(vectorised, one_by_one), (vectorised, one_by_one)
    rng = random.Random(seed)
    for _ in range(8):  # a few rows at once
        few = np.asarray(sorted(rng.sample(rows.tolist(), rng.randint(1, 4))), dtype=np.int64)
        res = plugin.filter(st, p, snap, few)
        assert np.array_equal(res.feasible, vectorised[np.searchsorted(rows, few)])
