"""kube-scheduler's volume binder (volumebinding/binder.go), vectorised over snapshot rows.

- `classify_claims`: a pod's claims split into bound, unbound with delayed binding
  (WaitForFirstConsumer) and unbound "immediate" ones (which the PV controller should have
  bound already), plus the PVs of each delayed claim's class.
- `find_pod_volumes`: for every row at once, whether the bound claims' PVs may be used there
  (PV node affinity) and whether every delayed claim finds an available PV there (smallest
  that fits, each PV once) or can be provisioned there; the reasons as kube words them.

PV node affinity is evaluated by phalanx.scheduler.pvaffinity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from phalanx.api.storage import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    claim_class,
    is_claim_fully_bound,
    is_volume_bound_to_claim,
    storage_capacity,
    storage_request,
    volume_class,
)
from phalanx.cluster.selectors import SelectorError, parse_label_selector
from phalanx.scheduler.pvaffinity import RowIndex, affinity_mask

if TYPE_CHECKING:
    from phalanx.scheduler.framework.types import PodInfo
    from phalanx.scheduler.snapshot import Snapshot
    from phalanx.scheduler.volumes import VolumeCache

REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


class BinderError(Exception):
    """An internal failure (kube's AsStatus(err)): the pod is retried with backoff."""


# --- claims ---------------------------------------------------------------------------------


def claim_problem(cache: VolumeCache, pod: PodInfo) -> str | None:
    """podHasPVCs: why the pod's claims rule out every node, or None."""
    namespace = pod.namespace
    for name, ephemeral in pod.claims.claims:
        pvc = cache.pvcs.get(f"{namespace}/{name}")  # the informer's, as kube's lister
        if pvc is None:
            if ephemeral:
                return ("waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"')
            return f'persistentvolumeclaim "{name}" not found'
        if pvc.status.phase == "Lost":
            return (f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name or ""}"')
        if pvc.metadata.deletion_timestamp is not None:
            return f'persistentvolumeclaim "{name}" is being deleted'
        if ephemeral and not _owned_by(pvc, pod):
            return (f"PVC {namespace}/{name} was not created for pod {namespace}/{pod.name} "
                    "(pod is not owner)")
    return None


def _owned_by(pvc: PersistentVolumeClaim, pod: PodInfo) -> bool:
    """ephemeral.VolumeIsForPod: the pod is the claim's controller (metav1.IsControlledBy,
    which compares uids only)."""
    ref = pvc.metadata.controller_ref()
    return ref is not None and ref.uid == (pod.pod.metadata.uid or "")


@dataclass(slots=True)
class ClaimSets:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    # class name -> its PVs (assumed versions), for the delayed claims
    volumes: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def is_delay_binding(cache: VolumeCache, pvc: PersistentVolumeClaim) -> bool:
    """volume.IsDelayBindingMode: the claim's class binds at first consumer."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = cache.storage_class(name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise BinderError(f'VolumeBindingMode not set for StorageClass "{name}"')
    return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def classify_claims(cache: VolumeCache, pod: PodInfo) -> ClaimSets:
    """GetPodVolumeClaims. Raises BinderError for a claim that vanished meanwhile."""
    out = ClaimSets()
    for name, _ in pod.claims.claims:
        pvc = cache.pvc(pod.namespace, name)
        if pvc is None:
            raise BinderError(f'error getting PVC "{pod.namespace}/{name}": not found')
        if is_claim_fully_bound(pvc):
            out.bound.append(pvc)
        elif is_delay_binding(cache, pvc) and not pvc.spec.volume_name:
            out.delayed.append(pvc)
        else:  # immediate, or pre-bound to a PV: the PV controller's business
            out.immediate.append(pvc)
    for pvc in out.delayed:
        cls = claim_class(pvc)
        if cls not in out.volumes:
            out.volumes[cls] = cache.pvs_of_class(cls)
    return out


# --- finding volumes for every row ----------------------------------------------------------


@dataclass(slots=True)
class Found:
    """find_pod_volumes over rows `idx`: the rejected rows per reason, and, for `choose`
    calls on one row, the PVs to bind and the claims to provision there."""

    node_conflict: np.ndarray
    bind_conflict: np.ndarray
    pv_missing: np.ndarray
    errors: dict[str, np.ndarray] = field(default_factory=dict)
    static: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(default_factory=list)
    provision: list[PersistentVolumeClaim] = field(default_factory=list)

    def ok(self) -> np.ndarray:
        bad = self.node_conflict | self.bind_conflict | self.pv_missing
        for m in self.errors.values():
            bad = bad | m
        return ~bad


def find_pod_volumes(cache: VolumeCache, claims: ClaimSets, snap: Snapshot,
                     idx: np.ndarray, *, choose: bool = False) -> Found:
    """FindPodVolumes on every row of `idx` at once. With `choose` and one row, also the
    PVs that row's delayed claims would bind and the claims it would provision (Reserve).
    Raises BinderError for a claim whose selector does not parse."""
    n = idx.size
    res = Found(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    _check_bound(cache, claims.bound, snap, idx, res)
    if not claims.delayed:
        return res
    # Claims the scheduler already asked to provision on a node: that node only.
    live = np.ones(n, dtype=bool)
    to_provision: list[PersistentVolumeClaim] = []
    to_match: list[PersistentVolumeClaim] = []
    for pvc in claims.delayed:
        selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected is None:
            to_match.append(pvc)
            continue
        row = snap.row(selected)
        elsewhere = idx != (-1 if row is None else row)
        res.bind_conflict |= elsewhere & live
        live &= ~elsewhere
        to_provision.append(pvc)
    # Per row: which claims found no PV (they go to provisioning there).
    unmatched = _match_static(claims, to_match, snap, idx, live, res, choose)
    # checkVolumeProvisions: claims in order; on each row the first that cannot be
    # provisioned there decides (an error for a claim without a usable class).
    decided = ~live
    for pvc, rows in [(c, live) for c in to_provision] + unmatched:
        prov, error = _provisionable(cache, pvc, snap, idx)
        applicable = rows & ~decided
        if error:
            res.errors[error] = res.errors.get(error, np.zeros(n, dtype=bool)) | applicable
            decided |= applicable
            continue
        bad = applicable & ~prov
        res.bind_conflict |= bad
        decided |= bad
    for err_rows in res.errors.values():  # an error replaces the node's reasons
        res.node_conflict &= ~err_rows
        res.bind_conflict &= ~err_rows
        res.pv_missing &= ~err_rows
    if choose and n == 1 and not decided[0]:
        res.provision = to_provision + [c for c, rows in unmatched if rows[0]]
    return res


def _check_bound(cache: VolumeCache, bound: Sequence[PersistentVolumeClaim], snap: Snapshot,
                 idx: np.ndarray, res: Found) -> None:
    """checkBoundClaims: per row, the first claim whose PV is missing or does not fit decides."""
    decided = np.zeros(idx.size, dtype=bool)
    for pvc in bound:
        pv = cache.pv(pvc.spec.volume_name or "")
        if pv is None:
            res.pv_missing |= ~decided
            return
        bad = ~affinity_mask(pv, snap, idx)
        res.node_conflict |= bad & ~decided
        decided |= bad


def _candidates(pvc: PersistentVolumeClaim, pvs: Sequence[PersistentVolume]) -> tuple[
        PersistentVolume | None, list[PersistentVolume]]:
    """The node-independent part of volume.FindMatchingVolume: the PV pre-bound to the
    claim (if any), else the available PVs that fit it, smallest first (name breaks ties)."""
    request = storage_request(pvc)
    wanted_class = claim_class(pvc)
    mode = pvc.spec.volume_mode or "Filesystem"
    vac = pvc.spec.volume_attributes_class_name or ""
    selector = None
    if pvc.spec.selector is not None:
        try:
            selector = parse_label_selector(pvc.spec.selector)
        except SelectorError as e:
            raise BinderError(f"error creating internal label selector for claim: "
                              f"{pvc.key}: {e}") from None
    fits: list[tuple[float, str, PersistentVolume]] = []
    for pv in pvs:
        spec = pv.spec
        if spec.claim_ref is not None and not is_volume_bound_to_claim(pv, pvc):
            continue
        capacity = storage_capacity(pv)
        if capacity < request or (spec.volume_mode or "Filesystem") != mode:
            continue
        if (spec.volume_attributes_class_name or "") != vac or pv.metadata.deletion_timestamp:
            continue
        if is_volume_bound_to_claim(pv, pvc):
            return pv, []
        if pv.status.phase != "Available":
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if volume_class(pv) != wanted_class:
            continue
        if not set(pvc.spec.access_modes or ()) <= set(spec.access_modes or ()):
            continue
        fits.append((capacity, pv.name, pv))
    fits.sort(key=lambda t: (t[0], t[1]))
    return None, [pv for _, _, pv in fits]


def _match_static(claims: ClaimSets, to_match: list[PersistentVolumeClaim], snap: Snapshot,
                  idx: np.ndarray, live: np.ndarray, res: Found, choose: bool,
                  ) -> list[tuple[PersistentVolumeClaim, np.ndarray]]:
    """findMatchingVolumes on every live row: claims by increasing request, each taking the
    smallest PV that fits and that no earlier claim took on that row. Returns the claims and
    the rows where they found none.

    Per claim, the candidate PVs are walked smallest first, each covering the rows (its
    node affinity's) that no smaller one covered: the cost is the rows the PVs cover, not
    rows x PVs."""
    n = idx.size
    rows = RowIndex(snap, idx)
    taken: dict[str, np.ndarray] = {}  # PV name -> positions where an earlier claim took it
    unmatched: list[tuple[PersistentVolumeClaim, np.ndarray]] = []
    wanted = int(live.sum())
    for pvc in sorted(to_match, key=storage_request):
        prebound, cands = _candidates(pvc, claims.volumes.get(claim_class(pvc), ()))
        found = np.zeros(n, dtype=bool)
        left = wanted
        for pv in [prebound] if prebound is not None else cands:
            pos = rows.positions(pv)
            if not pos.size:
                continue
            pos = pos[live[pos] & ~found[pos]]
            before = taken.get(pv.name)
            if before is not None and pos.size:
                pos = pos[~np.isin(pos, before)]
            if not pos.size:
                continue
            found[pos] = True
            taken[pv.name] = pos if before is None else np.concatenate([before, pos])
            if choose and n == 1:
                res.static.append((pv, pvc))
            left -= pos.size
            if left <= 0:
                break
        missing = live & ~found
        if missing.any():
            unmatched.append((pvc, missing))
    return unmatched


def _provisionable(cache: VolumeCache, pvc: PersistentVolumeClaim, snap: Snapshot,
                   idx: np.ndarray) -> tuple[np.ndarray, str]:
    """checkVolumeProvisions for one claim on every row: its class has a provisioner and
    allows the node's topology. (CSI storage capacity is not tracked: always enough.)
    Returns (mask, error); an error (no usable class) concerns every row."""
    name = claim_class(pvc)
    everywhere = np.ones(idx.size, dtype=bool)
    if not name:
        return everywhere, f'no class for claim "{pvc.key}"'
    sc = cache.storage_class(name)
    if sc is None:
        return everywhere, f'failed to find storage class "{name}"'
    if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
        return ~everywhere, ""
    if not sc.allowed_topologies:
        return everywhere, ""
    out = np.zeros(idx.size, dtype=bool)
    for term in sc.allowed_topologies:
        if not term.match_label_expressions:
            continue  # an empty term selects nothing
        ok = everywhere.copy()
        for req in term.match_label_expressions:
            col = snap.label_column(req.key)[idx]
            ok &= np.isin(col, [snap.label_value_id(req.key, v) for v in req.values])
        out |= ok
    return out, ""
