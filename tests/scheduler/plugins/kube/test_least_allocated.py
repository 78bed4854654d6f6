"""kube-scheduler 1.36's noderesources/least_allocated_test.go (TestLeastAllocatedScoringStrategy),
ported row by row (ids are kube's row names) against NodeResourcesFit with
`scoringStrategy.type: LeastAllocated`.

Deliberate differences, both kube's own v1 configuration API (what a
KubeSchedulerConfiguration file, and our pluginConfig, go through): kube's rows build the
internal args type and skip its defaulting.
- "Resources not set, pods scheduled with error": v1 defaulting turns an absent resource
  list into cpu and memory (weight 1), so kube-scheduler itself scores such a profile; the
  row asserts exactly that here (the scores of the default resources), not the internal
  type's error.
- "resource with zero weight": v1 defaulting makes a weight of 0 mean 1; the row asserts
  the score with weight 1 (50/50 cpu/memory) instead of the internal type's error.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from phalanx.scheduler.plugins.noderesources import NodeResourcesFit

from .nodeplugin_harness import fit_plugin, node, on, pod, scores, snapshot

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = DEFAULT + [{"name": EXT, "weight": 1}]
TWO_CONTAINERS = pod(
    containers=[{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]
)


def nodes(*specs: tuple[str, str, str] | tuple[str, str, str, str]) -> list[Any]:
    out = []
    for name, cpu, mem, *ext in specs:
        capacity = {"cpu": cpu, "memory": mem}
        if ext:
            capacity[EXT] = ext[0]
        out.append(node(name, capacity=capacity))
    return out


def plugin(resources: list[dict[str, Any]] | None) -> NodeResourcesFit:
    strategy: dict[str, Any] = {"type": "LeastAllocated"}
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
        [("node1", 100), ("node2", 100)],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        DEFAULT,
        [("node1", 37), ("node2", 50)],
    ),
    (
        "Resources not set, pods scheduled with error",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        None,
        [("node1", 37), ("node2", 50)],
    ),  # v1 defaulting: cpu and memory (see the docstring)
    (
        "no resources requested, pods scheduled",
        pod(),
        nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [on("node1", 0), on("node1", 1), on("node2", 0), on("node2", 1)],
        DEFAULT,
        [("node1", 100), ("node2", 100)],
    ),
    (
        "no resources requested, pods scheduled with resources",
        pod(),
        nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            on("node1", 0, {"cpu": "3000", "memory": "0"}),
            on("node1", 1, {"cpu": "3000", "memory": "0"}),
            on("node2", 0, {"cpu": "3000", "memory": "0"}),
            on("node2", 1, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 70), ("node2", 57)],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            on("node1", 0, {"cpu": "3000", "memory": "0"}),
            on("node2", 0, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 57), ("node2", 45)],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO_CONTAINERS,
        nodes(("node1", "10000", "20000"), ("node2", "10000", "50000")),
        [
            on("node1", 0, {"cpu": "3000", "memory": "0"}),
            on("node2", 0, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 57), ("node2", 60)],
    ),
    (
        "requested resources exceed node capacity",
        pod(containers=[{"cpu": "3000", "memory": "0"}]),
        nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [
            on("node1", 0, {"cpu": "3000", "memory": "0"}),
            on("node2", 0, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 50), ("node2", 25)],
    ),
    (
        "zero node resources, pods scheduled with resources",
        pod(),
        [node("node1"), node("node2")],
        [
            on("node1", 0, {"cpu": "3000", "memory": "0"}),
            on("node2", 0, {"cpu": "3000", "memory": "5000"}),
        ],
        DEFAULT,
        [("node1", 0), ("node2", 0)],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized "
        "nodes",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [("node1", 41), ("node2", 50)],
    ),
    (
        "resource with zero weight",
        TWO_CONTAINERS,
        nodes(("node1", "4000", "10000")),
        [],
        [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}],
        [("node1", 37)],
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
        "honor extended resource if the pod requests",
        pod(containers=[{"cpu": "3000", "memory": "5000", EXT: "2"}]),
        nodes(("node1", "6000", "10000", "4"), ("node2", "6000", "10000", "10")),
        [],
        EXT_SET,
        [("node1", 50), ("node2", 60)],
    ),
    (
        "if the node doesn't have a resource",
        pod(containers=[{"cpu": "3000", "memory": "4000"}]),
        nodes(("node1", "6000", "10000"), ("node2", "6000", "10000", "4")),
        [],
        [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        [("node1", 55), ("node2", 55)],
    ),
]


@pytest.mark.parametrize(
    "p,ns,existing,resources,expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_least_allocated_scoring_strategy(p, ns, existing, resources, expected):
    assert scores(plugin(resources), p, snapshot(ns, existing)) == expected


# Rows whose args kube rejects (the same in the v1 API): negative and above-100 weights.
ERROR_ROWS = [
    (
        "resource with negative weight",
        [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}],
        "scoringStrategy.resources[0].weight",
    ),
    (
        "resource weight larger than MaxNodeScore",
        [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
        "scoringStrategy.resources[1].weight",
    ),
]


@pytest.mark.parametrize(
    "resources,field", [r[1:] for r in ERROR_ROWS], ids=[r[0] for r in ERROR_ROWS]
)
def test_least_allocated_scoring_strategy_invalid_args(resources, field):
    with pytest.raises(ValueError, match=re.escape(f"{field}: Invalid value")):
        plugin(resources)
