"""kube-scheduler 1.36's pkg/scheduler/framework/plugins/noderesources/fit_test.go, ported row
by row (ids are kube's row names) against our NodeResourcesFit plugin.

Filter rows compare kube's Status (code and reasons in order); `wantInsufficientResources`
details (requested/used/capacity numbers) are not part of our FilterResult, only the
reasons and whether preemption can help (Unschedulable vs UnschedulableAndUnresolvable).

Not ported, with the reason:
- TestEnoughRequests "extended resource backed by DRA" and "extended resource was backed by
  Device Plugin (Allocatable: 0)": the request is handed to DRA through a DeviceClass with
  an extendedResourceName; Phalanx has no DRA (a pod with resourceClaims is refused by
  name), so no DeviceClass can claim an extended resource. The other rows with the DRA gate
  on name no such class and are ported: they take the device-plugin path, as here.
- TestPreFilterDisabled: our Filter reads the pod's requests from its PodInfo, not from
  PreFilter's cycle state, so there is no "PreFilter skipped" state to fail on.
- TestRestartableInitContainers "not allow pod with restartable init containers if sidecar
  containers is disabled": SidecarContainers is GA and locked on since 1.33.
- TestFitScore's two "... with Extended resources" rows: DRA-backed extended resources.
- TestEventsToRegister: its rows toggle one feature gate at a time (none is 1.36's default
  set); our registrations for the defaults are exercised by the hint rows below.
- Test_isSchedulableAfterPodChange "skip-queue-on-disable-inplace-pod-vertical-scaling":
  InPlacePodVerticalScaling is GA and locked on since 1.35.
- Test_isSchedulableAfterDeviceClassChange, TestComputePodResourceRequestWithNodeAllocatableDRA:
  DRA objects. TestHaveAnyRequestedResourcesIncreased "requested-resources-dra-not-in-node"
  and "requested-resources-dra-zero-capacity": DRA-backed resources.
- TestFitSignPod: kube's pod signature fragments (ours is PodInfo.signature).
- TestScorePlacement_Resources: the alpha TopologyAwareWorkloadScheduling placement scoring
  (our gang placement is TopologyPacking's).
- The hint rows' `expectedErr`: a non-Node/non-Pod object gets Queue, as in kube.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.noderesources import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    is_fit,
    node_change_hint,
    pod_event_hint,
    requested_resources_increased,
)

from .nodeplugin_harness import container, filter_status, handle, node, pod, scores, snapshot

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT_DRA = "extended.resource.dra.io/something"

UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def res(cpu: int = 0, mem: int = 0, storage: int = 0, **scalars: int) -> dict[str, str]:
    """kube's newResourcePod container: millicpu, memory, pods 0, storage, scalars."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(storage)}
    out.update({k: str(v) for k, v in scalars.items()})
    return out


def S(**scalars: int) -> dict[str, int]:  # noqa: N802 - scalar resources by their real names
    return {
        {
            "ext_a": EXT_A,
            "ext_b": EXT_B,
            "k8s_a": K8S_A,
            "k8s_b": K8S_B,
            "huge_a": HUGE_A,
            "dra": EXT_DRA,
        }[k]: v
        for k, v in scalars.items()
    }


def rpod(*usages: dict[str, str], init: tuple[dict[str, str], ...] = (), **kw: Any) -> Any:
    """newResourcePod(usages...), with newResourceInitPod's init containers."""
    return pod(
        containers=usages or (None,),
        init=[container(u, name=f"init{i}") for i, u in enumerate(init)],
        **kw,
    )


def fit_node(
    *existing: Any, alloc: tuple[int, int, int, int, int, int] = (10, 20, 32, 5, 20, 5)
) -> Any:
    """The node of the filter tests (makeAllocatableResources) with `existing` pods on it."""
    cpu, mem, pods, ext_a, storage, huge = alloc
    n = node(
        "n",
        pods=str(pods),
        capacity={
            "cpu": f"{cpu}m",
            "memory": str(mem),
            EXT_A: str(ext_a),
            "ephemeral-storage": str(storage),
            HUGE_A: str(huge),
        },
    )
    placed = [
        p.model_copy(
            update={
                "metadata": p.metadata.model_copy(update={"name": f"existing{i}"}),
                "spec": p.spec.model_copy(update={"node_name": "n"}),
            }
        )
        for i, p in enumerate(existing)
    ]
    return snapshot([n], placed)


