"""kube-scheduler 1.36's nodevolumelimits/csi_test.go TestCSILimits, row by row (ids = kube's
names). Every row is ported.

How the rows map: kube builds one node with the existing pods and (per `limitSource`) a
CSINode whose drivers all carry `maxVols`, fake PV/PVC/StorageClass listers
(csi_harness.py) and `vaCount` VolumeAttachments per driver; PreFilter then Filter run for
the new pod. kube's `migrationEnabled` / `ephemeralEnabled` fields no longer change anything
in 1.36 (CSI migration is on for the migrated plugins wherever a CSINode exists; generic
ephemeral volumes are always counted), so they are not carried.

One documented difference: "ephemeral volume not owned" is an Error status in kube (the
scheduling attempt aborts); phalanx rejects the node as unresolvable with the same message
(FilterResult has no per-node Error).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import CycleState
from phalanx.scheduler.plugins.nodevolumelimits import REASON

from .csi_harness import (
    EBS,
    EBS_IN_TREE,
    GCE,
    HOSTPATH_IN_TREE,
    NODE,
    attachments,
    csi_node,
    ephemeral_claim,
    fake_pvcs,
    fake_pvs,
    node_with_pods,
    plugin,
    pvc_pod,
    volume_pod,
)
from .volume_harness import SKIP, filter_status, pre_filter_status, unresolvable, unschedulable

EXCEEDED = unschedulable(REASON)

RUNNING = pvc_pod("running", "csi-ebs.csi.aws.com-3")
PENDING_VOLUME = pvc_pod("pending-volume", "csi-4")
UNBOUND_PVC_2 = pvc_pod("unbound-pvc-2", "csi-4")  # another pod of the same unbound claim
MISSING_PV = pvc_pod("missing-pv", "csi-6")
NO_SC_PVC = pvc_pod("no-sc-pvc", "csi-5")
GCE_TWO_VOL = pvc_pod("gce-two-vol", "csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
IN_TREE_ONE_VOL = pvc_pod("in-tree-one-vol", "csi-kubernetes.io/aws-ebs-0")
IN_TREE_TWO_VOL = pvc_pod("in-tree-two-vol", "csi-kubernetes.io/aws-ebs-1",
                          "csi-kubernetes.io/aws-ebs-2")
CSI_EBS_ONE_VOL = pvc_pod("csi-ebs-one-vol", "csi-ebs.csi.aws.com-0")
CSI_EBS_TWO_VOL = pvc_pod("csi-ebs-two-vol", "csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
IN_TREE_NON_MIGRATABLE = pvc_pod("in-tree-non-migratable", "csi-kubernetes.io/hostpath-0")

EPHEMERAL = volume_pod("abc", {"name": "xyz", "ephemeral": {}}, namespace="test", uid="12345")
EPHEMERAL_CLAIM = ephemeral_claim(EPHEMERAL, "xyz")
CONFLICTING_CLAIM = ephemeral_claim(EPHEMERAL, "xyz", owned=False)
EPHEMERAL_TWO = volume_pod("abc", {"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}},
                           namespace="test", uid="12345II")
EPHEMERAL_CLAIM_X = ephemeral_claim(EPHEMERAL_TWO, "x")
EPHEMERAL_CLAIM_Y = ephemeral_claim(EPHEMERAL_TWO, "y")

CONFIGMAP, SECRET = {"name": "cm", "configMap": {}}, {"name": "secret", "secret": {}}
IN_TREE_INLINE = volume_pod("in-tree-inline",
                            {"name": "", "awsElasticBlockStore": {"volumeID": "aws-inline1"}})
IN_TREE_INLINE_SAME_ID = volume_pod("in-tree-inline-same-id", {
    "name": "", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}})
ONLY_CONFIGMAP_AND_SECRET = volume_pod("only-configmap-and-secret", CONFIGMAP, SECRET)
PVC_WITH_CONFIGMAP_AND_SECRET = volume_pod(
    "pvc-with-configmap-and-secret", CONFIGMAP, SECRET,
    {"name": "", "persistentVolumeClaim": {"claimName": "csi-ebs.csi.aws.com-0"}})
EPHEMERAL_WITH_CONFIGMAP_AND_SECRET = volume_pod(
    "abc", CONFIGMAP, SECRET, {"name": "xyz", "ephemeral": {}}, namespace="test")
INLINE_MIGRATABLE_WITH_CONFIGMAP_AND_SECRET = volume_pod(
    "inline-with-configmap-and-secret", CONFIGMAP, SECRET,
    {"name": "", "awsElasticBlockStore": {"volumeID": "aws-inline1"}})

MIGRATED = [EBS_IN_TREE, EBS]
ABC_MISSING = unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaims "abc-xyz" '
                           "not found")


def row(test: str, new: Any, existing: list[Any], drivers: list[str], *, max_vols: int = 0,
        limit_source: str = "", va_count: int = 0, extra: list[Any] | None = None,
        want: Any = None, want_pre: Any = None) -> Any:
    return pytest.param(new, existing, drivers, max_vols, limit_source, va_count, extra or [],
                        want, want_pre, id=test)


ROWS = [
    row("should count VolumeAttachments towards volume limit when no pods exist",
        CSI_EBS_ONE_VOL, [], [EBS], max_vols=2, va_count=2, limit_source="csinode",
        want=EXCEEDED),
    row("should schedule pod when VolumeAttachments count does not exceed limit",
        CSI_EBS_ONE_VOL, [], [EBS], max_vols=2, va_count=1, limit_source="csinode"),
    row("fits when node volume limit >= new pods CSI volume", CSI_EBS_ONE_VOL,
        [RUNNING, CSI_EBS_TWO_VOL], [EBS], max_vols=4, limit_source="csinode"),
    row("doesn't when node volume limit <= pods CSI volume", CSI_EBS_ONE_VOL,
        [RUNNING, CSI_EBS_TWO_VOL], [EBS], max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("should when driver does not support volume limits", CSI_EBS_ONE_VOL,
        [RUNNING, CSI_EBS_TWO_VOL], [EBS], max_vols=2, limit_source="csinode-with-no-limit"),
    row("count pending PVCs towards volume limit <= pods CSI volume", CSI_EBS_ONE_VOL,
        [PENDING_VOLUME, CSI_EBS_TWO_VOL], [EBS], max_vols=2, limit_source="csinode",
        want=EXCEEDED),
    row("count multiple pending pvcs towards volume limit >= pods CSI volume", CSI_EBS_ONE_VOL,
        [PENDING_VOLUME, UNBOUND_PVC_2, CSI_EBS_TWO_VOL], [EBS], max_vols=4,
        limit_source="csinode"),
    row("should count PVCs with invalid PV name but valid SC", CSI_EBS_ONE_VOL,
        [MISSING_PV, CSI_EBS_TWO_VOL], [EBS], max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("don't count pvcs with missing SC towards volume limit", CSI_EBS_ONE_VOL,
        [RUNNING, NO_SC_PVC], [EBS], max_vols=2, limit_source="csinode"),
    row("count pvcs with the same type towards volume limit", CSI_EBS_ONE_VOL,
        [GCE_TWO_VOL, CSI_EBS_TWO_VOL], [EBS, GCE], max_vols=2, limit_source="csinode",
        want=EXCEEDED),
    row("don't count pvcs with different type towards volume limit", GCE_TWO_VOL,
        [CSI_EBS_TWO_VOL, RUNNING], [EBS, GCE], max_vols=2, limit_source="csinode"),
    row("should count in-tree volumes if migration is enabled", IN_TREE_ONE_VOL,
        [IN_TREE_TWO_VOL], MIGRATED, max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("nil csi node", IN_TREE_INLINE, [IN_TREE_TWO_VOL], MIGRATED),
    row("should count unbound in-tree volumes if migration is enabled", PENDING_VOLUME,
        [IN_TREE_TWO_VOL], MIGRATED, max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("should not limit pod if volume used does not report limits", IN_TREE_ONE_VOL,
        [IN_TREE_TWO_VOL], MIGRATED, max_vols=2, limit_source="csinode-with-no-limit"),
    row("should not count non-migratable in-tree volumes", IN_TREE_NON_MIGRATABLE,
        [CSI_EBS_TWO_VOL], [HOSTPATH_IN_TREE, EBS], max_vols=2, limit_source="csinode"),
    row("should count in-tree inline volumes if migration is enabled", IN_TREE_INLINE,
        [IN_TREE_TWO_VOL], MIGRATED, max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("should count in-tree and csi volumes if migration is enabled (when scheduling in-tree "
        "volumes)", IN_TREE_ONE_VOL, [CSI_EBS_TWO_VOL], MIGRATED, max_vols=2,
        limit_source="csinode", want=EXCEEDED),
    row("should count in-tree, inline and csi volumes if migration is enabled (when scheduling "
        "in-tree volumes)", IN_TREE_INLINE, [CSI_EBS_TWO_VOL, IN_TREE_ONE_VOL], MIGRATED,
        max_vols=3, limit_source="csinode", want=EXCEEDED),
    row("should not count in-tree, inline and csi volumes if migration is enabled (when "
        "scheduling in-tree volumes)", IN_TREE_INLINE_SAME_ID, [CSI_EBS_TWO_VOL, IN_TREE_ONE_VOL],
        MIGRATED, max_vols=3, limit_source="csinode"),
    row("should count in-tree and csi volumes if migration is enabled (when scheduling csi "
        "volumes)", CSI_EBS_ONE_VOL, [IN_TREE_TWO_VOL], MIGRATED, max_vols=2,
        limit_source="csinode", want=EXCEEDED),
    row("ephemeral volume missing", EPHEMERAL, [], [EBS], limit_source="csinode-with-no-limit",
        want=ABC_MISSING),
    # kube: an Error status (see the module docstring).
    row("ephemeral volume not owned", EPHEMERAL, [], [EBS], extra=[CONFLICTING_CLAIM],
        limit_source="csinode-with-no-limit",
        want=unresolvable("PVC test/abc-xyz was not created for pod test/abc (pod is not "
                          "owner)")),
    row("ephemeral volume unbound", EPHEMERAL, [], [EBS], extra=[EPHEMERAL_CLAIM],
        limit_source="csinode-with-no-limit"),
    row("ephemeral doesn't when node volume limit <= pods CSI volume", EPHEMERAL,
        [RUNNING, CSI_EBS_TWO_VOL], [EBS], extra=[EPHEMERAL_CLAIM], max_vols=2,
        limit_source="csinode", want=EXCEEDED),
    row("ephemeral doesn't when node volume limit <= pods ephemeral CSI volume", CSI_EBS_ONE_VOL,
        [RUNNING, EPHEMERAL_TWO], [EBS], extra=[EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y],
        max_vols=2, limit_source="csinode", want=EXCEEDED),
    row("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
        "volume, ephemeral disabled", CSI_EBS_ONE_VOL, [RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL],
        [EBS], extra=[EPHEMERAL_CLAIM], max_vols=3, limit_source="csinode", want=EXCEEDED),
    row("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
        "volume", CSI_EBS_ONE_VOL, [RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL], [EBS],
        extra=[EPHEMERAL_CLAIM], max_vols=3, limit_source="csinode", want=EXCEEDED),
    row("persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        CSI_EBS_ONE_VOL, [RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL], [EBS], extra=[EPHEMERAL_CLAIM],
        max_vols=5, limit_source="csinode"),
    row("skip Filter when the pod only uses secrets and configmaps", ONLY_CONFIGMAP_AND_SECRET,
        [], [EBS], max_vols=2, limit_source="csinode", want_pre=SKIP),
    row("don't skip Filter when the pod has pvcs", PVC_WITH_CONFIGMAP_AND_SECRET, [], [EBS],
        max_vols=2, limit_source="csinode"),
    row("don't skip Filter when the pod has ephemeral volumes",
        EPHEMERAL_WITH_CONFIGMAP_AND_SECRET, [], [EBS], limit_source="csinode-with-no-limit",
        want=ABC_MISSING),
    row("don't skip Filter when the pod has inline migratable volumes",
        INLINE_MIGRATABLE_WITH_CONFIGMAP_AND_SECRET, [IN_TREE_TWO_VOL], MIGRATED, max_vols=2,
        limit_source="csinode", want=EXCEEDED),
]


@pytest.mark.parametrize(("new", "existing", "drivers", "max_vols", "limit_source", "va_count",
                          "extra", "want", "want_pre"), ROWS)
def test_csi_limits(new: Any, existing: list[Any], drivers: list[str], max_vols: int,
                    limit_source: str, va_count: int, extra: list[Any], want: Any,
                    want_pre: Any) -> None:
    snap = node_with_pods(existing)
    pl = plugin(pvs=fake_pvs("csi", drivers), pvcs=[*fake_pvcs("csi", drivers), *extra],
                provisioner=drivers[0], csi_nodes=[csi_node(limit_source, max_vols, drivers)],
                vas=attachments(va_count, drivers))
    state = CycleState()
    assert pre_filter_status(pl, new, snap, state) == want_pre
    if want_pre is None:
        assert filter_status(pl, new, snap, NODE, state) == want
