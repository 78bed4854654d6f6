"""Queueing hints for freed room (phalanx/scheduler/framework/hints.py)."""

from __future__ import annotations

import pytest

from phalanx.api.core import Node, Taint
from phalanx.scheduler.framework.hints import empty_node_fits, node_change_may_help

from ..helpers import node

GPU_POD = {"cpu": 1000.0, "nvidia.com/gpu": 1.0}


def _copy(n: Node, **changes) -> Node:
    m = n.copy_deep()
    for path, value in changes.items():
        obj, _, attr = path.rpartition("__")
        setattr(getattr(m, obj) if obj else m, attr, value)
    return m


def test_an_empty_node_fits_a_pod_only_with_every_requested_resource():
    assert empty_node_fits(GPU_POD, node("g", gpu=1))
    assert not empty_node_fits(GPU_POD, node("cpu-only"))
    assert not empty_node_fits({"cpu": 16000.0}, node("small", cpu="8"))


def test_a_node_added_helps_if_any_shape_fits_it():
    assert not node_change_may_help([GPU_POD], None, node("cpu-only"))
    assert node_change_may_help([GPU_POD, {"cpu": 1000.0}], None, node("cpu-only"))
    assert not node_change_may_help([GPU_POD], node("gone", gpu=8), None)  # deleted


BASE = node("n", gpu=2, labels={"zone": "a"}, taints=[("dedicated", "x", "NoSchedule")])


@pytest.mark.parametrize(("change", "helps"), [
    ({"status__allocatable": {**BASE.status.allocatable, "nvidia.com/gpu": "4"}}, True),
    ({"status__allocatable": {**BASE.status.allocatable, "nvidia.com/gpu": "1"}}, False),
    ({"status__allocatable": {**BASE.status.allocatable, "example.com/fpga": "4"}}, False),
    ({"spec__taints": None}, True),
    ({"spec__taints": [*BASE.spec.taints, Taint(key="k", effect="NoSchedule")]}, False),
    ({"spec__unschedulable": True}, False),
    ({"metadata__labels": {"zone": "b"}}, True),
    ({"metadata__annotations": {"a": "b"}}, False),
    ({"status__allocatable": {**BASE.status.allocatable, "pods": "200"}}, True),
], ids=["allocatable-grew", "allocatable-shrank", "unrequested-resource-grew", "taint-removed",
        "taint-added", "cordoned", "labels-changed", "annotation-only", "more-pods-allowed"])
def test_a_node_update_helps_only_if_more_may_fit(change, helps):
    assert node_change_may_help([GPU_POD], BASE, _copy(BASE, **change)) is helps


def test_uncordoning_helps():
    cordoned = _copy(BASE, spec__unschedulable=True)
    assert node_change_may_help([GPU_POD], cordoned, BASE)
