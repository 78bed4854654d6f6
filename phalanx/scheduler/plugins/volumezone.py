"""VolumeZone: the zone and region labels of a pod's bound PVs must match the node's.

kube-scheduler's volumezone plugin: for each bound PersistentVolume of the pod's
persistentVolumeClaim volumes, the PV's `topology.kubernetes.io/{zone,region}` labels (and
their beta `failure-domain.beta.kubernetes.io/...` forms; a value may list several zones as
`a__b`) must hold on the node; a PV with a beta label also matches the node's GA label. A
node with none of these labels takes any pod (a single-zone cluster). Unbound
WaitForFirstConsumer claims are VolumeBinding's business and skipped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
)
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    QueueingHint,
)
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import PV_EVENT, PVC_EVENT, SC_EVENT, VolumeCache

# One shared Skip for the fast path (the runtime only reads a Skip's code).
SKIP = Status.skip()
NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
_STATE = "PreFilterVolumeZone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}

Topology = tuple[str, str, frozenset[str]]  # (pv name, label key, allowed values)


def pv_topologies(pv: PersistentVolume) -> list[Topology]:
    """getPVTopologies: the PV's zone/region labels (a malformed multi-zone value is ignored)."""
    out: list[Topology] = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = value.split("__")
        if any(not z.strip() for z in zones):
            continue  # LabelZonesToSet refuses empty zones
        out.append((pv.name, key, frozenset(z.strip() for z in zones)))
    return out


class _Problem(Exception):
    pass


@register_plugin
class VolumeZone(Plugin):
    NAME = NAME

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args)
        self.cache = VolumeCache.for_handle(handle)

    def _topologies(self, pod: PodInfo) -> list[Topology]:
        """getPVbyPod, on the informers' objects. Raises _Problem with kube's message."""
        out: list[Topology] = []
        for name in pod.claims.pvc_names:
            if not name:
                raise _Problem("PersistentVolumeClaim had no name")
            pvc = self.cache.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                raise _Problem(f'persistentvolumeclaim "{name}" not found')
            pv_name = pvc.spec.volume_name
            if not pv_name:
                cls = claim_class(pvc)
                if not cls:
                    raise _Problem("PersistentVolumeClaim had no pv name and storageClass name")
                sc = self.cache.classes.get(cls)
                if sc is None:
                    raise _Problem(f'storageclasses.storage.k8s.io "{cls}" not found')
                if sc.volume_binding_mode is None:
                    raise _Problem(f'VolumeBindingMode not set for StorageClass "{cls}"')
                if sc.volume_binding_mode == "WaitForFirstConsumer":
                    continue  # not bound yet: VolumeBinding places it
                raise _Problem("PersistentVolume had no name")
            pv = self.cache.pvs.get(pv_name)
            if pv is None:
                raise _Problem(f'persistentvolume "{pv_name}" not found')
            out += pv_topologies(pv)
        return out

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        if not pod.claims.pvc_names:
            return None, SKIP
        try:
            topologies = self._topologies(pod)
        except _Problem as p:
            return None, Status.unresolvable(str(p))
        if not topologies:
            return None, SKIP
        state.write(_STATE, topologies)
        return None, Status()

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        if not pod.pod.spec.volumes:
            return FilterResult.all_pass(idx.size)
        topologies: list[Topology] | None = state.read(_STATE)
        if topologies is None:  # PreFilter did not run: compute here, as kube falls back to
            try:
                topologies = self._topologies(pod)
            except _Problem as p:
                return FilterResult.reject_all(idx.size, str(p), unresolvable=True)
        if not topologies:
            return FilterResult.all_pass(idx.size)
        constrained = np.zeros(idx.size, dtype=bool)
        for key in TOPOLOGY_LABELS:
            constrained |= snap.label_column(key)[idx] != 0
        ok = np.ones(idx.size, dtype=bool)
        for _, key, values in topologies:
            ok &= _label_in(snap, idx, key, values)
        return FilterResult.from_mask(ok | ~constrained, REASON, unresolvable=True)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(SC_EVENT, ActionType.ADD), after_class_added),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(PVC_EVENT, ActionType.ADD | ActionType.UPDATE),
                                 after_claim_change),
            ClusterEventWithHint(ClusterEvent(PV_EVENT, ActionType.ADD | ActionType.UPDATE),
                                 after_volume_change),
        ]


def _label_in(snap: Snapshot, idx: np.ndarray, key: str, values: frozenset[str]) -> np.ndarray:
    """The node's `key` label is one of `values`; a beta key missing on the node is looked
    up under its GA name."""
    col = snap.label_column(key)[idx]
    ok = np.isin(col, [snap.label_value_id(key, v) for v in sorted(values)]) & (col != 0)
    ga = _GA.get(key)
    if ga is not None:
        gcol = snap.label_column(ga)[idx]
        ga_ok = np.isin(gcol, [snap.label_value_id(ga, v) for v in sorted(values)]) & (gcol != 0)
        ok = np.where(col != 0, ok, ga_ok)
    return ok


# Queueing hints. An object of the wrong type is kube's "error": Queue.


def after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A claim of one of the pod's persistentVolumeClaim volumes was created or changed."""
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if new.name in pod.claims.pvc_names else QueueingHint.QUEUE_SKIP


def after_class_added(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Only a WaitForFirstConsumer class can help (the mode is immutable)."""
    if not isinstance(new, StorageClass):
        return QueueingHint.QUEUE
    if new.volume_binding_mode != "WaitForFirstConsumer":
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def after_volume_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A new PV, or one whose zone/region labels changed."""
    if not isinstance(new, PersistentVolume) or (old is not None and
                                                 not isinstance(old, PersistentVolume)):
        return QueueingHint.QUEUE
    if old is None or pv_topologies(old) != pv_topologies(new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
