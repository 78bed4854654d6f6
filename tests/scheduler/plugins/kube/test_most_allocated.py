"""kube-scheduler 1.36's noderesources/most_allocated_test.go (TestMostAllocatedScoringStrategy),
ported row by row (ids are kube's row names) against NodeResourcesFit with
`scoringStrategy.type: MostAllocated` and explicit `resources`.

Deliberate differences (kube's v1 configuration API, which kube's rows bypass by building
the internal args type):
- "Resources not set, pods scheduled with error": an absent resource list is defaulted.
  For MostAllocated our default adds `nvidia.com/gpu` (weight 10) to cpu and memory (the
  Phalanx GPU-packing default, resource_args.py); no node here has GPUs, so the scores are
  kube's cpu-and-memory ones, which the row asserts.
- "resource with zero weight": v1 defaulting makes a weight of 0 mean 1.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .nodeplugin_harness import fit_plugin, node, on, pod, scores, snapshot

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = DEFAULT + [{"name": EXT, "weight": 1}]
TWO_CONTAINERS = pod(
    containers=[{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]
)
CPU3000 = {"cpu": "3000", "memory": "0"}


def nodes(*specs: tuple[str, ...]) -> list[Any]:
    out = []
    for name, cpu, mem, *ext in specs:
        capacity = {"cpu": cpu, "memory": mem}
        if ext:
            capacity[EXT] = ext[0]
        out.append(node(name, capacity=capacity))
    return out


def plugin(resources: list[dict[str, Any]] | None) -> Any:
    strategy: dict[str, Any] = {"type": "MostAllocated"}
    if resources is not None:
        strategy["resources"] = resources
    return fit_plugin(strategy)


ROWS: list[tuple[Any, ...]] = [
    (
        "nothing scheduled, nothing requested",
        pod(),
        nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [],
        DEFAULT,
        [("node1", 0), ("node2", 0)],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        DEFAULT,
        [("node1", 62), ("node2", 50)],
    ),
    (
        "Resources not set, pods scheduled with error",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        None,
        [("node1", 62), ("node2", 50)],
    ),  # defaulted resources (see the docstring)
    (
        "no resources requested, pods scheduled with resources",
        pod(),
        nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            on("node1", 0, CPU3000),
            on("node1", 1, CPU3000),
            on("node2", 0, CPU3000),
            on("node2", 1, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 30), ("node2", 42)],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [on("node1", 0, CPU3000), on("node2", 0, {"cpu": "3000", "memory": "5000"})],
        DEFAULT,
        [("node1", 42), ("node2", 55)],
    ),
    (
        "resources requested equal node capacity",
        pod(containers=[{"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}]),
        nodes(("node1", "5000", "10000"), ("node2", "10000", "9000")),
        [],
        DEFAULT,
        [("node1", 95), ("node2", 75)],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [("node1", 58), ("node2", 50)],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        pod(containers=[None]),
        [
            node("node1", capacity={"cpu": "250m", "memory": "1000Mi"}),
            node("node2", capacity={"cpu": "250m", "memory": "1000Mi"}),
        ],
        [on("node1", 0, None), on("node1", 1, None)],
        DEFAULT,
        [("node1", 80), ("node2", 30)],
    ),
    (
        "resource with zero weight",
        TWO_CONTAINERS,
        nodes(("node2", "4000", "10000")),
        [],
        [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}],
        [("node2", 62)],
    ),  # v1 defaulting: weight 0 is 1 (see the docstring)
    (
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        nodes(("node1", "6000", "10000"), ("node2", "6000", "10000", "4")),
        [],
        EXT_SET,
        [("node1", 50), ("node2", 50)],
    ),
    (
        "honor extended resource if the pod request",
        pod(containers=[{"cpu": "3000", "memory": "5000", EXT: "2"}]),
        nodes(("node1", "6000", "10000", "4"), ("node2", "6000", "10000", "10")),
        [],
        EXT_SET,
        [("node1", 50), ("node2", 40)],
    ),
    (
        "if the node doesn't have a resource",
        pod(containers=[{"cpu": "3000", "memory": "4000"}]),
        nodes(("node1", "6000", "10000"), ("node2", "6000", "10000", "4")),
        [],
        [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        [("node1", 45), ("node2", 45)],
    ),
]

# kube has two rows named "nothing scheduled, resources requested, differently sized nodes";
# the second keeps its name with a suffix so that pytest ids stay unique.
IDS = [r[0] for r in ROWS]
IDS[6] += " (weighted)"


@pytest.mark.parametrize("p,ns,existing,resources,expected", [r[1:] for r in ROWS], ids=IDS)
def test_most_allocated_scoring_strategy(p, ns, existing, resources, expected):
    assert scores(plugin(resources), p, snapshot(ns, existing)) == expected


ERROR_ROWS = [
    (
        "resource with negative weight",
        [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
        "scoringStrategy.resources[0].weight",
    ),
    (
        "resource weight larger than MaxNodeScore",
        [{"name": "memory", "weight": 101}],
        "scoringStrategy.resources[0].weight",
    ),
]


@pytest.mark.parametrize(
    "resources,field", [r[1:] for r in ERROR_ROWS], ids=[r[0] for r in ERROR_ROWS]
)
def test_most_allocated_scoring_strategy_invalid_args(resources, field):
    with pytest.raises(ValueError, match=re.escape(f"{field}: Invalid value")):
        plugin(resources)
