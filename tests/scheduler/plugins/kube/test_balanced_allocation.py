"""kube-scheduler 1.36's noderesources/balanced_allocation_test.go
(TestNodeResourcesBalancedAllocation), ported row by row (ids are kube's row names) against
our NodeResourcesBalancedAllocation plugin.

Not ported: the two "include DRA resource on a node for balanced resource allocation" rows
(a DRA-backed extended resource; Phalanx has no DRA) and TestBalancedAllocationSignPod
(kube's pod signature fragments).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.plugins.balancedallocation import NodeResourcesBalancedAllocation
from phalanx.scheduler.resource_args import NodeResourcesBalancedAllocationArgs

from .nodeplugin_harness import handle, node, on, pod, scores, snapshot

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = DEFAULT + [{"name": "nvidia.com/gpu", "weight": 1}]


def mk(name: str, milli_cpu: int, memory: int, gpus: int | None = None) -> Any:
    """util_test.go's makeNode (no pods capacity)."""
    capacity = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if gpus is not None:
        capacity["nvidia.com/gpu"] = str(gpus)
    return node(name, pods=None, capacity=capacity)


def cm(cpu: str, mem: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": mem}


def cpu_only(cpu: str) -> dict[str, str]:
    return {"cpu": cpu}


def cmg(cpu: str, mem: str, gpu: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": mem, "nvidia.com/gpu": gpu}


TWO = pod(containers=[cm("1000m", "2000"), cm("2000m", "3000")])
ROWS: list[tuple[Any, ...]] = [
    (
        "nothing scheduled, nothing requested, skip in PreScore",
        pod(),
        [mk("node1", 4000, 10000), mk("node2", 4000, 10000)],
        [],
        DEFAULT,
        True,
        Code.SKIP,
        None,
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        TWO,
        [mk("node1", 4000, 10000), mk("node2", 6000, 10000)],
        [],
        DEFAULT,
        True,
        Code.SUCCESS,
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        TWO,
        [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
        [
            on("node1", 0, cpu_only("1000m"), cpu_only("2000m")),
            on("node2", 0, cm("1000m", "2000"), cm("2000m", "3000")),
        ],
        DEFAULT,
        True,
        Code.SUCCESS,
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO,
        [mk("node1", 10000, 20000), mk("node2", 10000, 50000)],
        [
            on("node1", 0, cpu_only("1000m"), cpu_only("2000m")),
            on("node2", 0, cm("1000m", "2000"), cm("2000m", "3000")),
        ],
        DEFAULT,
        True,
        Code.SUCCESS,
        [73, 70],
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        pod(containers=[{"memory": "2000"}, {"memory": "3000"}]),
        [mk("node1", 3000, 5000), mk("node2", 3000, 5000)],
        [on("node1", 0, cpu_only("1000m"), cpu_only("2000m"))],
        DEFAULT,
        True,
        Code.SUCCESS,
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        pod(containers=[cpu_only("1000m"), cpu_only("2000m")]),
        [mk("node1", 6000, 10000), mk("node2", 6000, 10000)],
        [
            on("node1", 0, cpu_only("1000m"), cpu_only("2000m")),
            on("node2", 0, cm("1000m", "2000"), cm("2000m", "3000")),
        ],
        DEFAULT,
        True,
        Code.SUCCESS,
        [62, 62],
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        pod(containers=[cmg("0", "0", "1")]),
        [mk("node1", 3500, 40000, 8), mk("node2", 3500, 40000, 8)],
        [
            on("node1", 0, cm("1000m", "2000"), cmg("2000m", "3000", "3")),
            on("node2", 0, cm("1000m", "2000"), cm("2000m", "3000")),
        ],
        WITH_GPU,
        True,
        Code.SUCCESS,
        [75, 76],
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the "
        "scalar resource",
        TWO,
        [mk("node1", 3500, 40000, 8), mk("node2", 3500, 40000)],
        [],
        WITH_GPU,
        True,
        Code.SUCCESS,
        [56, 56],
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        TWO,
        [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
        [
            on("node1", 0, cpu_only("1000m"), cpu_only("2000m")),
            on("node2", 0, cm("1000m", "2000"), cm("2000m", "3000")),
        ],
        DEFAULT,
        False,
        None,
        [73, 74],
    ),
]


@pytest.mark.parametrize(
    "p,ns,existing,resources,run_pre,want_pre,expected",
    [r[1:] for r in ROWS],
    ids=[r[0] for r in ROWS],
)
def test_node_resources_balanced_allocation(
    p, ns, existing, resources, run_pre, want_pre, expected
):
    snap = snapshot(ns, existing)
    pl = NodeResourcesBalancedAllocation(
        handle(), NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources})
    )
    state = CycleState()
    if run_pre:
        status = pl.pre_score(state, PodInfo(p), snap, snap.valid_rows())
        assert status.code == want_pre
        if status.is_skip:
            return
    assert [s for _, s in scores(pl, p, snap, state=state)] == expected
