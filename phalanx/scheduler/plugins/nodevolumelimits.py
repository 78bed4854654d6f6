"""NodeVolumeLimits: a node attaches at most its CSINode's count of volumes per CSI driver.

kube-scheduler 1.36's nodevolumelimits (CSILimits) plugin. The pod's attachable volumes
(attachcount.py: claims on CSI volumes, generic ephemeral volumes, in-tree disks through
CSI migration) are counted per driver, together with those the node already holds (the
pods on it, bound and assumed, one count per unique volume; and its VolumeAttachments),
against `CSINode.spec.drivers[].allocatable.count`: "node(s) exceed max volume count". A node
without a CSINode, or whose CSINode publishes no count for a driver, is not limited.

Pods without such volumes skip the plugin at PreFilter. Filter is vectorised over the
per-driver limit and count columns of attachindex.py, which recounts a node only when its
row, its CSINode or attachments, or a storage object its count looked at changes.

Differences from kube, deliberate: where kube's Filter returns an Error (an ephemeral claim
owned by another pod, an in-tree volume its translator refuses), the attempt is not aborted;
the nodes concerned are rejected, unresolvable, with the same message. kube's alpha
VolumeLimitScaling gate (a CSIDriver's `preventPodSchedulingIfMissing`) is the plugin arg
`enableVolumeLimitScaling` (off, as the gate in 1.36). A node added requeues the pods this
plugin rejected (kube waits for the new node's CSINode, which simulated nodes never publish).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.base import KubeModel
from phalanx.api.core import Pod
from phalanx.api.storage import PersistentVolumeClaim
from phalanx.api.storage_csi import CSINode, VolumeAttachment
from phalanx.scheduler.attachcount import Failure
from phalanx.scheduler.attachindex import AttachIndex
from phalanx.scheduler.csi import CSI_NODE_EVENT, VOLUME_ATTACHMENT_EVENT, CSICache
from phalanx.scheduler.csitranslation import TranslationError, inline_handle, pod_attachable
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
from phalanx.scheduler.volumes import PVC_EVENT

SKIP = Status.skip()
NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
_NEW = "NodeVolumeLimits/new"  # CycleState: the pod's own volumes, per CSINode presence


class NodeVolumeLimitsArgs(KubeModel):
    # kube's VolumeLimitScaling feature gate (alpha in 1.36, off): a CSIDriver with
    # preventPodSchedulingIfMissing keeps its pods off nodes whose CSINode lacks it.
    enable_volume_limit_scaling: bool = False


@register_plugin
class NodeVolumeLimits(Plugin):
    NAME = NAME
    Args = NodeVolumeLimitsArgs

    def __init__(self, handle: Any, args: NodeVolumeLimitsArgs | None = None) -> None:
        super().__init__(handle, args or NodeVolumeLimitsArgs())
        self.index = AttachIndex.for_handle(handle)
        self.counter = self.index.counter
        self.csi = self.index.csi

    # --- PreFilter / Filter -------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        return None, (Status() if pod.attachable else SKIP)

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        n = idx.size
        if not pod.attachable or n == 0:  # (what-ifs call Filter without PreFilter)
            return FilterResult.all_pass(n)
        index = self.index
        index.sync_limits(snap)  # the counts are brought up to date only if a limit applies
        has = index.has_node[idx]
        out = _Verdict(n)
        for with_node, rows in ((False, ~has), (True, has)):
            if not rows.any():
                continue
            try:
                new = self._new_volumes(state, pod, with_node)
            except Failure as f:
                out.reject(rows, f.message, unresolvable=True)
                continue
            if not new:
                continue
            if self.args.enable_volume_limit_scaling:
                self._reject_missing_drivers(new, snap, idx, rows & out.ok, out)
            if with_node:
                limited = rows & index.any_limit[idx] & out.ok
                if limited.any():
                    index.sync(snap)
                    self._check_limits(new, idx, limited, out)
        return out.result()

    def _new_volumes(self, state: CycleState, pod: PodInfo, with_node: bool) -> dict[str, str]:
        memo: dict[tuple[str, bool], Any] | None = state.read(_NEW)
        if memo is None:
            memo = {}
            state.write(_NEW, memo)
        key = (pod.key, with_node)
        if key not in memo:
            try:
                memo[key] = self.counter.pod_volumes(pod, with_node, new_pod=True)
            except Failure as f:
                memo[key] = f
        got = memo[key]
        if isinstance(got, Failure):
            raise got
        return got  # type: ignore[no-any-return]

    def _check_limits(self, new: dict[str, str], idx: np.ndarray, limited: np.ndarray,
                      out: _Verdict) -> None:
        """The node's own volumes (failing to count them is kube's Error), then per driver:
        held + the pod's volumes not already held there > the node's limit."""
        index = self.index
        failed = limited & index.failed[idx]
        for i in np.flatnonzero(failed):
            out.reject_one(int(i), index.failures[int(idx[i])], unresolvable=True)
        limited = limited & ~failed
        over = np.zeros(idx.size, dtype=bool)
        for driver in dict.fromkeys(new.values()):
            col = index.limits.get(driver)
            if col is None:
                continue  # no node limits this driver
            lim = col[idx]
            mine = [u for u, d in new.items() if d == driver]
            fresh = np.full(idx.size, len(mine), dtype=np.int64)
            for unique in mine:
                held = index.name_rows.get(unique)
                if held:
                    fresh -= np.isin(idx, np.fromiter(held, dtype=np.int64, count=len(held)))
            attached = index.counts[driver][idx] if driver in index.counts else 0
            over |= limited & (lim >= 0) & (attached + fresh > lim)
        out.reject(over, REASON)

    def _reject_missing_drivers(self, new: dict[str, str], snap: Snapshot, idx: np.ndarray,
                                rows: np.ndarray, out: _Verdict) -> None:
        """checkCSIDriverOnNode for each of the pod's drivers, in the order it uses them."""
        required = [d for d in dict.fromkeys(new.values()) if _prevents(self.csi, d)]
        if not required:
            return
        for i in np.flatnonzero(rows):
            node = self.csi.nodes.get(snap.names[int(idx[i])])
            for driver in required:
                if node is None or not node.has_driver(driver):
                    out.reject_one(int(i), f"{driver} CSI driver is not installed on the node")
                    break

    # --- queueing -----------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # Any new CSINode may help (kube registers no hint for it).
            ClusterEventWithHint(ClusterEvent(CSI_NODE_EVENT, ActionType.ADD)),
            # Not in kube, which relies on each new node's kubelet publishing a CSINode:
            # the embedded cluster's nodes publish none, so a new node is the event.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE_EVENT, ActionType.UPDATE),
                                 after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
                                 after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(PVC_EVENT, ActionType.ADD), after_claim_added),
            ClusterEventWithHint(ClusterEvent(VOLUME_ATTACHMENT_EVENT, ActionType.DELETE),
                                 after_attachment_deleted),
        ]


