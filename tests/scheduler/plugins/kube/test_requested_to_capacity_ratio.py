"""kube-scheduler 1.36's noderesources/requested_to_capacity_ratio_test.go, ported row by row
(ids are kube's row names; TestBrokenLinearFunction's cases are unnamed there, so they are
`case_<i>` as kube's subtests are) against NodeResourcesFit with
`scoringStrategy.type: RequestedToCapacityRatio`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from phalanx.scheduler.resource_scoring import broken_linear

from .nodeplugin_harness import fit_plugin, node, on, pod, scores, snapshot

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
BINPACK_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


def plugin(resources: list[dict[str, Any]], shape: list[dict[str, int]]) -> Any:
    return fit_plugin(
        {
            "type": "RequestedToCapacityRatio",
            "resources": resources,
            "requestedToCapacityRatio": {"shape": shape},
        }
    )


def sized(name: str, cpu: str, mem: str) -> Any:
    return node(name, capacity={"cpu": cpu, "memory": mem})


ROWS: list[tuple[Any, ...]] = [
    (
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        pod(),
        [sized("node1", "4000", "10000"), sized("node2", "4000", "10000")],
        [on("node1", 0), on("node1", 1)],
        [("node1", 100), ("node2", 100)],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (default - least "
        "requested nodes have "
        "priority)",
        pod(containers=[{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]),
        [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")],
        [on("node1", 0), on("node1", 1)],
        [("node1", 38), ("node2", 50)],
    ),
    (
        "no resources requested, pods scheduled with resources (default - least requested nodes "
        "have priority)",
        pod(),
        [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")],
        [
            on("node1", 0, {"cpu": "3000", "memory": "5000"}),
            on("node2", 0, {"cpu": "3000", "memory": "5000"}),
        ],
        [("node1", 38), ("node2", 50)],
    ),
]


@pytest.mark.parametrize("p,ns,existing,expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_requested_to_capacity_ratio_scoring_strategy(p, ns, existing, expected):
    assert scores(plugin(DEFAULT, SHAPE), p, snapshot(ns, existing)) == expected


LINEAR_CASES = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    (
        [(0, 2), (40, 2), (100, 2)],
        [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
    ),
]


@pytest.mark.parametrize(
    "points,assertions", LINEAR_CASES, ids=[f"case_{i}" for i in range(len(LINEAR_CASES))]
)
def test_broken_linear_function(points, assertions):
    p = np.asarray([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(points, p).tolist() == [e for _, e in assertions]


def binpack_node(name: str, extended: dict[str, str]) -> Any:
    """util_test.go's makeNode(name, 4000 millicpu, 10000Mi, extended) (no pods capacity)."""
    return node(
        name, pods=None, capacity={"cpu": "4", "memory": str(10000 * 1024 * 1024), **extended}
    )


FOO = "intel.com/foo"
BAR = "intel.com/bar"
SINGLE_NODES = [binpack_node("node1", {FOO: "8"}), binpack_node("node2", {FOO: "4"})]
SINGLE_ROWS: list[tuple[Any, ...]] = [
    ("nothing scheduled, nothing requested", pod(), [], [("node1", 0), ("node2", 0)]),
    (
        "resources requested, pods scheduled with less resources",
        pod(containers=[{FOO: "2"}]),
        [pod("other")],
        [("node1", 2), ("node2", 5)],
    ),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        pod(containers=[{FOO: "2"}]),
        [on("node2", 0, {FOO: "2"})],
        [("node1", 2), ("node2", 10)],
    ),
    (
        "resources requested, pods scheduled with more resources",
        pod(containers=[{FOO: "4"}]),
        [pod("other")],
        [("node1", 5), ("node2", 10)],
    ),
]


def _existing(pods: list[Any]) -> list[Any]:
    # kube's snapshot ignores pods bound to no node; ours has nowhere to put them.
    return [p for p in pods if p.spec.node_name]


@pytest.mark.parametrize(
    "p,existing,expected", [r[1:] for r in SINGLE_ROWS], ids=[r[0] for r in SINGLE_ROWS]
)
def test_resource_bin_packing_single_extended(p, existing, expected):
    pl = plugin([{"name": FOO, "weight": 1}], BINPACK_SHAPE)
    assert scores(pl, p, snapshot(SINGLE_NODES, _existing(existing))) == expected


MULTI_NODES = [
    binpack_node("node1", {FOO: "8", BAR: "4"}),
    binpack_node("node2", {FOO: "4", BAR: "8"}),
]
MULTI_ROWS: list[tuple[Any, ...]] = [
    ("nothing scheduled, nothing requested", pod(), [], [("node1", 0), ("node2", 0)]),
    (
        "resources requested, pods scheduled with less resources",
        pod(containers=[{FOO: "2", BAR: "2"}]),
        [pod("other")],
        [("node1", 4), ("node2", 3)],
    ),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        pod(containers=[{FOO: "2", BAR: "2"}]),
        [on("node2", 0, {FOO: "4", BAR: "2"})],
        [("node1", 4), ("node2", 7)],
    ),
    (
        "resources requested, pods scheduled with more resources",
        pod(containers=[{FOO: "4", BAR: "2"}]),
        [pod("other")],
        [("node1", 5), ("node2", 5)],
    ),
]


@pytest.mark.parametrize(
    "p,existing,expected", [r[1:] for r in MULTI_ROWS], ids=[r[0] for r in MULTI_ROWS]
)
def test_resource_bin_packing_multiple_extended(p, existing, expected):
    pl = plugin([{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}], BINPACK_SHAPE)
    assert scores(pl, p, snapshot(MULTI_NODES, _existing(existing))) == expected
