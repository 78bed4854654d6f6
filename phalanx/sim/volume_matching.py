"""Matching claims to volumes as the PV controller does (component-helpers/storage/volume,
without a node: the scheduler matches WaitForFirstConsumer claims itself)."""

from __future__ import annotations

from phalanx.api.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
    claim_class,
    is_volume_bound_to_claim,
    storage_capacity,
    storage_request,
    volume_class,
)
from phalanx.cluster.selectors import SelectorError, parse_label_selector


def find_matching_volume(pvc: PersistentVolumeClaim, volumes: list[PersistentVolume],
                         delay: bool) -> PersistentVolume | None:
    """FindMatchingVolume as the PV controller calls it (no node): the PV pre-bound to the
    claim; else, unless the claim waits for its first consumer, the smallest Available PV
    of its class, size, volume mode and selector."""
    request = storage_request(pvc)
    mode = pvc.spec.volume_mode or "Filesystem"
    try:
        selector = parse_label_selector(pvc.spec.selector) if pvc.spec.selector else None
    except SelectorError:
        return None
    best: PersistentVolume | None = None
    for pv in volumes:
        if pv.spec.claim_ref is not None and not is_volume_bound_to_claim(pv, pvc):
            continue
        size = storage_capacity(pv)
        if size < request or (pv.spec.volume_mode or "Filesystem") != mode:
            continue
        if (pv.spec.volume_attributes_class_name or "") != \
                (pvc.spec.volume_attributes_class_name or ""):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        if is_volume_bound_to_claim(pv, pvc):
            return pv
        if delay:
            continue
        if pv.status.phase != "Available":
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if volume_class(pv) != claim_class(pvc):
            continue
        if best is None or storage_capacity(best) > size:
            best = pv
    return best


def satisfies(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """checkVolumeSatisfyClaim, for a claim that names its PV."""
    return (pv.metadata.deletion_timestamp is None
            and storage_capacity(pv) >= storage_request(pvc)
            and volume_class(pv) == claim_class(pvc)
            and (pv.spec.volume_attributes_class_name or "")
            == (pvc.spec.volume_attributes_class_name or "")
            and (pv.spec.volume_mode or "Filesystem") == (pvc.spec.volume_mode or "Filesystem")
            and set(pvc.spec.access_modes or ()) <= set(pv.spec.access_modes or ()))
