"""kube-scheduler 1.36's volumerestrictions/volume_restrictions_test.go, row by row
(ids = kube's names).

kube's pods there are unnamed; the node's existing pod is named "existing" here, as the
snapshot keys pods by name (the pod under test never counts against itself).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.volumerestrictions import (
    REASON_DISK_CONFLICT,
    REASON_RWOP_CONFLICT,
    VolumeRestrictions,
    after_claim_added,
    after_pod_deleted,
)

from .volume_harness import (
    SKIP,
    Handle,
    cache,
    filter_status,
    node,
    pod,
    pre_filter_status,
    pvc,
    pvc_volume,
    snapshot,
    unresolvable,
    unschedulable,
)

DISK = unschedulable(REASON_DISK_CONFLICT)
GCE = ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}})
AWS = ({"awsElasticBlockStore": {"volumeID": "foo"}},
       {"awsElasticBlockStore": {"volumeID": "bar"}})
RBD = ({"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
       {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}})
ISCSI = ({"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01",
                    "fsType": "ext4", "lun": 0}},
         {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01",
                    "fsType": "ext4", "lun": 0}})


def with_volume(source: dict[str, Any], name: str = "p") -> Any:
    return pod(name, namespace="", volumes=[{"name": "", **source}])


def disk_rows(volumes: tuple[dict[str, Any], dict[str, Any]], extra: bool = False) -> list[Any]:
    same, other = volumes
    rows = [
        ("nothing", pod("p", namespace=""), None, SKIP, None),
        ("one state", pod("p", namespace=""), same, SKIP, None),
        ("same state", with_volume(same), same, None, DISK),
        ("different state", with_volume(other), same, None, None),
    ]
    if extra:
        rows.append(("pod with a volume that doesn't have restrictions",
                     pod("p", namespace="", volumes=[{"name": "volume with no restriction"}]),
                     None, SKIP, None))
    return rows


def _disk_case(p: Any, existing: dict[str, Any] | None, want_pre: Any, want: Any) -> None:
    placed = [(with_volume(existing, "existing"), "node")] if existing else []
    snap = snapshot([node("node")], placed)
    plugin = VolumeRestrictions(Handle(cache(), snap))
    state = CycleState()
    assert pre_filter_status(plugin, p, snap, state) == want_pre
    if want_pre is None:  # "If PreFilter fails, then Filter will not run."
        assert filter_status(plugin, p, snap, "node", state) == want


def _params(rows: list[Any]) -> Any:
    return pytest.mark.parametrize(("p", "existing", "want_pre", "want"), [r[1:] for r in rows],
                                   ids=[r[0] for r in rows])


@_params(disk_rows(GCE, extra=True))
def test_gce_disk_conflicts(p, existing, want_pre, want) -> None:
    _disk_case(p, existing, want_pre, want)


@_params(disk_rows(AWS))
def test_aws_disk_conflicts(p, existing, want_pre, want) -> None:
    _disk_case(p, existing, want_pre, want)


@_params(disk_rows(RBD))
def test_rbd_disk_conflicts(p, existing, want_pre, want) -> None:
    _disk_case(p, existing, want_pre, want)


@_params(disk_rows(ISCSI))
def test_iscsi_disk_conflicts(p, existing, want_pre, want) -> None:
    _disk_case(p, existing, want_pre, want)


def claims_pod(name: str, *claims: str, namespace: str = "default") -> Any:
    return pod(name, namespace=namespace, node_name="node-1",
               volumes=[pvc_volume(c) for c in claims])


POD_WITH_ONE_PVC = claims_pod("pod-with-one-pvc", "claim-with-rwop-1")
POD_WITH_TWO_PVCS = claims_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
POD_WITH_ONE_CONFLICT = claims_pod("pod-with-one-conflict", "claim-with-rwop-1")
POD_WITH_TWO_CONFLICTS = claims_pod("pod-with-two-conflicts", "claim-with-rwop-1",
                                    "claim-with-rwop-2")
POD_WITH_RWX = claims_pod("pod-with-rwx", "claim-with-rwx")
RWOP_1 = pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", access_modes=["ReadWriteMany"])

ACCESS_MODE_ROWS = [
    ("nothing", pod("p", namespace=""), [], [], SKIP, None),
    ("failed to get PVC", POD_WITH_ONE_PVC, [], [],
     unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'), None),
    ("no access mode conflict", POD_WITH_ONE_PVC, [POD_WITH_RWX], [RWOP_1, RWX], SKIP, None),
    ("access mode conflict, unschedulable", POD_WITH_ONE_CONFLICT,
     [POD_WITH_ONE_PVC, POD_WITH_RWX], [RWOP_1, RWX], None,
     unschedulable(REASON_RWOP_CONFLICT)),
    ("two conflicts, unschedulable", POD_WITH_TWO_CONFLICTS, [POD_WITH_TWO_PVCS, POD_WITH_RWX],
     [RWOP_1, RWOP_2, RWX], None, unschedulable(REASON_RWOP_CONFLICT)),
]


@pytest.mark.parametrize(("p", "existing", "claims", "want_pre", "want"),
                         [r[1:] for r in ACCESS_MODE_ROWS], ids=[r[0] for r in ACCESS_MODE_ROWS])
def test_access_mode_conflicts(p, existing, claims, want_pre, want) -> None:
    snap = snapshot([node("node-1")], [(e, "node-1") for e in existing])
    plugin = VolumeRestrictions(Handle(cache(pvcs=claims), snap))
    state = CycleState()
    assert pre_filter_status(plugin, p, snap, state) == want_pre
    if want_pre is None:
        assert filter_status(plugin, p, snap, "node-1", state) == want


def _delete_rows() -> list[Any]:
    rows = []
    for kind, (same, other) in (("gcedisk", GCE), ("awsdisk", AWS), ("rbddisk", RBD),
                                ("iscsidisk", ISCSI)):
        rows.append((f"queue-new-object-{kind}-conflict", with_volume(same), with_volume(same, "o"),
                     QueueingHint.QUEUE))
        rows.append((f"skip-new-object-{kind}-no-conflict", with_volume(same),
                     with_volume(other, "o"), QueueingHint.QUEUE_SKIP))
    rows.append(("queue-has-same-claim", claims_pod("pod1", "claim-rwop", namespace=""),
                 claims_pod("pod2", "claim-rwop", namespace=""), QueueingHint.QUEUE))
    rows.append(("skip-no-same-claim", claims_pod("pod1", "claim-1-rwop", namespace=""),
                 claims_pod("pod2", "claim-2-rwop", namespace=""), QueueingHint.QUEUE_SKIP))
    return rows


DELETE_ROWS = _delete_rows()


@pytest.mark.parametrize(("p", "deleted", "want"), [r[1:] for r in DELETE_ROWS],
                         ids=[r[0] for r in DELETE_ROWS])
def test_is_schedulable_after_pod_deleted(p, deleted, want) -> None:
    assert after_pod_deleted(PodInfo(p), deleted, None) == want


RWX_1 = pvc("claim-with-rwx-1", access_modes=["ReadWriteMany"])
RWX_2 = pvc("claim-with-rwx-2", access_modes=["ReadWriteMany"])
ONE_RWX = claims_pod("pod-with-one-pvc", "claim-with-rwx-1")
TWO_RWX = claims_pod("pod-with-two-pvcs", "claim-with-rwx-1", "claim-with-rwx-2")
OTHER_NS = claims_pod("pod-with-one-pvc", "claim-with-rwx-1", namespace="kube-system")
CLAIM_ROWS = [
    ("queue-new-object-pvc-belong-pod", TWO_RWX, RWX_1, QueueingHint.QUEUE),
    ("skip-new-object-unused", ONE_RWX, RWX_2, QueueingHint.QUEUE_SKIP),
    ("skip-nil-old-object", ONE_RWX, RWX_2, QueueingHint.QUEUE_SKIP),
    ("skip-new-object-not-belong-pod", ONE_RWX, RWX_2, QueueingHint.QUEUE_SKIP),
    ("skip-new-object-namespace-not-equal-pod", OTHER_NS, RWX_1, QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize(("p", "new", "want"), [r[1:] for r in CLAIM_ROWS],
                         ids=[r[0] for r in CLAIM_ROWS])
def test_is_schedulable_after_persistent_volume_claim_change(p, new, want) -> None:
    assert after_claim_added(PodInfo(p), None, new) == want