def insufficient(r: str) -> str:
    return f"Insufficient {r}"


# (id, pod, existing pods on the node, args, want)
ENOUGH_ROWS: list[tuple[Any, ...]] = [
    ("no resources requested always fits", pod(), [rpod(res(10, 20))], None, None),
    (
        "too many resources fails",
        rpod(res(1, 1)),
        [rpod(res(10, 20))],
        None,
        (UNSCHED, [insufficient("cpu"), insufficient("memory")]),
    ),
    (
        "too many resources fails due to init container cpu",
        rpod(res(1, 1), init=(res(3, 1),)),
        [rpod(res(8, 19))],
        None,
        (UNSCHED, [insufficient("cpu")]),
    ),
    (
        "too many resources fails due to highest init container cpu",
        rpod(res(1, 1), init=(res(3, 1), res(2, 1))),
        [rpod(res(8, 19))],
        None,
        (UNSCHED, [insufficient("cpu")]),
    ),
    (
        "too many resources fails due to init container memory",
        rpod(res(1, 1), init=(res(1, 3),)),
        [rpod(res(9, 19))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    (
        "too many resources fails due to highest init container memory",
        rpod(res(1, 1), init=(res(1, 3), res(1, 2))),
        [rpod(res(9, 19))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        rpod(res(1, 1), init=(res(1, 1),)),
        [rpod(res(9, 19))],
        None,
        None,
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        rpod(res(1, 1), init=(res(1, 1), res(1, 1))),
        [rpod(res(9, 19))],
        None,
        None,
    ),
    ("both resources fit", rpod(res(1, 1)), [rpod(res(5, 5))], None, None),
    (
        "one resource memory fits",
        rpod(res(2, 1)),
        [rpod(res(9, 5))],
        None,
        (UNSCHED, [insufficient("cpu")]),
    ),
    (
        "one resource cpu fits",
        rpod(res(1, 2)),
        [rpod(res(5, 19))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    ("equal edge case", rpod(res(5, 1)), [rpod(res(5, 19))], None, None),
    (
        "equal edge case for init container",
        rpod(res(4, 1), init=(res(5, 1),)),
        [rpod(res(5, 19))],
        None,
        None,
    ),
    ("extended resource fits", rpod(res(**S(ext_a=1))), [rpod(res())], None, None),
    (
        "extended resource fits for init container",
        rpod(res(), init=(res(**S(ext_a=1)),)),
        [rpod(res())],
        None,
        None,
    ),
    (
        "extended resource capacity enforced",
        rpod(res(1, 1, **S(ext_a=10))),
        [rpod(res(0, 0, **S(ext_a=0)))],
        None,
        (UNRESOLVABLE, [insufficient(EXT_A)]),
    ),
    (
        "extended resource capacity enforced for init container",
        rpod(res(), init=(res(1, 1, **S(ext_a=10)),)),
        [rpod(res(0, 0, **S(ext_a=0)))],
        None,
        (UNRESOLVABLE, [insufficient(EXT_A)]),
    ),
    (
        "extended resource allocatable enforced",
        rpod(res(1, 1, **S(ext_a=1))),
        [rpod(res(0, 0, **S(ext_a=5)))],
        None,
        (UNSCHED, [insufficient(EXT_A)]),
    ),
    (
        "extended resource allocatable enforced for init container",
        rpod(res(), init=(res(1, 1, **S(ext_a=1)),)),
        [rpod(res(0, 0, **S(ext_a=5)))],
        None,
        (UNSCHED, [insufficient(EXT_A)]),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        rpod(res(1, 1, **S(ext_a=3)), res(1, 1, **S(ext_a=3))),
        [rpod(res(0, 0, **S(ext_a=2)))],
        None,
        (UNRESOLVABLE, [insufficient(EXT_A)]),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        rpod(res(), init=(res(1, 1, **S(ext_a=3)), res(1, 1, **S(ext_a=3)))),
        [rpod(res(0, 0, **S(ext_a=2)))],
        None,
        None,
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        rpod(res(), init=(res(1, 1, **S(ext_a=6)), res(1, 1, **S(ext_a=3)))),
        [rpod(res(0, 0, **S(ext_a=2)))],
        None,
        (UNRESOLVABLE, [insufficient(EXT_A)]),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        rpod(res(1, 1, **S(ext_b=1))),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(EXT_B)]),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        rpod(res(), init=(res(1, 1, **S(ext_b=1)),)),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(EXT_B)]),
    ),
    (
        "kubernetes.io resource capacity enforced",
        rpod(res(1, 1, **S(k8s_a=10))),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(K8S_A)]),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        rpod(res(), init=(res(1, 1, **S(k8s_b=10)),)),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(K8S_B)]),
    ),
    (
        "hugepages resource capacity enforced",
        rpod(res(1, 1, **S(huge_a=10))),
        [rpod(res(0, 0, **S(huge_a=0)))],
        None,
        (UNRESOLVABLE, [insufficient(HUGE_A)]),
    ),
    (
        "hugepages resource capacity enforced for init container",
        rpod(res(), init=(res(1, 1, **S(huge_a=10)),)),
        [rpod(res(0, 0, **S(huge_a=0)))],
        None,
        (UNRESOLVABLE, [insufficient(HUGE_A)]),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        rpod(res(1, 1, **S(huge_a=3)), res(1, 1, **S(huge_a=3))),
        [rpod(res(0, 0, **S(huge_a=2)))],
        None,
        (UNRESOLVABLE, [insufficient(HUGE_A)]),
    ),
    (
        "skip checking ignored extended resource",
        rpod(res(1, 1, **S(ext_b=1))),
        [rpod(res())],
        {"ignoredResources": ["example.com/bbb"]},
        None,
    ),
    (
        "resources + pod overhead fits",
        rpod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        [rpod(res(5, 5))],
        None,
        None,
    ),
    (
        "requests + overhead does not fit for memory",
        rpod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        [rpod(res(5, 5))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        rpod(res(1, 1, **S(ext_b=1, k8s_a=1))),
        [rpod(res())],
        {"ignoredResourceGroups": ["example.com"]},
        (UNRESOLVABLE, [insufficient(K8S_A)]),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        rpod(res(1, 1, **S(ext_a=0))),
        [rpod(res(0, 0, **S(ext_a=6)))],
        None,
        None,
    ),
    (
        "skip checking resource request with quantity zero",
        rpod(res(**S(ext_a=1))),
        [rpod(res(20, 30, **S(ext_a=1)))],
        None,
        None,
    ),
    (
        "both pod-level and container-level resources fit",
        rpod(res(1, 1), pod_level={"cpu": "1m", "memory": "2"}),
        [rpod(res(5, 5))],
        None,
        None,
    ),
    (
        "pod-level cpu resource not fit",
        rpod(res(1, 1), pod_level={"cpu": "7m", "memory": "2"}),
        [rpod(res(5, 5))],
        None,
        (UNSCHED, [insufficient("cpu")]),
    ),
    (
        "pod-level memory resource not fit",
        rpod(res(1, 1), pod_level={"cpu": "3m", "memory": "2"}),
        [rpod(res(5, 19))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    (
        "pod-level hugepages resource fit",
        pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
        [],
        None,
        None,
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        rpod(res(1, 1, **S(huge_a=3)), pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
        [],
        None,
        None,
    ),
    (
        "pod-level hugepages resource not fit",
        pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "10"}),
        [],
        None,
        (UNRESOLVABLE, [insufficient(HUGE_A)]),
    ),
    (
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        rpod(res(1, 1), init=(res(1, 1),), pod_level={"cpu": "3m", "memory": "2"}),
        [rpod(res(5, 19))],
        None,
        (UNSCHED, [insufficient("memory")]),
    ),
    (
        "extended resource backed by device plugin",
        rpod(res(**S(ext_a=1))),
        [rpod(res())],
        None,
        None,
    ),
    (
        "extended resource backed by DRA, nil draManager",
        rpod(res(1, 1, **S(ext_a=1))),
        [rpod(res())],
        None,
        None,
    ),
    (
        "extended resource backed by DRA not enabled",
        rpod(res(1, 1, **S(dra=1))),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(EXT_DRA)]),
    ),
    (
        "extended resource NOT backed by DRA",
        rpod(res(1, 1, **S(ext_b=1))),
        [rpod(res())],
        None,
        (UNRESOLVABLE, [insufficient(EXT_B)]),
    ),
    (
        "extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        rpod(res(**S(ext_a=1))),
        [rpod(res(**S(ext_a=0)))],
        None,
        None,
    ),
]


