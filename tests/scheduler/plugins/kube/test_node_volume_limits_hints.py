"""kube-scheduler 1.36's nodevolumelimits/csi_test.go: the queueing-hint tables
(TestCSILimitsQHint, TestCSILimitsAddedPVCQHint, TestCSILimitsDeletedVolumeAttachmentQHint,
TestCSILimitsAfterCSINodeUpdatedQHint) and TestVolumeLimitScalingGate, row by row (ids =
kube's names). Every row is ported.

The gate rows: kube's VolumeLimitScaling feature gate is the plugin arg
`enableVolumeLimitScaling` here.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.storage_csi import (
    CSINode,
    CSINodeDriver,
    CSINodeSpec,
    VolumeAttachment,
    VolumeAttachmentSource,
    VolumeAttachmentSpec,
    VolumeNodeResources,
)
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.nodevolumelimits import (
    after_attachment_deleted,
    after_claim_added,
    after_csi_node_updated,
    after_pod_deleted,
)

from .csi_harness import (
    EBS,
    NODE,
    csi_driver,
    csi_node,
    fake_pvcs,
    fake_pvs,
    node_with_pods,
    plugin,
    pvc_pod,
    volume_pod,
)
from .volume_harness import filter_status, pre_filter_status, pvc, unschedulable

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

# --- TestCSILimitsQHint ---------------------------------------------------------------------

POD_EBS = pvc_pod("pod-ebs", "csi-ebs.csi.aws.com-2")


def scheduled(p: Any, on: bool = True) -> Any:
    p.spec.node_name = NODE if on else None
    return p


@pytest.mark.parametrize(("deleted", "want"), [
    pytest.param(scheduled(pvc_pod("d", "placeholder")), QUEUE,
                 id="return a Queue when a deleted pod has a PVC"),
    pytest.param(scheduled(volume_pod("d", {"name": "", "awsElasticBlockStore": {}})), QUEUE,
                 id="return a Queue when a deleted pod has a inline migratable volume"),
    pytest.param(scheduled(volume_pod("d")), SKIP,
                 id="return a QueueSkip when a deleted pod doesn't have any volume"),
    pytest.param(scheduled(pvc_pod("d", "csi-ebs.csi.aws.com-0"), on=False), SKIP,
                 id="return a QueueSkip when a deleted pod is not scheduled."),
])
def test_csi_limits_qhint(deleted: Any, want: QueueingHint) -> None:
    assert after_pod_deleted(PodInfo(POD_EBS), deleted, None) == want


# --- TestCSILimitsAddedPVCQHint -------------------------------------------------------------


def claim(name: str = "", namespace: str = "") -> Any:
    return pvc(name, namespace=namespace)


@pytest.mark.parametrize(("p", "added", "want"), [
    pytest.param(volume_pod("p", namespace="ns1"), claim(namespace="ns2"), SKIP,
                 id="a pod isn't in the same namespace as an added PVC"),
    pytest.param(pvc_pod("p", "pvc1", namespace="ns1"), claim("pvc1", "ns1"), QUEUE,
                 id="a pod is in the same namespace as an added PVC"),
    pytest.param(volume_pod("pod1", {"name": "ephemeral", "ephemeral": {}}, namespace="ns1"),
                 claim("pod1-ephemeral", "ns1"), QUEUE,
                 id="a pod has an ephemeral volume related to an added PVC"),
    pytest.param(pvc_pod("p", "pvc1", namespace="ns1"), claim("pvc2", "ns1"), SKIP,
                 id="a pod doesn't have the same PVC as an added PVC"),
    pytest.param(volume_pod("p", namespace="ns1"), claim("pvc2", "ns1"), SKIP,
                 id="a pod doesn't have any PVC attached"),
])
def test_csi_limits_added_pvc_qhint(p: Any, added: Any, want: QueueingHint) -> None:
    assert after_claim_added(PodInfo(p), None, added) == want


# --- TestCSILimitsDeletedVolumeAttachmentQHint ----------------------------------------------


def detached(attacher: str, *, pv: str | None = None) -> VolumeAttachment:
    source = VolumeAttachmentSource(
        persistent_volume_name=pv,
        inline_volume_spec=None if pv else {"csi": {"driver": attacher}})
    return VolumeAttachment(metadata=ObjectMeta(name="volumeattachment1"),
                            spec=VolumeAttachmentSpec(node_name="fake-node", attacher=attacher,
                                                      source=source))


EBS_INLINE = {"name": "", "awsElasticBlockStore": {"volumeID": "test"}}
GCE_INLINE = {"name": "", "gcePersistentDisk": {"pdName": "test"}}
PVC1 = {"name": "", "persistentVolumeClaim": {"claimName": "pvc1"}}


@pytest.mark.parametrize(("p", "va", "want"), [
    pytest.param(volume_pod("p", PVC1, namespace="ns1"),
                 detached("test.storage.gke.io", pv="pv1"), QUEUE,
                 id="a pod has PVC when VolumeAttachment is deleting"),
    pytest.param(volume_pod("p", EBS_INLINE, namespace="ns1"), detached(EBS), QUEUE,
                 id="a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment "
                    "(AWSEBSDriver) is deleting (match)"),
    pytest.param(volume_pod("p", GCE_INLINE, namespace="ns1"), detached(EBS), SKIP,
                 id="a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment "
                    "(AWSEBSDriver) is deleting (no match)"),
    pytest.param(volume_pod("p", EBS_INLINE, PVC1, namespace="ns1"), detached(EBS), QUEUE,
                 id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when "
                    "VolumeAttachment (AWSEBSDriver) is deleting"),
    pytest.param(volume_pod("p", EBS_INLINE, PVC1, namespace="ns1"),
                 detached("test.storage.gke.io", pv="pv1"), QUEUE,
                 id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when "
                    "VolumeAttachment (AWSEBSDriver)  is deleting"),
    pytest.param(volume_pod("p", namespace="ns1"), detached("test.storage.gke.io", pv="pv1"),
                 SKIP, id="a pod has no PVC when VolumeAttachment is deleting"),
])
def test_csi_limits_deleted_volume_attachment_qhint(p: Any, va: Any, want: QueueingHint) -> None:
    assert after_attachment_deleted(PodInfo(p), va, None) == want


# --- TestCSILimitsAfterCSINodeUpdatedQHint --------------------------------------------------


def limits(count: int) -> CSINode:
    return CSINode(metadata=ObjectMeta(name="test-node"), spec=CSINodeSpec(drivers=[
        CSINodeDriver(name=EBS, node_id="test-node",
                      allocatable=VolumeNodeResources(count=count))]))


@pytest.mark.parametrize(("old", "new", "want"), [
    pytest.param(limits(1), limits(2), QUEUE, id="limit raised, queue"),
    pytest.param(limits(2), limits(1), SKIP, id="limit decreased, skip queueing"),
    pytest.param(limits(1), limits(1), SKIP, id="limit unchanged, skip queueing"),
])
def test_csi_limits_after_csi_node_updated_qhint(old: CSINode, new: CSINode,
                                                 want: QueueingHint) -> None:
    p = PodInfo(pvc_pod("test-pod", "csi-ebs.csi.aws.com-0", namespace="ns1"))
    assert after_csi_node_updated(p, old, new) == want


# --- TestVolumeLimitScalingGate -------------------------------------------------------------


@pytest.mark.parametrize(("gate", "limit_source", "limit", "driver_present", "prevent", "want"), [
    pytest.param(True, "no-csi-driver", 0, True, False, None,
                 id="gate enabled - allow scheduling when CSIDriver exists but "
                    "PreventPodSchedulingIfMissing is not set"),
    pytest.param(True, "no-csi-driver", 0, True, True,
                 unschedulable(f"{EBS} CSI driver is not installed on the node"),
                 id="gate enabled - fail when driver not installed and "
                    "PreventPodSchedulingIfMissing is true"),
    pytest.param(False, "no-csi-driver", 0, True, True, None,
                 id="gate disabled - skip driver presence check (regardless of CSIDriver "
                    "presence)"),
    pytest.param(True, "csinode", 2, True, True, None,
                 id="gate enabled - driver installed within limit"),
    pytest.param(True, "no-csi-driver", 0, False, False, None,
                 id="gate enabled - allow scheduling when CSIDriver object missing"),
])
def test_volume_limit_scaling_gate(gate: bool, limit_source: str, limit: int,
                                   driver_present: bool, prevent: bool, want: Any) -> None:
    new = pvc_pod("new", "csi-ebs.csi.aws.com-0")
    pl = plugin(pvs=fake_pvs("csi", [EBS]), pvcs=fake_pvcs("csi", [EBS]), provisioner=EBS,
                csi_nodes=[csi_node(limit_source, limit, [EBS])],
                drivers=[csi_driver(EBS, prevent or None)] if driver_present else [],
                scaling=gate)
    snap, state = node_with_pods([]), CycleState()
    pre = pre_filter_status(pl, new, snap, state)
    assert pre is None or pre[0] != Code.SKIP  # "Ensure PreFilter doesn't skip"
    assert filter_status(pl, new, snap, NODE, state) == want
