"""kube-scheduler 1.36's volumebinding/binder_test.go: the rows expressible through the
VolumeBinding plugin (ids = kube's names).

binder_test.go drives the internal binder (FindPodVolumes, AssumePodVolumes,
BindPodVolumes...). Here the same scenarios go through the plugin's extension points:
PreFilter + Filter for FindPodVolumes (the bindings a node would get come from the binder's
`find_pod_volumes(choose=True)`, which Reserve uses), Reserve / Unreserve for
Assume / RevertAssumedPodVolumes, PreBind for BindPodVolumes. FindPodVolumes' `shouldFail`
(an error from GetPodVolumeClaims, or unbound immediate claims) is a PreFilter that rejects.

BindPodVolumes runs PreBind against the embedded API server: its objects get what the API
server demands and kube's fakes do not (an access mode, a volume source, server-assigned
uids and resourceVersions); the PV controller's moves "after 5 seconds" are written at
t=5s of virtual time, as kube's delayFunc does.

Not ported:
- the "CSIDriver with/without capacity tracking" variants of TestFindPodVolumes*: CSIDriver
  and CSIStorageCapacity are not served (we track no storage capacity: kube's "no CSIDriver"
  variant is the one that applies), and TestCapacity (11 rows) for the same reason;
- TestFindPodVolumesWithCSIMigration (4 rows), TestCheckBindingsWithCSIMigration (6 rows):
  CSI migration of in-tree PVs needs CSINode, not served;
- TestAssumePodVolumes "tmpupdate-failed", "one-binding, one-provision-tmpupdate-failed":
  they hand AssumePodVolumes bindings for PVs missing from the cache or older than it;
  Reserve computes its bindings from the cache, so such inputs cannot arise;
- TestBindPodVolumes "nothing-to-bind-nil", TestBindAPIUpdate (11 rows) and
  TestCheckBindings (20 rows): they test nil-versus-empty inputs and API reactor errors of
  the binder's internal functions;
  PreBind's own failures (conflicts, deleted claims, reset claimRefs, dropped selected
  nodes, timeouts) are covered by the BindPodVolumes rows below.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from phalanx.api.base import ObjectMeta, OwnerReference
from phalanx.api.core import ObjectReference, Pod
from phalanx.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    VolumeResourceRequirements,
)
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.volumebinding import _STATE, VolumeBinding, _State
from phalanx.scheduler.volumebinder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    ClaimSets,
    find_pod_volumes,
)

from .volume_harness import (
    Handle,
    cache,
    filter_status,
    node,
    pod,
    pre_filter_status,
    pvc_volume,
    run,
    snapshot,
    storage_class,
)

NS = "testns"
PVC_UID = "pvc-uid"
NODE_KEY = "nodeKey"
PROVISIONER = "test-provisioner"
# kube's waitClass, immediateClass, waitClassWithProvisioner, topoMismatchClass: lowercased,
# as the API server refuses camelCase object names.
WAIT, IMMEDIATE = "wait-class", "immediate-class"
WAIT_PROV, TOPO_MISMATCH = "wait-class-with-provisioner", "topo-mismatch-class"
WFFC = "WaitForFirstConsumer"
CLASSES = [
    storage_class(WAIT_PROV, WFFC, PROVISIONER,
                  topologies=[{NODE_KEY: ["node1", "reference-value"]}]),
    storage_class(IMMEDIATE, "Immediate"),
    storage_class(WAIT, WFFC, "kubernetes.io/no-provisioner"),
    storage_class(TOPO_MISMATCH, WFFC, PROVISIONER, topologies=[{NODE_KEY: ["reference-value"]}]),
]
UNBOUND, PREBOUND, BOUND, SELECTED = range(4)


def test_pvc(name: str, size: str, node_name: str, state: int, pv_name: str, rv: str,
             cls: str) -> PersistentVolumeClaim:
    """makeTestPVC."""
    ann: dict[str, str] = {}
    volume = None
    if state == SELECTED:
        ann[ANN_SELECTED_NODE] = node_name
    if state == BOUND:
        ann[ANN_BIND_COMPLETED] = "yes"
    if state in (BOUND, PREBOUND):
        volume = pv_name
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, namespace=NS, uid=PVC_UID, resource_version=rv,
                            annotations=ann),
        spec=PersistentVolumeClaimSpec(
            resources=VolumeResourceRequirements(requests={"storage": size}),
            storage_class_name=cls, volume_mode="Filesystem", volume_name=volume))


test_pvc.__test__ = False  # type: ignore[attr-defined]  # a builder, not a test


def test_pv(name: str, node_name: str, capacity: str, rv: str,
            bound_to: PersistentVolumeClaim | None, cls: str) -> PersistentVolume:
    """makeTestPV."""
    pv = PersistentVolume.model_validate({
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {"capacity": {"storage": capacity}, "storageClassName": cls,
                 "volumeMode": "Filesystem"},
        "status": {"phase": "Available"}})
    if node_name:
        pv.spec.node_affinity = PersistentVolume.model_validate({"spec": {"nodeAffinity": {
            "required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": NODE_KEY, "operator": "In", "values": [node_name]}]}]}}}}
        ).spec.node_affinity
    if bound_to is not None:
        pv.spec.claim_ref = ObjectReference(
            kind="PersistentVolumeClaim", api_version="v1",
            resource_version=bound_to.metadata.resource_version, name=bound_to.name,
            namespace=bound_to.namespace, uid=bound_to.metadata.uid)
        pv.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    return pv


test_pv.__test__ = False  # type: ignore[attr-defined]


UNBOUND_PVC = test_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT)
UNBOUND_PVC2 = test_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT)
PREBOUND_PVC = test_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT)
BOUND_PVC = test_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT)
BOUND_PVC_NODE1A = test_pvc("unbound-pvc", "1G", "", BOUND, "pv-node1a", "1", WAIT)
IMMEDIATE_UNBOUND_PVC = test_pvc("immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE)
IMMEDIATE_BOUND_PVC = test_pvc("immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1",
                               IMMEDIATE)
PROVISIONED_PVC = test_pvc("provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_PROV)
NO_PROVISIONER_PVC = test_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT)
TOPO_MISMATCH_PVC = test_pvc("topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH)
SELECTED_NODE_PVC = test_pvc("provisioned-pvc", "1Gi", "node1", SELECTED, "", "1", WAIT_PROV)

PV_NODE1A = test_pv("pv-node1a", "node1", "5G", "1", None, WAIT)
PV_NODE1B = test_pv("pv-node1b", "node1", "10G", "1", None, WAIT)
PV_NODE1C = test_pv("pv-node1b", "node1", "5G", "1", None, WAIT)
PV_NODE2 = test_pv("pv-node2", "node2", "1G", "1", None, WAIT)
PV_BOUND = test_pv("pv-bound", "node1", "1G", "1", BOUND_PVC, WAIT)
PV_NODE1A_BOUND = test_pv("pv-node1a", "node1", "5G", "1", UNBOUND_PVC, WAIT)
PV_NODE1B_BOUND = test_pv("pv-node1b", "node1", "10G", "1", UNBOUND_PVC2, WAIT)
PV_BOUND_IMMEDIATE = test_pv("pv-bound-immediate", "node1", "1G", "1", IMMEDIATE_BOUND_PVC,
                             IMMEDIATE)
PV_BOUND_IMMEDIATE_NODE2 = test_pv("pv-bound-immediate", "node2", "1G", "1", IMMEDIATE_BOUND_PVC,
                                   IMMEDIATE)


def generic_pvc(owned: bool) -> PersistentVolumeClaim:
    """makeGenericEphemeralPVC("test-volume", owned): the pod's uid is empty, as kube's."""
    claim = test_pvc("test-pod-test-volume", "1G", "", BOUND, "pv-bound", "1", IMMEDIATE)
    if owned:
        claim.metadata.owner_references = [OwnerReference(api_version="", kind="", name="test-pod",
                                                          uid="", controller=True)]
    return claim


CORRECT_GENERIC_PVC = generic_pvc(True)
CONFLICTING_GENERIC_PVC = generic_pvc(False)
PV_BOUND_GENERIC = test_pv("pv-bound", "node1", "1G", "1", CORRECT_GENERIC_PVC, WAIT)
TEST_NODE = node("node1", {NODE_KEY: "node1"}, hostname=False)


def claims_pod(pvcs: list[PersistentVolumeClaim]) -> Pod:
    """makePod("test-pod").withNamespace("testns").withNodeName("node1").withPVCSVolume()."""
    return pod("test-pod", namespace=NS, node_name="node1",
               volumes=[pvc_volume(c.name, f"vol{i}") for i, c in enumerate(pvcs)])


def ephemeral_pod(volume: str) -> Pod:
    return pod("test-pod", namespace=NS, node_name="node1",
               volumes=[{"name": volume, "ephemeral": {}}])


def _find(pvs: list[PersistentVolume], pod_pvcs: list[PersistentVolumeClaim],
          cache_pvcs: list[PersistentVolumeClaim] | None = None, p: Pod | None = None) -> dict:
    volumes = cache(pvs, pod_pvcs if cache_pvcs is None else cache_pvcs, CLASSES)
    snap = snapshot([TEST_NODE])
    plugin = VolumeBinding(Handle(volumes, snap))
    info = PodInfo(p if p is not None else claims_pod(pod_pvcs))
    state = CycleState()
    out: dict[str, Any] = {"failed": False, "reasons": [], "bindings": [], "provisions": []}
    pre = pre_filter_status(plugin, info, snap, state)
    if pre is not None:
        out["failed"] = pre[0].name != "SKIP"
        return out
    status = filter_status(plugin, info, snap, "node1", state)
    out["reasons"] = status[1] if status else []
    found = find_pod_volumes(volumes, state.read(_STATE).claims, snap,
                             np.asarray([snap.index["node1"]]), choose=True)
    out["bindings"] = [(c.name, v.name) for v, c in found.static]
    out["provisions"] = [c.name for c in found.provision]
    return out


WITHOUT_PROVISIONING: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("no-volumes", dict(pvs=[], pod_pvcs=[], p=pod("test-pod", namespace=NS, node_name="node1")),
     {}),
    ("no-pvcs", dict(pvs=[], pod_pvcs=[], p=pod("test-pod", namespace=NS, node_name="node1",
                                                volumes=[{"name": "", "emptyDir": {}}])), {}),
    ("pvc-not-found", dict(pvs=[], pod_pvcs=[BOUND_PVC], cache_pvcs=[]), {"failed": True}),
    ("bound-pvc", dict(pvs=[PV_BOUND], pod_pvcs=[BOUND_PVC]), {}),
    ("bound-pvc,pv-not-exists", dict(pvs=[], pod_pvcs=[BOUND_PVC]),
     {"reasons": [REASON_PV_NOT_EXIST]}),
    ("prebound-pvc", dict(pvs=[PV_NODE1A_BOUND], pod_pvcs=[PREBOUND_PVC]), {"failed": True}),
    ("unbound-pvc,pv-same-node", dict(pvs=[PV_NODE2, PV_NODE1A, PV_NODE1B],
                                      pod_pvcs=[UNBOUND_PVC]),
     {"bindings": [("unbound-pvc", "pv-node1a")]}),
    ("unbound-pvc,pv-different-node", dict(pvs=[PV_NODE2], pod_pvcs=[UNBOUND_PVC]),
     {"reasons": [REASON_BIND_CONFLICT]}),
    ("two-unbound-pvcs", dict(pvs=[PV_NODE1A, PV_NODE1B], pod_pvcs=[UNBOUND_PVC, UNBOUND_PVC2]),
     {"bindings": [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")]}),
    ("two-unbound-pvcs,order-by-size", dict(pvs=[PV_NODE1A, PV_NODE1B],
                                            pod_pvcs=[UNBOUND_PVC2, UNBOUND_PVC]),
     {"bindings": [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")]}),
    ("two-unbound-pvcs,partial-match", dict(pvs=[PV_NODE1A], pod_pvcs=[UNBOUND_PVC, UNBOUND_PVC2]),
     {"bindings": [("unbound-pvc", "pv-node1a")], "reasons": [REASON_BIND_CONFLICT]}),
    ("one-bound,one-unbound", dict(pvs=[PV_BOUND, PV_NODE1A], pod_pvcs=[UNBOUND_PVC, BOUND_PVC]),
     {"bindings": [("unbound-pvc", "pv-node1a")]}),
    ("one-bound,one-unbound,no-match", dict(pvs=[PV_BOUND, PV_NODE2],
                                            pod_pvcs=[UNBOUND_PVC, BOUND_PVC]),
     {"reasons": [REASON_BIND_CONFLICT]}),
    ("one-prebound,one-unbound", dict(pvs=[PV_NODE1A, PV_NODE1B],
                                      pod_pvcs=[UNBOUND_PVC, PREBOUND_PVC]), {"failed": True}),
    ("immediate-bound-pvc", dict(pvs=[PV_BOUND_IMMEDIATE], pod_pvcs=[IMMEDIATE_BOUND_PVC]), {}),
    ("immediate-bound-pvc-wrong-node", dict(pvs=[PV_BOUND_IMMEDIATE_NODE2],
                                            pod_pvcs=[IMMEDIATE_BOUND_PVC]),
     {"reasons": [REASON_NODE_CONFLICT]}),
    ("immediate-unbound-pvc", dict(pvs=[], pod_pvcs=[IMMEDIATE_UNBOUND_PVC]), {"failed": True}),
    ("immediate-unbound-pvc,delayed-mode-bound", dict(pvs=[PV_BOUND],
                                                      pod_pvcs=[IMMEDIATE_UNBOUND_PVC, BOUND_PVC]),
     {"failed": True}),
    ("immediate-unbound-pvc,delayed-mode-unbound", dict(pvs=[], pod_pvcs=[IMMEDIATE_UNBOUND_PVC,
                                                                         UNBOUND_PVC]),
     {"failed": True}),
    ("generic-ephemeral,no-pvc", dict(pvs=[], pod_pvcs=[], p=ephemeral_pod("no-such-pvc")),
     {"failed": True}),
    ("generic-ephemeral,with-pvc", dict(pvs=[PV_BOUND_GENERIC], pod_pvcs=[],
                                        cache_pvcs=[CORRECT_GENERIC_PVC],
                                        p=ephemeral_pod("test-volume")), {}),
    ("generic-ephemeral,wrong-pvc", dict(pvs=[PV_BOUND_GENERIC], pod_pvcs=[],
                                         cache_pvcs=[CONFLICTING_GENERIC_PVC],
                                         p=ephemeral_pod("test-volume")), {"failed": True}),
]

WITH_PROVISIONING: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("one-provisioned", dict(pvs=[], pod_pvcs=[PROVISIONED_PVC]),
     {"provisions": ["provisioned-pvc"]}),
    ("two-unbound-pvcs,one-matched,one-provisioned", dict(pvs=[PV_NODE1A],
                                                          pod_pvcs=[UNBOUND_PVC, PROVISIONED_PVC]),
     {"bindings": [("unbound-pvc", "pv-node1a")], "provisions": ["provisioned-pvc"]}),
    ("one-bound,one-provisioned", dict(pvs=[PV_BOUND], pod_pvcs=[BOUND_PVC, PROVISIONED_PVC]),
     {"provisions": ["provisioned-pvc"]}),
    ("one-binding,one-selected-node", dict(pvs=[PV_BOUND], pod_pvcs=[BOUND_PVC, SELECTED_NODE_PVC]),
     {"provisions": ["provisioned-pvc"]}),
    ("immediate-unbound-pvc", dict(pvs=[], pod_pvcs=[IMMEDIATE_UNBOUND_PVC]), {"failed": True}),
    ("one-immediate-bound,one-provisioned", dict(pvs=[PV_BOUND_IMMEDIATE],
                                                 pod_pvcs=[IMMEDIATE_BOUND_PVC, PROVISIONED_PVC]),
     {"provisions": ["provisioned-pvc"]}),
    ("invalid-provisioner", dict(pvs=[], pod_pvcs=[NO_PROVISIONER_PVC]),
     {"reasons": [REASON_BIND_CONFLICT]}),
    ("volume-topology-unsatisfied", dict(pvs=[], pod_pvcs=[TOPO_MISMATCH_PVC]),
     {"reasons": [REASON_BIND_CONFLICT]}),
]


def _check(given: dict[str, Any], want: dict[str, Any]) -> None:
    got = _find(**given)
    expected = {"failed": False, "reasons": [], "bindings": [], "provisions": [], **want}
    if expected["failed"]:
        assert got["failed"]
        return
    assert got == expected


@pytest.mark.parametrize(("given", "want"), [r[1:] for r in WITHOUT_PROVISIONING],
                         ids=[r[0] for r in WITHOUT_PROVISIONING])
def test_find_pod_volumes_without_provisioning(given, want) -> None:
    _check(given, want)


@pytest.mark.parametrize(("given", "want"), [r[1:] for r in WITH_PROVISIONING],
                         ids=[r[0] for r in WITH_PROVISIONING])
def test_find_pod_volumes_with_provisioning(given, want) -> None:
    _check(given, want)


# --- Reserve / Unreserve (AssumePodVolumes, RevertAssumedPodVolumes) -----------------------


def _reserved(pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]):
    volumes = cache(pvs, pvcs, CLASSES)
    snap = snapshot([TEST_NODE])
    plugin = VolumeBinding(Handle(volumes, snap))
    info = PodInfo(claims_pod(pvcs))
    state = CycleState()
    assert pre_filter_status(plugin, info, snap, state) is None
    assert filter_status(plugin, info, snap, "node1", state) is None
    assert plugin.reserve(state, info, "node1").is_success
    return plugin, volumes, info, state


def _bound_to(pv: PersistentVolume | None, claim: PersistentVolumeClaim) -> bool:
    ref = pv.spec.claim_ref if pv is not None else None
    return ref is not None and (ref.namespace, ref.name, ref.uid) == (
        claim.namespace, claim.name, claim.metadata.uid) and \
        pv.metadata.annotations.get(ANN_BOUND_BY_CONTROLLER) == "yes"


ASSUME_ROWS = [
    ("all-bound", [PV_BOUND], [BOUND_PVC], True, [], []),
    ("one-binding", [PV_NODE1A], [UNBOUND_PVC], False, [("unbound-pvc", "pv-node1a")], []),
    ("two-bindings", [PV_NODE1A, PV_NODE1B], [UNBOUND_PVC, UNBOUND_PVC2], False,
     [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], []),
    ("pv-already-bound", [PV_NODE1A_BOUND], [UNBOUND_PVC], False, [("unbound-pvc", "pv-node1a")],
     []),
    ("one-binding, one-pvc-provisioned", [PV_NODE1A], [UNBOUND_PVC, PROVISIONED_PVC], False,
     [("unbound-pvc", "pv-node1a")], ["provisioned-pvc"]),
]


@pytest.mark.parametrize(("pvs", "pvcs", "all_bound", "bindings", "provisions"),
                         [r[1:] for r in ASSUME_ROWS], ids=[r[0] for r in ASSUME_ROWS])
def test_assume_pod_volumes(pvs, pvcs, all_bound, bindings, provisions) -> None:
    _, volumes, _, state = _reserved(pvs, pvcs)
    st: _State = state.read(_STATE)
    assert st.all_bound is all_bound
    assert [(c.name, v.name) for v, c in st.static] == bindings
    assert [c.name for c in st.provision] == provisions
    by_name = {c.name: c for c in pvcs}
    for claim_name, pv_name in bindings:  # validateAssume: the cache sees the bound PV
        assert _bound_to(volumes.pv(pv_name), by_name[claim_name])
    for claim_name in provisions:
        assert volumes.pvc(NS, claim_name).metadata.annotations[ANN_SELECTED_NODE] == "node1"


def test_revert_assumed_pod_volumes() -> None:
    plugin, volumes, info, state = _reserved([PV_NODE1A], [UNBOUND_PVC, PROVISIONED_PVC])
    assert _bound_to(volumes.pv("pv-node1a"), UNBOUND_PVC)
    assert ANN_SELECTED_NODE in volumes.pvc(NS, "provisioned-pvc").metadata.annotations
    plugin.unreserve(state, info, "node1")
    assert volumes.pv("pv-node1a") is volumes.api_pv("pv-node1a")
    assert volumes.pv("pv-node1a").spec.claim_ref is None
    assert ANN_SELECTED_NODE not in volumes.pvc(NS, "provisioned-pvc").metadata.annotations


def test_find_assume_volumes() -> None:
    """After Reserve, finding volumes for the same pod again returns the PV it assumed."""
    plugin, volumes, info, state = _reserved([PV_NODE2, PV_NODE1A, PV_NODE1C], [UNBOUND_PVC])
    first = [(c.name, v.name) for v, c in state.read(_STATE).static]
    assert first == [("unbound-pvc", "pv-node1a")]
    snap = plugin.handle.snapshot()
    for _ in range(50):
        again = CycleState()
        assert pre_filter_status(plugin, info, snap, again) is None
        assert filter_status(plugin, info, snap, "node1", again) is None
        found = find_pod_volumes(volumes, again.read(_STATE).claims, snap,
                                 np.asarray([snap.index["node1"]]), choose=True)
        assert [(c.name, v.name) for v, c in found.static] == first


# --- PreBind (BindPodVolumes) on the embedded API server -----------------------------------


def _api_pv(pv: PersistentVolume, claims: dict[str, PersistentVolumeClaim]) -> PersistentVolume:
    """An API-valid copy: an access mode and a source; claimRef uids of the created claims."""
    out = pv.copy_deep()
    out.metadata.resource_version = None
    out.spec.access_modes = ["ReadWriteOnce"]
    out.spec.local = {"path": "/mnt/disk"}
    ref = out.spec.claim_ref
    if ref is not None and ref.name in claims:
        ref.uid = claims[ref.name].metadata.uid
        ref.resource_version = None
    return out


def _api_pvc(claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
    out = claim.copy_deep()
    out.metadata.resource_version = None
    out.metadata.uid = None
    out.spec.access_modes = ["ReadWriteOnce"]
    return out


async def _bind_claim(client: Any, name: str, pv_name: str) -> None:
    claim = await client.get(PersistentVolumeClaim, name, NS)
    claim.spec.volume_name = pv_name
    claim.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
    await client.update(claim)


async def _static_bound(client, sched, claims):
    await _bind_claim(client, claims[0].name, "pv-node1a")


async def _dynamic_bound(client, sched, claims):
    claim = await client.get(PersistentVolumeClaim, claims[0].name, NS)
    dynamic = _api_pv(test_pv("dynamic-pv", "node1", "1G", "1", None, WAIT), {})
    dynamic.spec.claim_ref = ObjectReference(kind="PersistentVolumeClaim", name=claim.name,
                                             namespace=NS, uid=claim.metadata.uid)
    await client.create(dynamic)
    await _bind_claim(client, claim.name, "dynamic-pv")


async def _delete_pod(client, sched, claims):
    await client.delete(Pod, "test-pod", NS)


async def _delete_claim(client, sched, claims):
    await client.delete(PersistentVolumeClaim, claims[0].name, NS)


async def _bound_elsewhere(client, sched, claims):
    await _bind_claim(client, claims[0].name, "pv-node2")


NODE1 = node("node1", {NODE_KEY: "node1"})
NODE2 = node("node2", {NODE_KEY: "node2"})
NODE1_NO_LABELS = node("node1", hostname=False)

# name: (nodes, initPVs, initPVCs, binding (claim, pv) or None, claimToProvision or None,
#        apiPV/apiPVC written after assume (bool), delayFunc, shouldFail)
BIND_ROWS: list[tuple[str, tuple[Any, ...]]] = [
    ("nothing-to-bind-empty", (None, [], [], None, None, False, None, False)),
    ("already-bound", (None, [PV_NODE1A_BOUND], [BOUND_PVC_NODE1A],
                       (UNBOUND_PVC, PV_NODE1A_BOUND), None, False, None, False)),
    ("binding-static-pv-succeeds-after-time", (None, [PV_NODE1A], [UNBOUND_PVC],
                                               (UNBOUND_PVC, PV_NODE1A_BOUND), None, False,
                                               _static_bound, False)),
    ("binding-dynamic-pv-succeeds-after-time", (None, [], [PROVISIONED_PVC], None,
                                                PROVISIONED_PVC, False, _dynamic_bound, False)),
    ("bound-by-pv-controller-before-bind", (None, [PV_NODE1A], [UNBOUND_PVC],
                                            (UNBOUND_PVC, PV_NODE1A_BOUND), None, True, None,
                                            True)),
    ("pod-deleted-after-time", (None, [PV_NODE1A], [UNBOUND_PVC], (UNBOUND_PVC, PV_NODE1A_BOUND),
                                None, False, _delete_pod, True)),
    ("binding-times-out", (None, [PV_NODE1A], [UNBOUND_PVC], (UNBOUND_PVC, PV_NODE1A_BOUND), None,
                           False, None, True)),
    ("binding-fails", (None, [PV_NODE1B], [UNBOUND_PVC2], (UNBOUND_PVC2, PV_NODE1B_BOUND), None,
                       False, None, True)),
    ("check-fails", (None, [PV_NODE1A], [UNBOUND_PVC], (UNBOUND_PVC, PV_NODE1A_BOUND), None, False,
                     _delete_claim, True)),
    ("node-affinity-fails", ([NODE1_NO_LABELS], [PV_NODE1A_BOUND], [BOUND_PVC_NODE1A],
                             (UNBOUND_PVC, PV_NODE1A_BOUND), None, False, None, True)),
    ("node-affinity-fails-dynamic-provisioning", ([NODE1, NODE2], [PV_NODE1A, PV_NODE2],
                                                  [SELECTED_NODE_PVC], None, SELECTED_NODE_PVC,
                                                  False, _bound_elsewhere, True)),
]


@pytest.mark.parametrize("row", [r[1] for r in BIND_ROWS], ids=[r[0] for r in BIND_ROWS])
def test_bind_pod_volumes(row: tuple[Any, ...]) -> None:
    nodes, init_pvs, init_pvcs, binding, to_provision, api_update, delay, should_fail = row

    async def body(client: Any, sched: Any) -> None:
        created = {c.name: await client.create(_api_pvc(c)) for c in init_pvcs}
        for pv in init_pvs:
            await client.create(_api_pv(pv, created))
        await client.create(pod("test-pod", namespace=NS, node_name="node1"))
        await sched.wait_idle(timeout=30)
        plugin: VolumeBinding = sched.frameworks["phalanx-scheduler"].plugins["VolumeBinding"]
        plugin.args.bind_timeout_seconds = 10  # kube's test binder waits 10 s
        volumes = plugin.cache
        st = _State(ClaimSets())
        if binding is not None:  # testEnv.assumeVolumes
            claim = volumes.pvc(NS, binding[0].name)
            assumed = _api_pv(binding[1], created)
            current = volumes.pv(binding[1].name)
            assumed.metadata.resource_version = current.metadata.resource_version
            volumes.assume_pv(assumed)
            st.static.append((assumed, claim))
        if to_provision is not None:
            claim = volumes.pvc(NS, to_provision.name).copy_deep()
            claim.metadata.annotations[ANN_SELECTED_NODE] = "node1"
            volumes.assume_pvc(claim)
            st.provision.append(claim)
        if api_update:  # the PV controller bound them meanwhile
            await _bind_claim(client, binding[0].name, binding[1].name)
            pv = await client.get(PersistentVolume, binding[1].name)
            pv.spec.claim_ref = _api_pv(binding[1], created).spec.claim_ref
            await client.update(pv)
        state = CycleState()
        state.write(_STATE, st)
        info = PodInfo(await client.get(Pod, "test-pod", NS))

        async def later() -> None:
            await asyncio.sleep(5)  # kube's delayFunc runs 5 s into BindPodVolumes
            await delay(client, sched, init_pvcs)

        task = asyncio.create_task(later()) if delay is not None else None
        status = await plugin.pre_bind(state, info, "node1")
        if task is not None:
            await task
        assert status.is_success is not should_fail, status

    run(body, nodes=nodes or [NODE1], objects=[*CLASSES_API], controllers=False)


def _api_class(sc: Any) -> Any:
    out = sc.copy_deep()
    out.provisioner = out.provisioner or "kubernetes.io/no-provisioner"
    return out


CLASSES_API = [_api_class(sc) for sc in CLASSES]
