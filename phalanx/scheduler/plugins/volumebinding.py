"""VolumeBinding: a pod's PersistentVolumeClaims decide where it may run, and get bound there.

As kube-scheduler's plugin (volumebinding/volume_binding.go), on the vectorised binder in
phalanx.scheduler.volumebinder:
- PreFilter: pods without PVC-backed volumes skip the plugin. A missing, lost or deleting
  claim, or an `Immediate` claim the PV controller has not bound yet, rejects the pod on
  every node (UnschedulableAndUnresolvable, kube's words).
- Filter: bound claims need their PV's node affinity to match the node; WaitForFirstConsumer
  claims need, on the node, an available PV that fits (smallest first, each PV once) or a
  class that can provision there.
- Reserve assumes the choice in the volume cache (a PV bound to the claim, or the claim
  annotated with the selected node), so the next pods of the cycle (a gang's other members)
  do not take the same PV; Unreserve forgets it.
- PreBind writes the PVs and claims and waits until the PV controller (or the provisioner
  behind it) has bound every claim: the pod is bound only to a node its volumes reach.
- Score (off by default, as kube's StorageCapacityScoring feature gate): prefers nodes whose
  statically bound PVs are closest to the requested size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from phalanx.api.base import KubeModel
from phalanx.api.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_ref,
    is_claim_fully_bound,
    is_volume_bound_to_claim,
    storage_capacity,
    storage_request,
)
from phalanx.cluster.client import ApiError
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.pluginargs import ArgsError, raise_errors
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
    Rejection,
)
from phalanx.scheduler.pvaffinity import affinity_mask
from phalanx.scheduler.resource_args import UtilizationShapePoint, shape_errors
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumebinder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    BinderError,
    ClaimSets,
    claim_problem,
    classify_claims,
    find_pod_volumes,
)
from phalanx.scheduler.volumes import PV_EVENT, PVC_EVENT, SC_EVENT, VolumeCache

# One shared Skip for the fast path (the runtime only reads a Skip's code).
SKIP = Status.skip()
OK = Status()
NAME = "VolumeBinding"
_STATE = "VolumeBinding/state"
MAX_CUSTOM_PRIORITY_SCORE = 10  # a shape point's score range (config.MaxCustomPriorityScore)


ShapePoint = UtilizationShapePoint
# kube 1.36's default (config/v1/defaults.go): prefer nodes whose storage is least used.
DEFAULT_SHAPE = ((0, MAX_CUSTOM_PRIORITY_SCORE), (100, 0))


class VolumeBindingArgs(KubeModel):
    """VolumeBindingArgs, defaulted and validated as kube's v1 API does.
    `enableStorageCapacityScoring` stands for kube's feature gate StorageCapacityScoring
    (alpha, off in 1.36): with it off a `shape` is refused; with it on, no shape (or an empty
    one) means DEFAULT_SHAPE."""

    bind_timeout_seconds: int = Field(default=600, ge=0)
    shape: list[ShapePoint] | None = None
    enable_storage_capacity_scoring: bool = False

    @model_validator(mode="after")
    def _valid(self) -> VolumeBindingArgs:
        if not self.enable_storage_capacity_scoring:
            if self.shape is not None:
                value = json.dumps([p.to_dict() for p in self.shape])
                raise ArgsError([(f"shape: Invalid value: {value}: unexpected field `shape`, "
                                  "remove it or turn on the feature gate StorageCapacityScoring "
                                  "(Phalanx: enableStorageCapacityScoring: true)")])
            return self
        if not self.shape:
            self.shape = [ShapePoint(utilization=u, score=s) for u, s in DEFAULT_SHAPE]
        raise_errors(shape_errors(self.shape, "shape"))
        return self


@dataclass(slots=True)
class _State:
    claims: ClaimSets
    all_bound: bool = False
    static: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(default_factory=list)
    provision: list[PersistentVolumeClaim] = field(default_factory=list)


def bind_volume_to_claim(pv: PersistentVolume,
                         pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """volume.GetBindVolumeToClaim: a copy of `pv` bound to `pvc`, and whether it changed."""
    already = is_volume_bound_to_claim(pv, pvc)
    new = pv.copy_deep()
    dirty = False
    ref = pv.spec.claim_ref
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace or \
            ref.uid != pvc.metadata.uid:
        new.spec.claim_ref = claim_ref(pvc)
        dirty = True
    if not already and ANN_BOUND_BY_CONTROLLER not in new.metadata.annotations:
        new.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return new, dirty


def shape_score(shape: Sequence[ShapePoint], utilization: int) -> int:
    """helper.BuildBrokenLinearFunction, scaled to 0..100."""
    pts = [(p.utilization, p.score * (100 // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape]
    for i, (u, s) in enumerate(pts):
        if utilization <= u:
            if i == 0:
                return s
            pu, ps = pts[i - 1]
            return ps + (s - ps) * (utilization - pu) // (u - pu)
    return pts[-1][1]


@register_plugin
class VolumeBinding(Plugin):
    NAME = NAME
    Args = VolumeBindingArgs

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args if args is not None else VolumeBindingArgs())
        self.cache = VolumeCache.for_handle(handle)

    # --- scheduling cycle ---------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        if not pod.claims.claims:
            return None, SKIP
        problem = claim_problem(self.cache, pod)
        if problem:
            return None, Status.unresolvable(problem)
        try:
            claims = classify_claims(self.cache, pod)
        except BinderError as e:
            return None, Status.error(str(e))
        if claims.immediate:
            return None, Status.unresolvable(REASON_UNBOUND_IMMEDIATE)
        state.write(_STATE, _State(claims))
        return None, Status()

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        st: _State | None = state.read(_STATE)
        if st is None or not (st.claims.bound or st.claims.delayed):
            return FilterResult.all_pass(idx.size)
        try:
            found = find_pod_volumes(self.cache, st.claims, snap, idx)
        except BinderError as e:  # kube: an error status for the node
            return FilterResult.reject_all(idx.size, str(e), unresolvable=True)
        rejections = [Rejection(REASON_NODE_CONFLICT, found.node_conflict, True),
                      Rejection(REASON_BIND_CONFLICT, found.bind_conflict, True),
                      Rejection(REASON_PV_NOT_EXIST, found.pv_missing, True)]
        rejections += [Rejection(msg, rows, True) for msg, rows in found.errors.items()]
        return FilterResult(found.ok(), rejections, REASON_BIND_CONFLICT, True)

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot,
                  idx: np.ndarray) -> Status:
        if not self.args.enable_storage_capacity_scoring or state.read(_STATE) is None:
            return SKIP
        return Status()

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot,
              idx: np.ndarray) -> np.ndarray:
        """Mean over classes of shape(requested / capacity) of the PVs bound statically on
        the node (dynamic provisioning would need CSIStorageCapacity: scored 0)."""
        st: _State | None = state.read(_STATE)
        out = np.zeros(idx.size, dtype=np.float64)
        if st is None or not st.claims.delayed:
            return out
        for i, row in enumerate(idx):
            try:
                found = find_pod_volumes(self.cache, st.claims, snap, np.asarray([row]),
                                         choose=True)
            except BinderError:
                continue  # Filter rejected such a node already
            per_class: dict[str, list[float]] = {}
            for pv, pvc in found.static:
                acc = per_class.setdefault(pv.spec.storage_class_name or "", [0.0, 0.0])
                acc[0] += storage_request(pvc)
                acc[1] += storage_capacity(pv)
            if per_class:
                total = 0
                for requested, capacity in per_class.values():
                    util = 100 if capacity == 0 or requested > capacity else \
                        int(requested * 100 // capacity)
                    total += shape_score(self.args.shape or (), util)
                out[i] = math.floor(total / len(per_class) + 0.5)  # Go's math.Round
        return out

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State | None = state.read(_STATE)
        if st is None:
            return OK
        if self._all_bound(pod):
            st.all_bound = True
            return Status()
        snap = self.handle.snapshot()
        row = snap.row(node)
        if row is None:
            return Status.error(f"node {node} vanished")
        try:
            found = find_pod_volumes(self.cache, st.claims, snap, np.asarray([row]), choose=True)
        except BinderError as e:
            return Status.error(str(e))
        if not found.ok()[0]:
            return Status.error(f"no pod volumes found for node {node!r}")
        st.static, st.provision = [], []
        for pv, pvc in found.static:
            new, dirty = bind_volume_to_claim(pv, pvc)
            if dirty:
                self.cache.assume_pv(new)
            st.static.append((new, pvc))
        for pvc in found.provision:
            clone = pvc.copy_deep()
            clone.metadata.annotations[ANN_SELECTED_NODE] = node
            self.cache.assume_pvc(clone)
            st.provision.append(clone)
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        st: _State | None = state.read(_STATE)
        if st is None:
            return
        for pv, _ in st.static:
            self.cache.restore_pv(pv.name)
        for pvc in st.provision:
            self.cache.restore_pvc(pvc.key)

    def _all_bound(self, pod: PodInfo) -> bool:
        for name, _ in pod.claims.claims:
            pvc = self.cache.pvc(pod.namespace, name)
            if pvc is None or not is_claim_fully_bound(pvc):
                return False
        return True

    # --- binding cycle ------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        st: _State | None = state.read(_STATE)
        if st is None or st.all_bound:
            return OK
        client = self.handle.client
        static, provision = list(st.static), list(st.provision)
        try:
            for i, (pv, pvc) in enumerate(static):
                static[i] = (await client.update(pv), pvc)
            for i, pvc in enumerate(provision):
                provision[i] = await client.update(pvc)
        except ApiError as e:
            return Status.error(f"binding volumes: {e}")
        deadline = self.handle.clock.monotonic() + self.args.bind_timeout_seconds
        while True:
            try:
                if self._bindings_done(pod, node, static, provision):
                    return Status()
            except BinderError as e:
                return Status.error(f"binding volumes: {e}")
            left = deadline - self.handle.clock.monotonic()
            if left <= 0:
                return Status.error("binding volumes: context deadline exceeded")
            await self.cache.wait_for_change(left)

    def _bindings_done(self, pod: PodInfo, node: str,
                       static: list[tuple[PersistentVolume, PersistentVolumeClaim]],
                       provision: list[PersistentVolumeClaim]) -> bool:
        """checkBindings, on the informers' objects. Raises BinderError when binding must
        be retried from scratch (the PV lost its claimRef, provisioning gave up...)."""
        if self.handle.pod_info(pod.key) is None:
            raise BinderError("pod does not exist any more")
        snap = self.handle.snapshot()
        row = snap.row(node)
        if row is None:
            raise BinderError(f'failed to get node "{node}"')
        rows = np.asarray([row])
        for written, claim in static:
            pv = self.cache.api_pv(written.name)
            pvc = self.cache.api_pvc(claim.namespace or "", claim.name)
            if pv is None or pvc is None:
                raise BinderError(f"failed to check binding: {written.name} or {claim.key} "
                                  "not found")
            if _older(pv, written):
                return False
            if not affinity_mask(pv, snap, rows)[0]:
                raise BinderError(f'pv "{pv.name}" node affinity doesn\'t match node "{node}"')
            if pv.spec.claim_ref is None or not pv.spec.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not is_claim_fully_bound(pvc):
                return False
        for written_pvc in provision:
            pvc = self.cache.api_pvc(written_pvc.namespace or "", written_pvc.name)
            if pvc is None:
                raise BinderError(f"failed to check provisioning pvc: {written_pvc.key} not found")
            if _older(pvc, written_pvc):
                return False
            if pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node:
                raise BinderError(f'provisioning failed for PVC "{pvc.name}"')
            if pvc.spec.volume_name:
                pv = self.cache.api_pv(pvc.spec.volume_name)
                if pv is None:
                    return False
                if not affinity_mask(pv, snap, rows)[0]:
                    raise BinderError(f'pv "{pv.name}" node affinity doesn\'t match node '
                                      f'"{node}"')
            if not is_claim_fully_bound(pvc):
                return False
        return True

    # --- queueing -----------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(SC_EVENT, add_update), after_class_change),
            ClusterEventWithHint(ClusterEvent(PVC_EVENT, add_update), after_claim_change),
            ClusterEventWithHint(ClusterEvent(PV_EVENT, add_update)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]


def _older(obj: Any, than: Any) -> bool:
    """The informer has not caught up with our write yet."""
    try:
        return int(obj.metadata.resource_version or 0) < int(than.metadata.resource_version or 0)
    except ValueError:
        return obj.metadata.resource_version != than.metadata.resource_version


def after_claim_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A claim the pod uses (same namespace, same name) was created or changed."""
    if not isinstance(new, PersistentVolumeClaim):  # kube: an error, and Queue
        return QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if new.name in pod.claims.names else QueueingHint.QUEUE_SKIP


def after_class_change(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A new class, or changed allowedTopologies (the binding mode is immutable)."""
    if not isinstance(new, StorageClass) or (old is not None
                                             and not isinstance(old, StorageClass)):
        return QueueingHint.QUEUE  # kube: an error, and Queue
    if old is None or new.allowed_topologies != old.allowed_topologies:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