def fit(args: dict[str, Any] | None = None) -> NodeResourcesFit:
    base = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    }
    return NodeResourcesFit(handle(), NodeResourcesFitArgs.model_validate({**base, **(args or {})}))


@pytest.mark.parametrize(
    "p,existing,args,want", [r[1:] for r in ENOUGH_ROWS], ids=[r[0] for r in ENOUGH_ROWS]
)
def test_enough_requests(p, existing, args, want):
    assert filter_status(fit(args), p, fit_node(*existing), "n") == want


TOO_MANY_PODS = (UNSCHED, ["Too many pods"])
NOT_ENOUGH_ROWS: list[tuple[Any, ...]] = [
    (
        "even without specified resources, predicate fails when there's no space for additional "
        "pod",
        pod(),
        [rpod(res(10, 20))],
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        rpod(res(1, 1)),
        [rpod(res(5, 5))],
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        rpod(res(5, 1)),
        [rpod(res(5, 19))],
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to "
        "init "
        "container",
        rpod(res(5, 1), init=(res(5, 1),)),
        [rpod(res(5, 19))],
    ),
]


@pytest.mark.parametrize(
    "p,existing", [r[1:] for r in NOT_ENOUGH_ROWS], ids=[r[0] for r in NOT_ENOUGH_ROWS]
)
def test_not_enough_requests(p, existing):
    snap = fit_node(*existing, alloc=(10, 20, 1, 0, 0, 0))
    assert filter_status(fit(), p, snap, "n") == TOO_MANY_PODS


