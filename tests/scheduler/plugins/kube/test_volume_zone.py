"""kube-scheduler 1.36's volumezone/volume_zone_test.go, row by row (ids = kube's names).

As kube's tests call Filter after PreFilter whatever PreFilter said, so do these (our
Filter recomputes the PVs' topology when PreFilter left no state, as kube's falls back to).
Objects go straight into the volume cache, as kube's listers, so kube's names ("Vol_1",
"PVC_1", which the API server would refuse) are kept.

Not ported: BenchmarkVolumeZone (a Go benchmark, not a test row).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    StorageClass,
)
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.volumezone import (
    REASON,
    VolumeZone,
    after_claim_change,
    after_class_added,
    after_volume_change,
)

from .volume_harness import (
    SKIP,
    Handle,
    cache,
    filter_status,
    node,
    pod,
    pre_filter_status,
    pvc_volume,
    snapshot,
    unresolvable,
)

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = unresolvable(REASON)


def volume(name: str, labels: dict[str, str]) -> PersistentVolume:
    return PersistentVolume(metadata=ObjectMeta(name=name, labels=labels))


def claim(name: str, volume_name: str = "", class_name: str | None = None,
          namespace: str = "default") -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PersistentVolumeClaimSpec(volume_name=volume_name or None,
                                       storage_class_name=class_name))


def with_volume(pvc_name: str) -> Any:
    """createPodWithVolume("pod_1", pvc)."""
    return pod("pod_1", volumes=[pvc_volume(pvc_name)])


def host(labels: dict[str, str]) -> Any:
    return node("host1", labels, hostname=False)


SINGLE_ZONE_PVS = [
    volume("Vol_1", {BETA_ZONE: "us-west1-a"}),
    volume("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    volume("Vol_3", {BETA_REGION: "us-west1"}),
    volume("Vol_Stable_1", {ZONE: "us-west1-a"}),
    volume("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    volume("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_ZONE_PVCS = [
    claim("PVC_1", "Vol_1"), claim("PVC_2", "Vol_2"), claim("PVC_3", "Vol_3"),
    claim("PVC_4", "Vol_not_exist"), claim("PVC_Stable_1", "Vol_Stable_1"),
    claim("PVC_Stable_2", "Vol_Stable_2"), claim("PVC_Stable_3", "Vol_Stable_3"),
]
USELESS = {"uselessLabel": "none"}

SINGLE_ZONE = [
    ("pod without volume", pod("pod_1"), host({BETA_ZONE: "us-west1-a"}), SKIP, None),
    ("node without labels", with_volume("PVC_1"), host({}), None, None),
    ("beta zone label matched", with_volume("PVC_1"), host({BETA_ZONE: "us-west1-a", **USELESS}),
     None, None),
    ("beta region label matched", with_volume("PVC_2"),
     host({BETA_REGION: "us-west1", **USELESS}), None, None),
    ("beta region label doesn't match", with_volume("PVC_2"),
     host({BETA_REGION: "no_us-west1", **USELESS}), None, CONFLICT),
    ("beta zone label doesn't match", with_volume("PVC_1"),
     host({BETA_ZONE: "no_us-west1-a", **USELESS}), None, CONFLICT),
    ("zone label matched", with_volume("PVC_Stable_1"), host({ZONE: "us-west1-a", **USELESS}),
     None, None),
    ("region label matched", with_volume("PVC_Stable_2"), host({REGION: "us-west1", **USELESS}),
     None, None),
    ("region label doesn't match", with_volume("PVC_Stable_2"),
     host({REGION: "no_us-west1", **USELESS}), None, CONFLICT),
    ("zone label doesn't match", with_volume("PVC_Stable_1"),
     host({ZONE: "no_us-west1-a", **USELESS}), None, CONFLICT),
    ("pv with zone and region, node with only zone", with_volume("PVC_Stable_3"),
     host({ZONE: "us-west1-a"}), None, CONFLICT),
    ("pv with zone,node with beta zone", with_volume("PVC_Stable_1"),
     host({BETA_ZONE: "us-west1-a"}), None, CONFLICT),
    ("pv with beta label,node with ga label, matched", with_volume("PVC_1"),
     host({ZONE: "us-west1-a"}), None, None),
    ("pv with beta label,node with ga label, don't match", with_volume("PVC_1"),
     host({ZONE: "us-west1-b"}), None, CONFLICT),
]

MULTI_ZONE_PVS = [
    volume("Vol_1", {BETA_ZONE: "us-west1-a"}),
    volume("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    volume("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    volume("Vol_Stable_1", {ZONE: "us-west1-a"}),
    volume("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_ZONE_PVCS = [
    claim("PVC_1", "Vol_1"), claim("PVC_2", "Vol_2"), claim("PVC_3", "Vol_3"),
    claim("PVC_4", "Vol_not_exist"), claim("PVC_Stable_1", "Vol_Stable_1"),
    claim("PVC_Stable_2", "Vol_Stable_2"),
]

MULTI_ZONE = [
    ("node without labels", with_volume("PVC_3"), host({}), None, None),
    ("beta zone label matched", with_volume("PVC_3"), host({BETA_ZONE: "us-west1-a", **USELESS}),
     None, None),
    ("beta zone label doesn't match", with_volume("PVC_1"),
     host({BETA_ZONE: "us-west1-b", **USELESS}), None, CONFLICT),
    ("zone label matched", with_volume("PVC_Stable_2"), host({ZONE: "us-west1-a", **USELESS}),
     None, None),
    ("zone label doesn't match", with_volume("PVC_Stable_1"),
     host({ZONE: "us-west1-b", **USELESS}), None, CONFLICT),
]

BINDING_CLASSES = [
    StorageClass(metadata=ObjectMeta(name="Class_Immediate")),  # no volumeBindingMode
    StorageClass(metadata=ObjectMeta(name="Class_Wait"),
                 volume_binding_mode="WaitForFirstConsumer"),
]
BINDING_PVS = [volume("Vol_1", {BETA_ZONE: "us-west1-a"})]
BINDING_PVCS = [
    claim("PVC_1", "Vol_1"), claim("PVC_NoSC", class_name="Class_0"), claim("PVC_EmptySC"),
    claim("PVC_WaitSC", class_name="Class_Wait"),
    claim("PVC_ImmediateSC", class_name="Class_Immediate"),
]
TEST_NODE = host({BETA_ZONE: "us-west1-a", **USELESS})
NO_NAMES = "PersistentVolumeClaim had no pv name and storageClass name"
MODE_NOT_SET = 'VolumeBindingMode not set for StorageClass "Class_Immediate"'

WITH_BINDING = [
    ("label zone failure domain matched", with_volume("PVC_1"), TEST_NODE, None, None),
    ("unbound volume empty storage class", with_volume("PVC_EmptySC"), TEST_NODE,
     unresolvable(NO_NAMES), unresolvable(NO_NAMES)),
    ("unbound volume no storage class", with_volume("PVC_NoSC"), TEST_NODE,
     unresolvable('storageclasses.storage.k8s.io "Class_0" not found'),
     unresolvable('storageclasses.storage.k8s.io "Class_0" not found')),
    ("unbound volume immediate binding mode", with_volume("PVC_ImmediateSC"), TEST_NODE,
     unresolvable(MODE_NOT_SET), unresolvable(MODE_NOT_SET)),
    ("unbound volume wait binding mode", with_volume("PVC_WaitSC"), TEST_NODE, SKIP, None),
]


def _run(pvs: list[Any], pvcs: list[Any], classes: list[Any], p: Any, n: Any, want_pre: Any,
         want_filter: Any) -> None:
    snap = snapshot([n])
    plugin = VolumeZone(Handle(cache(pvs, pvcs, classes), snap))
    state = CycleState()
    info = PodInfo(p)
    assert pre_filter_status(plugin, info, snap, state) == want_pre
    assert filter_status(plugin, info, snap, n.name, state) == want_filter


@pytest.mark.parametrize(("p", "n", "want_pre", "want_filter"), [r[1:] for r in SINGLE_ZONE],
                         ids=[r[0] for r in SINGLE_ZONE])
def test_single_zone(p, n, want_pre, want_filter) -> None:
    _run(SINGLE_ZONE_PVS, SINGLE_ZONE_PVCS, [], p, n, want_pre, want_filter)


@pytest.mark.parametrize(("p", "n", "want_pre", "want_filter"), [r[1:] for r in MULTI_ZONE],
                         ids=[r[0] for r in MULTI_ZONE])
def test_multi_zone(p, n, want_pre, want_filter) -> None:
    _run(MULTI_ZONE_PVS, MULTI_ZONE_PVCS, [], p, n, want_pre, want_filter)


@pytest.mark.parametrize(("p", "n", "want_pre", "want_filter"), [r[1:] for r in WITH_BINDING],
                         ids=[r[0] for r in WITH_BINDING])
def test_with_binding(p, n, want_pre, want_filter) -> None:
    _run(BINDING_PVS, BINDING_PVCS, BINDING_CLASSES, p, n, want_pre, want_filter)


CLAIM_HINTS = [
    ("error-wrong-new-object", with_volume("PVC_1"), None, "not-a-pvc", QueueingHint.QUEUE),
    ("pvc-was-added-but-pod-refers-no-pvc", pod("pod_1"), None, claim("PVC_1", "Vol_1"),
     QueueingHint.QUEUE_SKIP),
    ("pvc-was-added-and-pod-was-bound-to-different-pvc", with_volume("PVC_2"), None,
     claim("PVC_1", "Vol_1"), QueueingHint.QUEUE_SKIP),
    ("pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns", with_volume("PVC_1"), None,
     claim("PVC_1", "Vol_1", namespace="ns1"), QueueingHint.QUEUE_SKIP),
    ("pvc-was-added-and-pod-was-bound-to-the-pvc", with_volume("PVC_1"), None,
     claim("PVC_1", "Vol_1"), QueueingHint.QUEUE),
    ("pvc-was-updated-and-pod-was-bound-to-the-pvc", with_volume("PVC_1"), claim("PVC_1"),
     claim("PVC_1", "Vol_1"), QueueingHint.QUEUE),
    ("pvc-was-updated-but-pod-refers-no-pvc", pod("pod_1"), claim("PVC_1"),
     claim("PVC_1", "Vol_1"), QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(("p", "old", "new", "want"), [r[1:] for r in CLAIM_HINTS],
                         ids=[r[0] for r in CLAIM_HINTS])
def test_is_schedulable_after_persistent_volume_claim_added(p, old, new, want) -> None:
    assert after_claim_change(PodInfo(p), old, new) == want


CLASS_HINTS = [
    ("error-wrong-new-object", "not-a-storageclass", QueueingHint.QUEUE),
    ("sc-doesn't-have-volume-binding-mode", StorageClass(metadata=ObjectMeta(name="SC_1")),
     QueueingHint.QUEUE_SKIP),
    ("new-sc-is-wait-for-first-consumer-mode",
     StorageClass(metadata=ObjectMeta(name="SC_1"), volume_binding_mode="WaitForFirstConsumer"),
     QueueingHint.QUEUE),
]


@pytest.mark.parametrize(("new", "want"), [r[1:] for r in CLASS_HINTS],
                         ids=[r[0] for r in CLASS_HINTS])
def test_is_schedulable_after_storage_class_added(new, want) -> None:
    assert after_class_added(PodInfo(with_volume("PVC_1")), None, new) == want


VOLUME_HINTS = [
    ("error-wrong-new-object", None, "not-a-pv", QueueingHint.QUEUE),
    ("error-wrong-old-object", "not-a-pv", volume("Vol_1", {}), QueueingHint.QUEUE),
    ("new-pv-was-added", None, volume("Vol_1", {BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE),
    ("pv-was-updated-and-changed-topology", volume("Vol_1", {BETA_ZONE: "us-west1-a"}),
     volume("Vol_1", {BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE),
    ("pv-was-updated-and-added-topology-label", volume("Vol_1", {BETA_ZONE: "us-west1-a"}),
     volume("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}), QueueingHint.QUEUE),
    ("pv-was-updated-but-no-topology-is-changed",
     volume("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
     volume("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}), QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(("old", "new", "want"), [r[1:] for r in VOLUME_HINTS],
                         ids=[r[0] for r in VOLUME_HINTS])
def test_is_schedulable_after_persistent_volume_change(old, new, want) -> None:
    assert after_volume_change(PodInfo(with_volume("PVC_1")), old, new) == want