class _Verdict:
    """Feasibility plus one rejection mask per reason, in the order reasons appear."""

    def __init__(self, n: int) -> None:
        self.ok = np.ones(n, dtype=bool)
        self._masks: dict[str, tuple[np.ndarray, bool]] = {}

    def reject(self, mask: np.ndarray, reason: str, *, unresolvable: bool = False) -> None:
        mask = mask & self.ok
        if not mask.any():
            return
        entry = self._masks.get(reason)
        if entry is None:
            self._masks[reason] = (mask, unresolvable)
        else:
            entry[0][mask] = True
        self.ok &= ~mask

    def reject_one(self, i: int, reason: str, *, unresolvable: bool = False) -> None:
        mask = np.zeros(self.ok.size, dtype=bool)
        mask[i] = True
        self.reject(mask, reason, unresolvable=unresolvable)

    def result(self) -> FilterResult:
        if self.ok.all():
            return FilterResult(self.ok)
        return FilterResult(self.ok, [Rejection(r, m, u) for r, (m, u) in self._masks.items()],
                            REASON)


def _prevents(csi: CSICache, driver: str) -> bool:
    """The driver's CSIDriver asks that pods stay off nodes without it (no object: a
    driver that may not be CSI at all, not enforced)."""
    obj = csi.drivers.get(driver)
    return obj is not None and bool(obj.spec.prevent_pod_scheduling_if_missing)


# --- queueing hints (an object of the wrong type is kube's error: Queue) ---------------------


def after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPodDeleted: a pod that was on (or nominated to) a node and used a
    claim, an ephemeral volume or an inline migratable one."""
    deleted = old
    if not isinstance(deleted, Pod):
        return QueueingHint.QUEUE
    if not deleted.spec.volumes:
        return QueueingHint.QUEUE_SKIP
    if not deleted.spec.node_name and not deleted.status.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if pod_attachable(deleted) else QueueingHint.QUEUE_SKIP


def after_claim_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPVCAdded: the claim of one of the pod's claim or ephemeral volumes."""
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.QUEUE
    if (new.namespace or "") != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    claims = {v.claim for v in pod.attachable if v.claim}
    return QueueingHint.QUEUE if new.name in claims else QueueingHint.QUEUE_SKIP


def after_attachment_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterVolumeAttachmentDeleted: the pod has a claim volume, or an inline
    migratable volume of the detached volume's driver."""
    if not isinstance(old, VolumeAttachment):
        return QueueingHint.QUEUE
    for vol in pod.attachable:
        if vol.plugin is None:
            if not vol.ephemeral:
                return QueueingHint.QUEUE
            continue
        try:
            inline_handle(vol.plugin.source, vol.source or {})
        except TranslationError:
            return QueueingHint.QUEUE  # kube: an error, and Queue
        if vol.plugin.driver == old.spec.attacher:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_csi_node_updated(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterCSINodeUpdated: a driver's limit rose (an absent count is 0)."""
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return QueueingHint.QUEUE
    before = {d.name: (d.allocatable.count if d.allocatable and d.allocatable.count is not None
                       else 0) for d in old.spec.drivers}
    for d in new.spec.drivers:
        limit = d.allocatable.count if d.allocatable and d.allocatable.count is not None else 0
        if limit > before.get(d.name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
