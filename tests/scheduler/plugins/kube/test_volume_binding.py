"""kube-scheduler 1.36's volumebinding/volume_binding_test.go, row by row (ids = kube's names).

Objects go straight into the volume cache, as kube's test feeds a fake clientset. Each row
checks what kube's checks: the PreFilter status, the claims PreFilter sorted (bound /
delayed, and the PVs of each delayed claim's class), every node's Filter status, PreScore's
skip, and the scores. `EnableStorageCapacityScoring` (an alpha feature gate in 1.36) is our
VolumeBindingArgs.enableStorageCapacityScoring.

Ported in part:
- "storage capacity score", "dynamic provisioning with multiple PVCs of the same
  StorageClass", "prefer node with least allocatable", "prefer node with maximum
  allocatable": the PreFilter state and Filter verdicts are checked; their scores come from
  CSIStorageCapacity objects of a CSIDriver with storageCapacity, kinds the embedded
  cluster does not serve (we track no storage capacity: provisioning always fits, scored 0).
  The row "storage capacity score with static binds" scores static bindings only and is
  ported whole.

Not ported:
- Test_PreBindPreFlight (4 rows): our framework has no PreBindPreFlight extension point
  (PreBind itself returns at once when every claim is bound, see test_volume_scheduling).
- TestIsSchedulableAfterCSINodeChange, TestIsSchedulableAfterCSIStorageCapacityChange,
  TestIsSchedulableAfterCSIDriverChange: CSINode, CSIStorageCapacity and CSIDriver are not
  served by the embedded cluster, so their events never happen.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.volumebinding import (
    _STATE,
    VolumeBinding,
    VolumeBindingArgs,
    after_class_change,
    after_claim_change,
)
from phalanx.scheduler.volumebinder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
)

from .volume_harness import (
    SKIP,
    Handle,
    cache,
    filter_status,
    node,
    pod,
    pre_filter_status,
    pv,
    pvc,
    pvc_volume,
    snapshot,
    storage_class,
    unresolvable,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
NODE_KEY = "nodeKey"
IMMEDIATE_SC = storage_class("immediate-sc", "Immediate")
WAIT_SC = storage_class("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = storage_class("wait-hdd-sc", "WaitForFirstConsumer")
WAIT_CAPACITY_SC = storage_class("wait-sc-with-storage-capacity", "WaitForFirstConsumer",
                                 provisioner="driver-with-storage-capacity")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, WAIT_CAPACITY_SC]
CONFLICT = unresolvable(REASON_BIND_CONFLICT)
W, H, CAP = WAIT_SC.name, WAIT_HDD_SC.name, WAIT_CAPACITY_SC.name


def claims_pod(*names: str) -> Any:
    return pod("pod-a", volumes=[pvc_volume(n) for n in names])


def local_pvs(cls: str, size: str, host: str, *names: str) -> list[Any]:
    return [pv(n, cls, phase="Available", capacity=size, affinity={HOST: [host]}) for n in names]


def zonal_pvs(size: str, zone: str, region: str, *names: str) -> list[Any]:
    return [pv(n, W, phase="Available", capacity=size, affinity={REGION: [region], ZONE: [zone]})
            for n in names]


def zonal_nodes() -> list[Any]:
    return [node(f"zone-{z}-node-{n}", {REGION: f"region-{z}", ZONE: f"zone-{z}"})
            for z in "abc" for n in "ab"]


def keyed_nodes(*names: str) -> list[Any]:
    return [node(n, {NODE_KEY: n}) for n in names]


# Each row: pod, nodes, pvcs, pvs, scoring (None: off; True: default shape; list: a shape),
# PreFilter status, state after PreFilter (bound, delayed, {class: PV names}) or None,
# Filter status per node, PreScore skips?, scores (None: not checked).
ROWS: list[tuple[str, dict[str, Any]]] = [
    ("pod has not pvcs", dict(
        pod=pod("pod-a"), nodes=[node("node-a")], pre=SKIP)),
    ("all bound", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a")], pvs=[pv("pv-a", W, phase="Available")],
        state=(["pvc-a"], [], {}), filters=[None], prescore_skip=True)),
    ("PVC does not exist", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")],
        pre=unresolvable('persistentvolumeclaim "pvc-a" not found'))),
    ("Part of PVCs do not exist", dict(
        pod=claims_pod("pvc-a", "pvc-b"), nodes=[node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a")],
        pre=unresolvable('persistentvolumeclaim "pvc-b" not found'))),
    ("immediate claims not bound", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")], pvcs=[pvc("pvc-a", IMMEDIATE_SC.name)],
        pre=unresolvable(REASON_UNBOUND_IMMEDIATE))),
    ("unbound claims no matches", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")], pvcs=[pvc("pvc-a", W)],
        state=([], ["pvc-a"], {W: []}), filters=[CONFLICT], prescore_skip=True)),
    ("bound and unbound unsatisfied", dict(
        pod=claims_pod("pvc-a", "pvc-b"), nodes=[node("node-a", {"foo": "barbar"})],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a"), pvc("pvc-b", W)],
        pvs=[pv("pv-a", W, phase="Available", affinity={"foo": ["bar"]})],
        state=(["pvc-a"], ["pvc-b"], {W: ["pv-a"]}),
        filters=[unresolvable(REASON_NODE_CONFLICT, REASON_BIND_CONFLICT)], prescore_skip=True)),
    ("pv not found", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")], pvcs=[pvc("pvc-a", W, bound_pv="pv-a")],
        state=(["pvc-a"], [], {}), filters=[unresolvable(REASON_PV_NOT_EXIST)],
        prescore_skip=True)),
    ("pv not found claim lost", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a")],
        pvcs=[pvc("pvc-a", W, bound_pv="pv-a", phase="Lost")],
        pre=unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent '
                         'persistentvolume "pv-a"'))),
    ("local volumes with close capacity are preferred", dict(
        pod=claims_pod("pvc-a"), nodes=[node("node-a"), node("node-b"), node("node-c")],
        pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=local_pvs(W, "200Gi", "node-a", "pv-a-0", "pv-a-1")
        + local_pvs(W, "100Gi", "node-b", "pv-b-0", "pv-b-1"), scoring=True,
        state=([], ["pvc-a"], {W: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, CONFLICT], scores=[25, 50, 0])),
    ("local volumes with close capacity are preferred (multiple pvcs)", dict(
        pod=claims_pod("pvc-0", "pvc-1"), nodes=[node("node-a"), node("node-b"), node("node-c")],
        pvcs=[pvc("pvc-0", W, request="50Gi"), pvc("pvc-1", H, request="100Gi")],
        pvs=local_pvs(W, "200Gi", "node-a", "pv-a-0", "pv-a-1")
        + local_pvs(H, "200Gi", "node-a", "pv-a-2", "pv-a-3")
        + local_pvs(W, "100Gi", "node-b", "pv-b-0", "pv-b-1")
        + local_pvs(H, "100Gi", "node-b", "pv-b-2", "pv-b-3"), scoring=True,
        state=([], ["pvc-0", "pvc-1"], {H: ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
                                        W: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, CONFLICT], scores=[38, 75, 0])),
    ("zonal volumes with close capacity are preferred", dict(
        pod=claims_pod("pvc-a"), nodes=zonal_nodes(), pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=zonal_pvs("200Gi", "zone-a", "region-a", "pv-a-0", "pv-a-1")
        + zonal_pvs("100Gi", "zone-b", "region-b", "pv-b-0", "pv-b-1"), scoring=True,
        state=([], ["pvc-a"], {W: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, None, None, CONFLICT, CONFLICT], scores=[25, 25, 50, 50, 0, 0])),
    ("zonal volumes with close capacity are preferred (custom shape)", dict(
        pod=claims_pod("pvc-a"), nodes=zonal_nodes(), pvcs=[pvc("pvc-a", W, request="50Gi")],
        pvs=zonal_pvs("200Gi", "zone-a", "region-a", "pv-a-0", "pv-a-1")
        + zonal_pvs("100Gi", "zone-b", "region-b", "pv-b-0", "pv-b-1"),
        scoring=[(0, 0), (50, 3), (100, 5)],
        state=([], ["pvc-a"], {W: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, None, None, CONFLICT, CONFLICT], scores=[15, 15, 30, 30, 0, 0])),
    ("storage capacity score", dict(
        pod=claims_pod("pvc-dynamic"), nodes=keyed_nodes("node-a", "node-b", "node-c"),
        pvcs=[pvc("pvc-dynamic", CAP, request="10Gi")], scoring=True,
        state=([], ["pvc-dynamic"], {CAP: []}), filters=[None, None, None])),
    ("storage capacity score with static binds", dict(
        pod=claims_pod("pvc-dynamic", "pvc-static"),
        nodes=keyed_nodes("node-a", "node-b", "node-c"),
        pvcs=[pvc("pvc-dynamic", CAP, request="10Gi"), pvc("pvc-static", W, request="50Gi")],
        pvs=local_pvs(W, "100Gi", "node-a", "pv-static-a")
        + local_pvs(W, "100Gi", "node-b", "pv-static-b")
        + local_pvs(W, "100Gi", "node-c", "pv-static-c"), scoring=True,
        state=([], ["pvc-dynamic", "pvc-static"],
               {W: ["pv-static-a", "pv-static-b", "pv-static-c"], CAP: []}),
        filters=[None, None, None], scores=[50, 50, 50])),
    ("dynamic provisioning with multiple PVCs of the same StorageClass", dict(
        pod=claims_pod("pvc-dynamic-0", "pvc-dynamic-1"), nodes=keyed_nodes("node-a"),
        pvcs=[pvc("pvc-dynamic-0", CAP, request="50Gi"), pvc("pvc-dynamic-1", CAP, request="50Gi")],
        scoring=True, state=([], ["pvc-dynamic-0", "pvc-dynamic-1"], {CAP: []}), filters=[None])),
    ("prefer node with least allocatable", dict(
        pod=claims_pod("pvc-dynamic"), nodes=keyed_nodes("node-a", "node-b", "node-c"),
        pvcs=[pvc("pvc-dynamic", CAP, request="10Gi")], scoring=True,
        state=([], ["pvc-dynamic"], {CAP: []}), filters=[None, None, None])),
    ("prefer node with maximum allocatable", dict(
        pod=claims_pod("pvc-dynamic"), nodes=keyed_nodes("node-a", "node-b", "node-c"),
        pvcs=[pvc("pvc-dynamic", CAP, request="10Gi")], scoring=[(0, 10), (100, 0)],
        state=([], ["pvc-dynamic"], {CAP: []}), filters=[None, None, None])),
]


# kube's test sets this shape for scoring rows without args (its `defaultShapePoint`, the
# pre-1.33 default), not the v1 API's default ({0 -> 10}, {100 -> 0}).
KUBE_TEST_SHAPE = [(0, 0), (100, 10)]


def _args(scoring: Any) -> VolumeBindingArgs:
    if scoring is None:
        return VolumeBindingArgs()
    points = KUBE_TEST_SHAPE if scoring is True else scoring
    raw: dict[str, Any] = {"bindTimeoutSeconds": 300, "enableStorageCapacityScoring": True,
                           "shape": [{"utilization": u, "score": s} for u, s in points]}
    return VolumeBindingArgs.model_validate(raw)


@pytest.mark.parametrize("row", [r[1] for r in ROWS], ids=[r[0] for r in ROWS])
def test_volume_binding(row: dict[str, Any]) -> None:
    volumes = cache(row.get("pvs", []), row.get("pvcs", []), CLASSES)
    snap = snapshot(row["nodes"])
    plugin = VolumeBinding(Handle(volumes, snap), _args(row.get("scoring")))
    info = PodInfo(row["pod"])
    state = CycleState()
    assert pre_filter_status(plugin, info, snap, state) == row.get("pre")
    if row.get("pre") is not None:
        return  # the framework runs no Filter after a PreFilter that did not succeed
    claims = state.read(_STATE).claims
    bound, delayed, volumes_by_class = row["state"]
    assert [c.name for c in claims.bound] == bound
    assert [c.name for c in claims.delayed] == delayed
    assert {k: sorted(p.name for p in v) for k, v in claims.volumes.items()} == volumes_by_class
    for n, want in zip(row["nodes"], row["filters"], strict=True):
        assert filter_status(plugin, info, snap, n.name, state) == want, n.name
    rows = snap.valid_rows()
    skipped = plugin.pre_score(state, info, snap, rows).is_skip
    assert skipped is row.get("prescore_skip", False)
    if not skipped and row.get("scores") is not None:
        assert plugin.score(state, info, snap, rows).tolist() == row["scores"]


CLAIM_HINT_ROWS = [
    ("pod has no pvc or ephemeral volumes", pod("pod-a", volumes=[{"name": "", "emptyDir": {}}]),
     pvc("pvc-b", "sc-a"), pvc("pvc-b", "sc-a"), QueueingHint.QUEUE_SKIP),
    ("pvc with the same name as the one used by the pod in a different namespace is modified",
     pod("pod-a", namespace="ns-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-b")]),
     None, pvc("pvc-b", ""), QueueingHint.QUEUE_SKIP),
    ("pod has no pvc that is being modified",
     pod("pod-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-c")]),
     pvc("pvc-b", ""), pvc("pvc-b", ""), QueueingHint.QUEUE_SKIP),
    ("pod has no generic ephemeral volume that is being modified",
     pod("pod-a", volumes=[{"name": "ephemeral-a", "ephemeral": {}},
                           {"name": "ephemeral-c", "ephemeral": {}}]),
     pvc("pod-a-ephemeral-b", ""), pvc("pod-a-ephemeral-b", ""), QueueingHint.QUEUE_SKIP),
    ("pod has the pvc that is being modified",
     pod("pod-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-b")]),
     pvc("pvc-b", ""), pvc("pvc-b", ""), QueueingHint.QUEUE),
    ("pod has the generic ephemeral volume that is being modified",
     pod("pod-a", volumes=[{"name": "ephemeral-a", "ephemeral": {}},
                           {"name": "ephemeral-b", "ephemeral": {}}]),
     pvc("pod-a-ephemeral-b", ""), pvc("pod-a-ephemeral-b", ""), QueueingHint.QUEUE),
    ("type conversion error", pod("pod-a"), object(), object(), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(("p", "old", "new", "want"), [r[1:] for r in CLAIM_HINT_ROWS],
                         ids=[r[0] for r in CLAIM_HINT_ROWS])
def test_is_schedulable_after_persistent_volume_claim_change(p, old, new, want) -> None:
    assert after_claim_change(PodInfo(p), old, new) == want


_TOPOLOGY = [{HOST: ["node-a"]}]
CLASS_HINT_ROWS = [
    ("When a new StorageClass is created, it returns Queue", None,
     storage_class("sc-a", None), QueueingHint.QUEUE),
    ("When the AllowedTopologies are changed, it returns Queue", storage_class("sc-a", None),
     storage_class("sc-a", None, topologies=_TOPOLOGY), QueueingHint.QUEUE),
    ("When there are no changes to the StorageClass, it returns QueueSkip",
     storage_class("sc-a", None), storage_class("sc-a", None), QueueingHint.QUEUE_SKIP),
    ("type conversion error", object(), object(), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(("old", "new", "want"), [r[1:] for r in CLASS_HINT_ROWS],
                         ids=[r[0] for r in CLASS_HINT_ROWS])
def test_is_schedulable_after_storage_class_change(old, new, want) -> None:
    assert after_class_change(PodInfo(pod("pod-a")), old, new) == want
