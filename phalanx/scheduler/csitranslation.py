"""In-tree volume plugins as CSI drivers: what k8s.io/csi-translation-lib tells kube-scheduler.

Kubernetes migrated the in-tree cloud disks to CSI drivers. NodeVolumeLimits counts such a
volume (an inline pod volume or an in-tree PersistentVolume) against the node's limit of the
CSI driver it now belongs to, under the volume handle the translation gives it, so that the
same disk written in-tree and as CSI counts once.

`pod_attachable(pod)` lists the volumes of a pod that NodeVolumeLimits looks at (claims,
generic ephemeral volumes, inline migratable sources), parsed once per pod (PodInfo).
Volume sources are the Pod model's opaque dicts (camelCase JSON).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from phalanx.api.core import Pod
    from phalanx.api.storage import PersistentVolume


class TranslationError(Exception):
    """The in-tree source cannot be expressed as a CSI volume (kube's translator error)."""


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    source: str  # the volume source key ("awsElasticBlockStore")
    name: str  # the in-tree plugin name ("kubernetes.io/aws-ebs")
    driver: str  # the CSI driver it migrated to ("ebs.csi.aws.com")


PLUGINS: tuple[InTreePlugin, ...] = (
    InTreePlugin("gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    InTreePlugin("awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    InTreePlugin("cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org"),
    InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com"),
    InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com"),
    InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
    InTreePlugin("portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com"),
)
BY_SOURCE = {p.source: p for p in PLUGINS}
BY_NAME = {p.name: p for p in PLUGINS}
# The plugins whose migration NodeVolumeLimits treats as on wherever a node has a CSINode
# (kube 1.36's isCSIMigrationOn): Azure File and vSphere volumes are never counted.
MIGRATION_ON = frozenset({"kubernetes.io/aws-ebs", "kubernetes.io/portworx-volume",
                          "kubernetes.io/gce-pd", "kubernetes.io/azure-disk",
                          "kubernetes.io/cinder"})

UNSPECIFIED = "UNSPECIFIED"
_EBS_VOLUME = re.compile(r"^vol-[^/]*$")
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
ZONE = "topology.kubernetes.io/zone"


def migration_on(has_csi_node: bool, plugin_name: str) -> bool:
    return has_csi_node and plugin_name in MIGRATION_ON


def is_migratable_plugin(name: str) -> bool:
    return name in BY_NAME


# --- volume handles ---------------------------------------------------------------------------


def ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: `aws://<zone>/vol-...` or a bare id."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError as e:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {e}") from None
    aws_id = url.path.strip("/")
    if not _EBS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _azure_disk_kind(src: dict[str, Any]) -> None:
    # The API server defaults an unset kind to "Shared", which CSI migration refuses.
    kind = src.get("kind") or "Shared"
    if str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


def _gce_handle(pd_name: str, zone: str = UNSPECIFIED) -> str:
    return f"projects/{UNSPECIFIED}/zones/{zone}/disks/{pd_name}"


def inline_handle(source: str, src: dict[str, Any]) -> str:
    """The CSI volume handle of an inline volume (TranslateInTreeInlineVolumeToCSI)."""
    if source == "awsElasticBlockStore":
        try:
            return ebs_volume_id(str(src.get("volumeID") or ""))
        except TranslationError as e:
            raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID {e}") \
                from None
    if source == "gcePersistentDisk":
        return _gce_handle(str(src.get("pdName") or ""))
    if source == "azureDisk":
        _azure_disk_kind(src)
        return str(src.get("diskURI") or "")
    if source == "vsphereVolume":
        return str(src.get("volumePath") or "")
    if source == "azureFile":
        return str(src.get("shareName") or "")  # never counted: only the driver is read
    return str(src.get("volumeID") or "")  # cinder, portworxVolume


def pv_plugin(pv: PersistentVolume) -> InTreePlugin | None:
    """The migratable in-tree plugin of a PV's source (IsPVMigratable), or None."""
    spec = pv.spec
    for attr, plugin in _PV_ATTRS:
        if getattr(spec, attr) is not None:
            return plugin
    return None


_PV_ATTRS = (("gce_persistent_disk", BY_SOURCE["gcePersistentDisk"]),
             ("aws_elastic_block_store", BY_SOURCE["awsElasticBlockStore"]),
             ("cinder", BY_SOURCE["cinder"]), ("azure_disk", BY_SOURCE["azureDisk"]),
             ("azure_file", BY_SOURCE["azureFile"]),
             ("vsphere_volume", BY_SOURCE["vsphereVolume"]),
             ("portworx_volume", BY_SOURCE["portworxVolume"]))


def pv_handle(pv: PersistentVolume, plugin: InTreePlugin) -> str:
    """The CSI volume handle of an in-tree PV (TranslateInTreePVToCSI)."""
    spec = pv.spec
    if plugin.source == "awsElasticBlockStore":
        return ebs_volume_id(str((spec.aws_elastic_block_store or {}).get("volumeID") or ""))
    if plugin.source == "gcePersistentDisk":
        pd = str((spec.gce_persistent_disk or {}).get("pdName") or "")
        labels = pv.metadata.labels
        zones = (labels.get(BETA_ZONE) or labels.get(ZONE) or "").split("__")
        if len(zones) == 1 and zones[0]:
            return _gce_handle(pd, zones[0])
        if len(zones) > 1:
            return f"projects/{UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{pd}"
        return _gce_handle(pd)
    if plugin.source == "azureDisk":
        src = spec.azure_disk or {}
        _azure_disk_kind(src)
        return str(src.get("diskURI") or "")
    if plugin.source == "vsphereVolume":
        return str((spec.vsphere_volume or {}).get("volumePath") or "")
    if plugin.source == "azureFile":
        return str((spec.azure_file or {}).get("shareName") or "")
    src = spec.cinder if plugin.source == "cinder" else spec.portworx_volume
    return str((src or {}).get("volumeID") or "")


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError("zone in unexpected format, expected: "
                                   f"{{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: "
                               f"{sorted(regions)}")
    return regions.pop()


# --- a pod's volumes --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One volume NodeVolumeLimits looks at."""

    name: str  # the volume's name in the pod
    claim: str | None = None  # the PVC (persistentVolumeClaim or generic ephemeral)
    ephemeral: bool = False
    plugin: InTreePlugin | None = None  # an inline in-tree migratable source
    source: dict[str, Any] | None = None  # ... and its fields


def pod_attachable(pod: Pod) -> tuple[PodVolume, ...]:
    """The pod's PVC, generic ephemeral and inline migratable volumes, in volume order."""
    volumes = pod.spec.volumes
    if not volumes:
        return ()
    out: list[PodVolume] = []
    for v in volumes:
        if not isinstance(v, dict):
            continue
        name = str(v.get("name") or "")
        claim = v.get("persistentVolumeClaim")
        if isinstance(claim, dict):
            out.append(PodVolume(name, str(claim.get("claimName") or "")))
        elif v.get("ephemeral") is not None:
            out.append(PodVolume(name, f"{pod.metadata.name}-{name}", ephemeral=True))
        else:
            for key, plugin in BY_SOURCE.items():
                src = v.get(key)
                if isinstance(src, dict):
                    out.append(PodVolume(name, plugin=plugin, source=src))
                    break
    return tuple(out)
