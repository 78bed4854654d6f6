"""VolumeRestrictions: disks one node mounts read-write once, and ReadWriteOncePod claims.

kube-scheduler's volumerestrictions plugin:
- the same GCE PD (unless every pod mounts it read-only), AWS EBS volume, RBD image (a
  shared monitor, same pool and image, unless all read-only) or iSCSI IQN (unless all
  read-only) may not be mounted by two pods on one node: "node(s) had no available disk";
- a claim with the ReadWriteOncePod access mode already used by a pod on any node blocks
  every node (Unschedulable: preemption of that pod may help).
Pods with neither skip the plugin at PreFilter. Claims in use are counted by the snapshot
(Snapshot.pvc_users), bound and assumed pods alike, and read at Filter, so preemption's
what-ifs (victims removed) see the claim freed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Pod
from phalanx.api.storage import PersistentVolumeClaim
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import PVC_EVENT, VolumeCache, pod_claims

# One shared Skip for the fast path (the runtime only reads a Skip's code).
SKIP = Status.skip()
NAME = "VolumeRestrictions"
REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                        "access mode already in-use by another pod")
_STATE = "PreFilterVolumeRestrictions"

Disk = tuple[str, dict[str, Any]]


def disks_conflict(disk: Disk, existing: Disk) -> bool:
    """isVolumeConflict for one pair of volume sources."""
    kind, src = disk
    ekind, esrc = existing
    if kind != ekind:
        return False
    both_ro = bool(src.get("readOnly")) and bool(esrc.get("readOnly"))
    if kind == "gcePersistentDisk":
        return src.get("pdName") == esrc.get("pdName") and not both_ro
    if kind == "awsElasticBlockStore":
        return src.get("volumeID") == esrc.get("volumeID")
    if kind == "iscsi":
        return src.get("iqn") == esrc.get("iqn") and not both_ro
    if kind == "rbd":
        overlap = set(src.get("monitors") or ()) & set(esrc.get("monitors") or ())
        return bool(overlap) and src.get("pool", "rbd") == esrc.get("pool", "rbd") and \
            src.get("image") == esrc.get("image") and not both_ro
    return False


@register_plugin
class VolumeRestrictions(Plugin):
    NAME = NAME

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args)
        self.cache = VolumeCache.for_handle(handle)

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        claims = pod.claims
        if not claims:
            return None, SKIP
        rwop: list[str] = []
        for name in claims.pvc_names:
            pvc = self.cache.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            if "ReadWriteOncePod" in (pvc.spec.access_modes or ()):
                key = f"{pod.namespace}/{name}"
                if key not in rwop:
                    rwop.append(key)
        if not claims.disks and not _in_use(snap, rwop):
            return None, SKIP
        state.write(_STATE, rwop)
        return None, Status()

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        disk_bad = np.zeros(idx.size, dtype=bool)
        disks = pod.claims.disks
        if disks:
            rows = _rows_with_conflicting_disk(snap, disks, pod.key)
            if rows:
                disk_bad = np.isin(idx, np.asarray(rows, dtype=np.int64))
        rwop: list[str] = state.read(_STATE) or []
        rwop_bad = np.full(idx.size, _in_use(snap, rwop)) & ~disk_bad
        ok = ~(disk_bad | rwop_bad)
        return FilterResult(ok, [Rejection(REASON_DISK_CONFLICT, disk_bad),
                                 Rejection(REASON_RWOP_CONFLICT, rwop_bad)])

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
                                 after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(PVC_EVENT, ActionType.ADD), after_claim_added),
        ]


def _in_use(snap: Snapshot, keys: list[str]) -> bool:
    """A pod already counted on some node uses one of these claims (IsPVCUsedByPods)."""
    return any(snap.pvc_users.get(k, 0) > 0 for k in keys)


def _rows_with_conflicting_disk(snap: Snapshot, disks: tuple[Disk, ...], own_key: str) -> list[int]:
    """Rows holding a pod whose exclusive disks clash with `disks` (only pods with such
    disks are looked at; they are rare, legacy in-tree volumes)."""
    out: list[int] = []
    for row in snap.valid_rows():
        for key, other in snap.pods_on(int(row)).items():
            if key == own_key:
                continue
            theirs = other.claims.disks
            if theirs and any(disks_conflict(d, e) for d in disks for e in theirs):
                out.append(int(row))
                break
    return out


def after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPodDeleted: the deleted pod (same namespace) held a clashing disk
    or one of the same claims."""
    deleted = old
    if not isinstance(deleted, Pod):  # kube: an error, and Queue
        return QueueingHint.QUEUE
    if (deleted.metadata.namespace or "") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    theirs = pod_claims(deleted)
    mine = pod.claims
    if any(disks_conflict(d, e) for d in mine.disks for e in theirs.disks):
        return QueueingHint.QUEUE
    if set(mine.pvc_names) & set(theirs.pvc_names):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_claim_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A claim of one of the pod's persistentVolumeClaim volumes appeared."""
    if not isinstance(new, PersistentVolumeClaim):  # kube: an error, and Queue
        return QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if new.name in pod.claims.pvc_names else QueueingHint.QUEUE_SKIP
