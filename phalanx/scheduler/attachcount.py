"""Counting attachable volumes per CSI driver, as kube-scheduler's NodeVolumeLimits does.

A volume counts once per node under its unique name `<driver>/<volume handle>`:
- a PVC bound to a CSI PersistentVolume: the PV's driver and handle;
- a PVC bound to an in-tree PV of a migrated plugin (on a node with a CSINode): the CSI
  driver and handle the translation gives (csitranslation.py);
- a PVC not bound yet (or whose PV is missing): its StorageClass's provisioner (translated
  when in-tree) and a handle made of the claim's name, so two pods of one claim count once;
- an inline in-tree volume of a migrated plugin (on a node with a CSINode): as a PV would;
- a VolumeAttachment on the node (attacher, PV handle), unless a pod there uses the volume.

`AttachCounter.pod_volumes` does this for one pod, `node_counts` for what the pods and the
attachments of one node hold, with the storage objects the answer depended on (`deps`), so
that attachindex.py knows which nodes to count again when one of them changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from phalanx.api.storage import PersistentVolumeClaim, claim_class
from phalanx.scheduler.csi import CSICache
from phalanx.scheduler.csitranslation import (
    BY_NAME,
    TranslationError,
    inline_handle,
    is_migratable_plugin,
    migration_on,
    pv_handle,
    pv_plugin,
)
from phalanx.scheduler.volumes import VolumeCache

if TYPE_CHECKING:
    from phalanx.scheduler.framework.types import PodInfo

# Stands for kube's random 32-character prefix of unbound claims' volume handles: no real
# handle starts with it.
UNBOUND_PREFIX = "\x00unbound-claim"


class Failure(Exception):
    """A pod's volumes cannot be counted. `unresolvable`: kube answers
    UnschedulableAndUnresolvable (a claim not found); otherwise kube's Filter returns an
    Error, which phalanx reports as an unresolvable rejection of the node (same text)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.not_found = not_found


# A storage object a count depended on: ("pvc", "ns/name"), ("pv", name), ("sc", name).
Dep = tuple[str, str]


@dataclass(slots=True)
class NodeCounts:
    """What is attached to one node: by the pods on it (unique name -> driver), and the
    count per driver including VolumeAttachments no pod there accounts for."""

    names: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failure: str | None = None
    deps: set[Dep] = field(default_factory=set)



class AttachCounter:
    def __init__(self, volumes: VolumeCache, csi: CSICache) -> None:
        self.volumes = volumes
        self.csi = csi

    def pod_volumes(self, pod: PodInfo, has_csi_node: bool, new_pod: bool,
                    deps: set[Dep] | None = None) -> dict[str, str]:
        """filterAttachableVolumes: unique volume name -> CSI driver. Raises Failure. The
        storage objects looked at are added to `deps` (when given)."""
        if deps is None:
            deps = set()
        out: dict[str, str] = {}
        ns = pod.namespace
        for vol in pod.attachable:
            plugin = vol.plugin
            if plugin is not None:
                if not migration_on(has_csi_node, plugin.name):
                    continue
                try:
                    handle = inline_handle(plugin.source, vol.source or {})
                except TranslationError as e:
                    raise Failure(f"converting volume({vol.name}) from inline to csi: {e}") \
                        from None
                out[f"{plugin.driver}/{handle}"] = plugin.driver
                continue
            if not vol.claim:
                raise Failure("PersistentVolumeClaim had no name")
            deps.add(("pvc", f"{ns}/{vol.claim}"))
            pvc = self.volumes.api_pvc(ns, vol.claim)
            if pvc is None:
                if new_pod:
                    raise Failure(f"looking up PVC {ns}/{vol.claim}: persistentvolumeclaims "
                                  f'"{vol.claim}" not found', not_found=True)
                continue  # kube: not counted, it may not belong to that pod
            if vol.ephemeral and not _controlled_by(pvc, pod):
                raise Failure(f"PVC {pvc.namespace or ''}/{pvc.name} was not created for pod "
                              f"{ns}/{pod.name} (pod is not owner)")
            driver, handle = self.claim_driver(has_csi_node, pvc, deps)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return out

    def claim_driver(self, has_csi_node: bool, pvc: PersistentVolumeClaim,
                     deps: set[Dep]) -> tuple[str, str]:
        """getCSIDriverInfo: (driver, volume handle), or empty strings when not counted."""
        pv_name = pvc.spec.volume_name
        if pv_name:
            deps.add(("pv", pv_name))
        pv = self.volumes.api_pv(pv_name) if pv_name else None
        if pv is None:
            return self._class_driver(has_csi_node, pvc, deps)
        csi = pv.spec.csi
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        plugin = pv_plugin(pv)
        if plugin is None or not migration_on(has_csi_node, plugin.name):
            return "", ""
        try:
            return plugin.driver, pv_handle(pv, plugin)
        except TranslationError:
            return "", ""

    def _class_driver(self, has_csi_node: bool, pvc: PersistentVolumeClaim,
                      deps: set[Dep]) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: the class's provisioner and a handle named after the
        claim (no class or an unknown one: an Immediate claim, bound before it is used)."""
        name = claim_class(pvc)
        if name:
            deps.add(("sc", name))
        sc = self.volumes.classes.get(name) if name else None
        if sc is None:
            return "", ""
        handle = f"{UNBOUND_PREFIX}-{pvc.namespace or ''}/{pvc.name}"
        provisioner = sc.provisioner
        if is_migratable_plugin(provisioner):
            if not migration_on(has_csi_node, provisioner):
                return "", ""
            return BY_NAME[provisioner].driver, handle
        return provisioner, handle

    def node_counts(self, pods: list[PodInfo], node_name: str,
                    has_csi_node: bool) -> NodeCounts:
        """What the pods on a node and its VolumeAttachments hold (a Failure from a pod is
        kept in `failure`: kube's Filter errors on such a node)."""
        deps: set[Dep] = set()
        names: dict[str, str] = {}
        for p in pods:
            try:
                names.update(self.pod_volumes(p, has_csi_node, False, deps))
            except Failure as f:
                return NodeCounts(failure=f.message, deps=deps)
        counts: dict[str, int] = {}
        for driver in names.values():
            counts[driver] = counts.get(driver, 0) + 1
        for unique, driver in self.node_attachments(node_name, deps).items():
            if unique not in names:
                counts[driver] = counts.get(driver, 0) + 1
        return NodeCounts(names, counts, None, deps)

    def node_attachments(self, node_name: str, deps: set[Dep]) -> dict[str, str]:
        """getNodeVolumeAttachmentInfo: unique name -> attacher of the node's attachments
        of CSI PersistentVolumes."""
        out: dict[str, str] = {}
        for va in self.csi.attachments_on(node_name):
            attacher, pv_name = va.spec.attacher, va.spec.source.persistent_volume_name
            if not attacher or pv_name is None:
                continue
            deps.add(("pv", pv_name))
            pv = self.volumes.api_pv(pv_name)
            if pv is None or pv.spec.csi is None:
                continue
            out[f"{attacher}/{pv.spec.csi.get('volumeHandle') or ''}"] = attacher
        return out


def _controlled_by(pvc: PersistentVolumeClaim, pod: PodInfo) -> bool:
    """ephemeral.VolumeIsForPod: the claim's controller is this pod (by uid)."""
    controller = next((r for r in pvc.metadata.owner_references if r.controller), None)
    return controller is not None and controller.uid == (pod.pod.metadata.uid or "")