STORAGE_ROWS: list[tuple[Any, ...]] = [
    ("empty storage requested, and pod fits", rpod(res(1, 1)), [rpod(res(2, 10))], None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        rpod(res(storage=25)),
        [rpod(res(2, 2))],
        (UNRESOLVABLE, [insufficient("ephemeral-storage")]),
    ),
    (
        "ephemeral local storage is sufficient",
        rpod(res(storage=5)),
        [rpod(res(2, 2, storage=10))],
        None,
    ),
    ("pod fits", rpod(res(storage=10)), [rpod(res(2, 2))], None),
]


@pytest.mark.parametrize(
    "p,existing,want", [r[1:] for r in STORAGE_ROWS], ids=[r[0] for r in STORAGE_ROWS]
)
def test_storage_requests(p, existing, want):
    assert filter_status(fit(), p, fit_node(*existing), "n") == want


def _sidecar_pod(request: dict[str, str] | None, sidecar_request: dict[str, str] | None) -> Any:
    return pod(
        containers=[container(request, name="regular")],
        init=[container(sidecar_request, name="restartable-init", sidecar=True)],
    )


RESTARTABLE_ROWS: list[tuple[Any, ...]] = [
    (
        "allow pod without restartable init containers if sidecar containers is disabled",
        pod(),
        None,
    ),
    ("allow pod without restartable init containers if sidecar containers is enabled", pod(), None),
    (
        "allow pod with restartable init containers if sidecar containers is enabled",
        _sidecar_pod(None, None),
        None,
    ),
    (
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        _sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}),
        None,
    ),
    (
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        _sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
        (UNRESOLVABLE, [insufficient("cpu")]),
    ),
]


@pytest.mark.parametrize(
    "p,want", [r[1:] for r in RESTARTABLE_ROWS], ids=[r[0] for r in RESTARTABLE_ROWS]
)
def test_restartable_init_containers(p, want):
    snap = fit_node(alloc=(2, 0, 1, 0, 0, 0))
    assert filter_status(fit(), p, snap, "n") == want


def _score_nodes(cpu2: str = "6000") -> list[Any]:
    return [
        node("node1", capacity={"cpu": "4000", "memory": "10000"}),
        node("node2", capacity={"cpu": cpu2, "memory": "10000"}),
    ]


