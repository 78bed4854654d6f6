"""storage.k8s.io/v1 CSINode, CSIDriver and VolumeAttachment: what NodeVolumeLimits reads.

- `CSINode` (one per node, named after it): the CSI drivers installed on the node, with the
  number of volumes each may attach there (`spec.drivers[].allocatable.count`). The kubelet
  publishes it on a real cluster; on the embedded one, tests and users create it.
- `CSIDriver`: a driver's cluster-wide settings. The scheduler reads only
  `spec.preventPodSchedulingIfMissing` (kube 1.36's alpha VolumeLimitScaling).
- `VolumeAttachment`: a volume attached (or being attached) to a node by a driver; counted
  against the node's limit even when no pod on the node uses the volume any more.

Models hold the fields Kubernetes has, with Go's zero values allowed; what the API server
defaults and refuses is in `phalanx.cluster.storage_csi`.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource
from .pod import Opaque


class VolumeNodeResources(KubeModel):
    count: int | None = None  # volumes of this driver the node may attach; None: no limit


class CSINodeDriver(KubeModel):
    name: str = ""
    node_id: str = Field(default="", alias="nodeID")
    topology_keys: list[str] | None = None
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(KubeModel):
    drivers: list[CSINodeDriver] = Field(default_factory=list)


class CSINode(Resource):
    API_VERSION = "storage.k8s.io/v1"
    KIND = "CSINode"
    PLURAL = "csinodes"
    NAMESPACED = False

    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)

    def volume_limits(self) -> dict[str, int]:
        """Driver name -> attachable volume count, for the drivers that publish one."""
        return {d.name: d.allocatable.count for d in self.spec.drivers
                if d.allocatable is not None and d.allocatable.count is not None}

    def has_driver(self, name: str) -> bool:
        return any(d.name == name for d in self.spec.drivers)


class TokenRequest(KubeModel):
    audience: str = ""
    expiration_seconds: int | None = None


class CSIDriverSpec(KubeModel):
    attach_required: bool | None = None
    pod_info_on_mount: bool | None = None
    volume_lifecycle_modes: list[str] | None = None
    storage_capacity: bool | None = None
    fs_group_policy: str | None = None
    token_requests: list[TokenRequest] | None = None
    requires_republish: bool | None = None
    se_linux_mount: bool | None = Field(default=None, alias="seLinuxMount")
    node_allocatable_update_period_seconds: int | None = None
    service_account_token_in_secrets: bool | None = None
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(Resource):
    API_VERSION = "storage.k8s.io/v1"
    KIND = "CSIDriver"
    PLURAL = "csidrivers"
    NAMESPACED = False

    spec: CSIDriverSpec = Field(default_factory=CSIDriverSpec)


class VolumeAttachmentSource(KubeModel):
    persistent_volume_name: str | None = None
    inline_volume_spec: Opaque | None = None  # a PersistentVolumeSpec (migrated inline volume)


class VolumeAttachmentSpec(KubeModel):
    attacher: str = ""
    source: VolumeAttachmentSource = Field(default_factory=VolumeAttachmentSource)
    node_name: str = ""


class VolumeError(KubeModel):
    time: datetime | None = None
    message: str | None = None
    error_code: int | None = None


class VolumeAttachmentStatus(KubeModel):
    attached: bool = False
    attachment_metadata: dict[str, str] | None = None
    attach_error: VolumeError | None = None
    detach_error: VolumeError | None = None


class VolumeAttachment(Resource):
    API_VERSION = "storage.k8s.io/v1"
    KIND = "VolumeAttachment"
    PLURAL = "volumeattachments"
    NAMESPACED = False
    HAS_STATUS = True

    spec: VolumeAttachmentSpec = Field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = Field(default_factory=VolumeAttachmentStatus)


for _cls in (CSINode, CSIDriver, VolumeAttachment):
    _registry.register(_cls)

__all__ = [
    "CSIDriver",
    "CSIDriverSpec",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "TokenRequest",
    "VolumeAttachment",
    "VolumeAttachmentSource",
    "VolumeAttachmentSpec",
    "VolumeAttachmentStatus",
    "VolumeError",
    "VolumeNodeResources",
]
