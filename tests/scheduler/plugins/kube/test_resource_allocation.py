"""kube-scheduler 1.36's noderesources/resource_allocation_test.go, ported row by row (ids
are kube's row names).

- TestResourceAllocationScorerCalculateRequests: the requests scoring counts for a pod
  (kube's non-zero requests: 100m cpu / 200Mi memory per container that names none), read
  from our PodInfo.score_requests.
- TestCalculateResourceAllocatableRequest: the two device-plugin rows, through the scorer's
  per-node allocatable/allocated gathering (resource_scoring.allocation), with a pod asking
  for the resource (ours gathers per pod: a scalar resource the pod does not ask for is
  left out, as kube's caller does).

Not ported: the DRA rows of TestCalculateResourceAllocatableRequest, and TestDeviceMatchCaching,
TestNodeMatchCaching, TestNodeMatchesCacheHit (caches of DRA device/node matching): Phalanx
has no DRA.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.resource_scoring import allocation
from phalanx.scheduler.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST

from .nodeplugin_harness import container, node, pod, snapshot

ONE_MI = 1048576
CPU0 = int(DEFAULT_MILLI_CPU_REQUEST)
MEM0 = int(DEFAULT_MEMORY_REQUEST)
REQ_1CPU_1MI = {"cpu": "1", "memory": "1Mi"}

ROWS: list[tuple[Any, ...]] = [
    ("overhead only", pod(overhead={"cpu": "1", "memory": "1Mi"}), 1000, ONE_MI),
    ("1x requestless container", pod(containers=[None]), CPU0, MEM0),
    ("2x requestless container", pod(containers=[None, None]), 2 * CPU0, 2 * MEM0),
    (
        "request container + requestless container",
        pod(containers=[REQ_1CPU_1MI, None]),
        1000 + CPU0,
        ONE_MI + MEM0,
    ),
    (
        "container + requestless container + overhead",
        pod(containers=[REQ_1CPU_1MI, None], overhead={"cpu": "1", "memory": "1Mi"}),
        2000 + CPU0,
        2 * ONE_MI + MEM0,
    ),
    (
        "init container + container + requestless container + overhead",
        pod(
            containers=[REQ_1CPU_1MI, None],
            init=[container({"cpu": "3"}, name="init")],
            overhead={"cpu": "1", "memory": "1Mi"},
        ),
        4000,
        2 * ONE_MI + MEM0,
    ),
    (
        "requestless init container + small init container + small container ",
        pod(
            containers=[{"cpu": "3m", "memory": "3"}],
            init=[container(name="init0"), container({"cpu": "1m", "memory": "1"}, name="init1")],
        ),
        CPU0,
        MEM0,
    ),
    (
        "requestless init container + small init container + small container + requestless "
        "container ",
        pod(
            containers=[{"cpu": "3m", "memory": "3"}, None],
            init=[container(name="init0"), container({"cpu": "1m", "memory": "1"}, name="init1")],
        ),
        3 + CPU0,
        3 + MEM0,
    ),
]


@pytest.mark.parametrize("p,cpu,memory", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_resource_allocation_scorer_calculate_requests(p, cpu, memory):
    counted = PodInfo(p).score_requests
    assert (counted.get("cpu", 0), counted.get("memory", 0)) == (cpu, memory)


EXPLICIT = "extended.resource.dra.io/something"
ALLOCATABLE_ROWS = [
    ("device-plugin-resource-feature-disabled", 4, 0),
    ("device-plugin-resource-feature-enabled", 4, 0),
]


@pytest.mark.parametrize(
    "allocatable,allocated", [r[1:] for r in ALLOCATABLE_ROWS], ids=[r[0] for r in ALLOCATABLE_ROWS]
)
def test_calculate_resource_allocatable_request(allocatable, allocated):
    snap = snapshot([node("resource-node", capacity={EXPLICIT: "4"})])
    asking = PodInfo(pod(containers=[{EXPLICIT: "1"}]))
    a = allocation(snap, asking, np.asarray([0]), [EXPLICIT], [1], non_zero=True)
    assert (int(a.allocatable[0, 0]), int(a.allocated[0, 0])) == (allocatable, allocated)