def _on(name: str, *containers: Any, init: tuple[Any, ...] = ()) -> Any:
    return pod(
        f"on-{name}-{len(containers)}", containers=containers, init=list(init), node_name=name
    )


CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
RTCR1 = {
    "type": "RequestedToCapacityRatio",
    "resources": CPU_MEM,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    },
}
RTCR2 = {
    "type": "RequestedToCapacityRatio",
    "resources": CPU_MEM,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    },
}
MOST = {"type": "MostAllocated", "resources": CPU_MEM}
LEAST = {"type": "LeastAllocated", "resources": CPU_MEM}
EXISTING = [
    _on("node1", {"cpu": "2000", "memory": "4000"}),
    _on("node2", {"cpu": "1000", "memory": "2000"}),
]
SIDECAR_EXISTING = [
    _on(
        "node1",
        {"cpu": "1000", "memory": "2000"},
        init=(
            container(
                {"cpu": "1000", "memory": "2000"},
                limits={"cpu": "1000", "memory": "2000"},
                name="sidecar",
                sidecar=True,
            ),
        ),
    ),
    _on("node2", {"cpu": "1000", "memory": "2000"}),
]

SCORE_ROWS: list[tuple[Any, ...]] = [
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case1",
        {"cpu": "3000", "memory": "5000"},
        "6000",
        EXISTING,
        [("node1", 10), ("node2", 32)],
        RTCR1,
    ),
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case2",
        {"cpu": "3000", "memory": "5000"},
        "6000",
        EXISTING,
        [("node1", 95), ("node2", 68)],
        RTCR2,
    ),
    (
        "test case for ScoringStrategy MostAllocated",
        {"cpu": "1000", "memory": "2000"},
        "6000",
        EXISTING,
        [("node1", 67), ("node2", 36)],
        MOST,
    ),
    (
        "test case for ScoringStrategy LeastAllocated",
        {"cpu": "1000", "memory": "2000"},
        "6000",
        EXISTING,
        [("node1", 32), ("node2", 63)],
        LEAST,
    ),
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not called",
        {"cpu": "3000", "memory": "5000"},
        "6000",
        EXISTING,
        [("node1", 10), ("node2", 32)],
        RTCR1,
    ),
    (
        "test case for ScoringStrategy MostAllocated if PreScore is not called",
        {"cpu": "1000", "memory": "2000"},
        "6000",
        EXISTING,
        [("node1", 67), ("node2", 36)],
        MOST,
    ),
    (
        "test case for ScoringStrategy LeastAllocated if PreScore is not called",
        {"cpu": "1000", "memory": "2000"},
        "6000",
        EXISTING,
        [("node1", 32), ("node2", 63)],
        LEAST,
    ),
    (
        "test case for ScoringStrategy MostAllocated with sidecar container",
        {"cpu": "1000", "memory": "2000"},
        "4000",
        SIDECAR_EXISTING,
        [("node1", 67), ("node2", 45)],
        MOST,
    ),
    (
        "test case for ScoringStrategy LeastAllocated with sidecar container",
        {"cpu": "1000", "memory": "2000"},
        "4000",
        SIDECAR_EXISTING,
        [("node1", 32), ("node2", 55)],
        LEAST,
    ),
]


@pytest.mark.parametrize(
    "request_,cpu2,existing,expected,strategy",
    [r[1:] for r in SCORE_ROWS],
    ids=[r[0] for r in SCORE_ROWS],
)
def test_fit_score(request_, cpu2, existing, expected, strategy):
    snap = snapshot(_score_nodes(cpu2), existing)
    pl = NodeResourcesFit(
        handle(), NodeResourcesFitArgs.model_validate({"scoringStrategy": strategy})
    )
    assert scores(pl, pod(containers=[request_]), snap) == expected


def _hint_pod(
    name: str | None = None,
    uid: str | None = None,
    *,
    req: dict[str, str] | None = None,
    pod_level: dict[str, str] | None = None,
    node_name: str | None = None,
    nominated: str | None = None,
) -> Any:
    return pod(
        name or "p",
        uid=uid,
        containers=[req],
        pod_level=pod_level,
        node_name=node_name,
        nominated=nominated,
    )


# (id, target, old, new, expected)
POD_HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-old-object", _hint_pod(), "not-a-pod", None, QueueingHint.QUEUE),
    ("backoff-wrong-new-object", _hint_pod(), None, "not-a-pod", QueueingHint.QUEUE),
    (
        "queue-on-other-pod-deleted",
        _hint_pod("pod1", req={"cpu": "1"}),
        _hint_pod("pod2", req={"cpu": "1"}, node_name="fake"),
        None,
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-unscheduled-pod-deleted",
        _hint_pod(),
        _hint_pod("other"),
        None,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-nominated-pod-deleted",
        _hint_pod("pod1", "uid0", req={"cpu": "1"}),
        _hint_pod("pod2", "uid1", req={"cpu": "2"}, nominated="fake"),
        None,
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-other-unscheduled-pod",
        _hint_pod("pod1", "uid0", req={"cpu": "1"}),
        _hint_pod("pod2", "uid1", req={"cpu": "2"}),
        _hint_pod("pod2", "uid1", req={"cpu": "1"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        _hint_pod("pod1", "pod1", req={"cpu": "1"}),
        _hint_pod("pod2", "pod2", req={"memory": "2"}, node_name="fake"),
        _hint_pod("pod2", "pod2", req={"memory": "1"}, node_name="fake"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        _hint_pod("pod1", "pod1", pod_level={"cpu": "1"}),
        _hint_pod("pod2", "pod2", pod_level={"memory": "2"}, node_name="fake"),
        _hint_pod("pod2", "pod2", pod_level={"memory": "1"}, node_name="fake"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-other-pod-some-resource-scale-down",
        _hint_pod("pod1", "pod1", req={"cpu": "1"}),
        _hint_pod("pod2", "pod2", req={"cpu": "2"}, node_name="fake"),
        _hint_pod("pod2", "pod2", req={"cpu": "1"}, node_name="fake"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-other-pod-some-pod-level-resource-scale-down",
        _hint_pod("pod1", "pod1", pod_level={"cpu": "1"}),
        _hint_pod("pod2", "pod2", pod_level={"cpu": "2"}, node_name="fake"),
        _hint_pod("pod2", "pod2", pod_level={"cpu": "1"}, node_name="fake"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-resource-scale-down",
        _hint_pod("pod1", "pod1", req={"cpu": "1"}),
        _hint_pod("pod1", "pod1", req={"cpu": "2"}),
        _hint_pod("pod1", "pod1", req={"cpu": "1"}),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-pod-level-resource-scale-down",
        _hint_pod("pod1", "pod1", pod_level={"cpu": "1"}),
        _hint_pod("pod1", "pod1", pod_level={"cpu": "2"}),
        _hint_pod("pod1", "pod1", pod_level={"cpu": "1"}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    "target,old,new,expected", [r[1:] for r in POD_HINT_ROWS], ids=[r[0] for r in POD_HINT_ROWS]
)
def test_is_schedulable_after_pod_change(target, old, new, expected):
    assert pod_event_hint(PodInfo(target), old, new) == expected


def cap_node(**capacity: str) -> Any:
    return node(
        capacity={
            {"ext_a": EXT_A, "ext_b": EXT_B, "dra": EXT_DRA}.get(k, k.replace("_", "-")): v
            for k, v in capacity.items()
        }
    )


MEM2_EXT1 = rpod(res(mem=2, **S(ext_a=1)))
NODE_HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-new-object", pod(), None, "not-a-node", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", pod(), "not-a-node", node(), QueueingHint.QUEUE),
    (
        "skip-queue-on-node-add-without-sufficient-resources",
        rpod(res(mem=2)),
        None,
        cap_node(memory="1"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-node-add-without-required-resource-type",
        rpod(res(**S(ext_a=1))),
        None,
        cap_node(ext_b="1"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-node-add-with-sufficient-resources",
        MEM2_EXT1,
        None,
        cap_node(memory="4", ext_a="2"),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-unrelated-changes",
        MEM2_EXT1,
        cap_node(memory="2", ext_a="2"),
        cap_node(memory="2", ext_a="1", ext_b="2"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-pod-requested-resources-increase",
        MEM2_EXT1,
        cap_node(memory="2", ext_a="1"),
        cap_node(memory="2", ext_a="2"),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        MEM2_EXT1,
        cap_node(memory="4", ext_a="2"),
        cap_node(memory="1", ext_a="2"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-node-changes-from-unsuitable-to-suitable",
        MEM2_EXT1,
        cap_node(memory="1", ext_a="2"),
        cap_node(memory="4", ext_a="2"),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    "p,old,new,expected", [r[1:] for r in NODE_HINT_ROWS], ids=[r[0] for r in NODE_HINT_ROWS]
)
def test_is_schedulable_after_node_change(p, old, new, expected):
    assert node_change_hint(PodInfo(p), old, new) == expected


IS_FIT_ROWS: list[tuple[Any, ...]] = [
    ("nil node", pod(), None, False),
    ("insufficient resource", pod(containers=[{"cpu": "2"}]), cap_node(cpu="1"), False),
    ("sufficient resource", pod(containers=[{"cpu": "1"}]), cap_node(cpu="2"), True),
    ("insufficient pod-level resource", pod(pod_level={"cpu": "2"}), cap_node(cpu="1"), False),
    ("sufficient pod-level resource", pod(pod_level={"cpu": "2"}), cap_node(cpu="2"), True),
    (
        "sufficient pod-level resource hugepages",
        pod(pod_level={HUGE_A: "2Mi"}),
        node(capacity={HUGE_A: "2Mi"}),
        True,
    ),
    (
        "insufficient pod-level resource hugepages",
        pod(pod_level={HUGE_A: "4Mi"}),
        node(capacity={HUGE_A: "2Mi"}),
        False,
    ),
]


@pytest.mark.parametrize(
    "p,n,expected", [r[1:] for r in IS_FIT_ROWS], ids=[r[0] for r in IS_FIT_ROWS]
)
def test_is_fit(p, n, expected):
    assert is_fit(PodInfo(p), n) is expected


def _nodes(
    pods_: str, cpu: str, mem: str, storage: str, ext: str | None = None, ext_name: str = EXT_A
) -> Any:
    capacity = {"cpu": cpu, "memory": mem, "ephemeral-storage": storage}
    if ext is not None:
        capacity[ext_name] = ext
    return node(pods=pods_, capacity=capacity)


FULL = rpod(res(2, 2, 2, **S(ext_a=2)))
INCREASED_ROWS: list[tuple[Any, ...]] = [
    (
        "no-requested-resources",
        rpod(res()),
        _nodes("1", "1", "1", "1", "1"),
        _nodes("1", "2", "2", "2", "2"),
        False,
    ),
    (
        "no-requested-resources-pods-increased",
        rpod(res()),
        _nodes("1", "1", "1", "1", "1"),
        _nodes("2", "1", "1", "1", "1"),
        True,
    ),
    (
        "requested-resources-dra-in-node",
        rpod(res(2, 2, 2, **S(dra=2))),
        _nodes("32", "1", "2", "3", "4", EXT_DRA),
        _nodes("32", "1", "2", "1", "1", EXT_DRA),
        False,
    ),
    (
        "scalar-resources-not-in-node",
        FULL,
        _nodes("32", "1", "2", "3"),
        _nodes("32", "1", "2", "1"),
        False,
    ),
    (
        "requested-resources-decreased",
        FULL,
        _nodes("32", "1", "2", "3", "4"),
        _nodes("32", "1", "2", "1", "1"),
        False,
    ),
    (
        "requested-resources-increased",
        FULL,
        _nodes("32", "1", "2", "3", "4"),
        _nodes("32", "3", "4", "3", "4"),
        True,
    ),
    (
        "non-requested-resources-decreased",
        rpod(res(2, 2)),
        _nodes("32", "1", "2", "3", "4"),
        _nodes("32", "1", "2", "1", "1"),
        False,
    ),
    (
        "non-requested-resources-increased",
        rpod(res(2, 2)),
        _nodes("32", "1", "2", "3", "4"),
        _nodes("32", "1", "2", "5", "6"),
        False,
    ),
]


@pytest.mark.parametrize(
    "p,old,new,expected", [r[1:] for r in INCREASED_ROWS], ids=[r[0] for r in INCREASED_ROWS]
)
def test_have_any_requested_resources_increased(p, old, new, expected):
    assert requested_resources_increased(PodInfo(p), old, new) is expected
