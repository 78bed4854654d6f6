"""core/v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1 StorageClass.

The models hold the fields Kubernetes has, with Go's zero values allowed (an unset
`volumeBindingMode`, a class without `provisioner`), as client-go's types do; what the API
server refuses or defaults is in `validate_*` / `default_*` below, which the embedded cluster
runs on every write (`install_storage_admission`). Volume sources (`csi`, `local`, `nfs`, ...)
are kept opaque: nothing here interprets them beyond "exactly one is set".
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty
from .core import NodeSelector, ObjectReference
from .pod import Opaque, ResourceList
from .quantity import parse_quantity

AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
ACCESS_MODES: tuple[str, ...] = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce",
                                 "ReadWriteOncePod")
VolumeMode = Literal["Block", "Filesystem"]
ReclaimPolicy = Literal["Retain", "Delete", "Recycle"]
BindingMode = Literal["Immediate", "WaitForFirstConsumer"]
IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

# Annotations the PV controller and the scheduler use to hand a binding over (names as in
# k8s.io/component-helpers/storage/volume).
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

# The persistent volume sources of a PV spec (JSON names); exactly one must be set.
VOLUME_SOURCES: tuple[str, ...] = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
    "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local",
    "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO",
    "storageos", "vsphereVolume",
)


class VolumeNodeAffinity(KubeModel):
    required: NodeSelector | None = None


class PersistentVolumeSpec(KubeModel):
    capacity: ResourceList | None = None
    access_modes: list[AccessMode] | None = None
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: ReclaimPolicy | None = None
    storage_class_name: str | None = None
    mount_options: list[str] | None = None
    volume_mode: VolumeMode | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    # Volume sources (opaque).
    aws_elastic_block_store: Opaque | None = None
    azure_disk: Opaque | None = None
    azure_file: Opaque | None = None
    cephfs: Opaque | None = None
    cinder: Opaque | None = None
    csi: Opaque | None = None
    fc: Opaque | None = None
    flex_volume: Opaque | None = None
    flocker: Opaque | None = None
    gce_persistent_disk: Opaque | None = None
    glusterfs: Opaque | None = None
    host_path: Opaque | None = None
    iscsi: Opaque | None = None
    local: Opaque | None = None
    nfs: Opaque | None = None
    photon_persistent_disk: Opaque | None = None
    portworx_volume: Opaque | None = None
    quobyte: Opaque | None = None
    rbd: Opaque | None = None
    scale_io: Opaque | None = Field(default=None, alias="scaleIO")
    storageos: Opaque | None = None
    vsphere_volume: Opaque | None = None

    def sources(self) -> list[str]:
        """The JSON names of the volume sources set (the API server wants exactly one)."""
        data = self.model_dump(by_alias=True, exclude_none=True, include=SOURCE_FIELDS)
        return sorted(data)


SOURCE_FIELDS = {n for n, f in PersistentVolumeSpec.model_fields.items()
                  if f.serialization_alias in VOLUME_SOURCES or f.alias in VOLUME_SOURCES}


class PersistentVolumeStatus(KubeModel):
    phase: Literal["Pending", "Available", "Bound", "Released", "Failed"] | None = None
    message: str | None = None
    reason: str | None = None
    last_phase_transition_time: datetime | None = None


class PersistentVolume(Resource):
    API_VERSION = "v1"
    KIND = "PersistentVolume"
    PLURAL = "persistentvolumes"
    SHORT_NAMES = ("pv",)
    NAMESPACED = False
    HAS_STATUS = True

    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)


class VolumeResourceRequirements(KubeModel):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class TypedObjectReference(KubeModel):
    api_group: str | None = None
    kind: str = ""
    name: str = ""
    namespace: str | None = None


class PersistentVolumeClaimSpec(KubeModel):
    access_modes: list[AccessMode] | None = None
    selector: Opaque | None = None  # metav1.LabelSelector, matched against PV labels
    resources: VolumeResourceRequirements = Field(default_factory=VolumeResourceRequirements,
                                                  exclude_if=lambda r: r == _NO_RESOURCES)
    volume_name: str | None = None
    storage_class_name: str | None = None
    volume_mode: VolumeMode | None = None
    data_source: TypedObjectReference | None = None
    data_source_ref: TypedObjectReference | None = None
    volume_attributes_class_name: str | None = None


_NO_RESOURCES = VolumeResourceRequirements()


class PersistentVolumeClaimStatus(KubeModel):
    phase: Literal["Pending", "Bound", "Lost"] | None = None
    access_modes: list[AccessMode] | None = None
    capacity: ResourceList | None = None
    conditions: list[Opaque] = Field(default_factory=list, exclude_if=_is_empty)
    allocated_resources: ResourceList | None = None
    allocated_resource_statuses: dict[str, str] | None = None
    current_volume_attributes_class_name: str | None = None
    modify_volume_status: Opaque | None = None


class PersistentVolumeClaim(Resource):
    API_VERSION = "v1"
    KIND = "PersistentVolumeClaim"
    PLURAL = "persistentvolumeclaims"
    SHORT_NAMES = ("pvc",)
    NAMESPACED = True
    HAS_STATUS = True

    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)


class TopologySelectorLabelRequirement(KubeModel):
    key: str
    values: list[str] = Field(default_factory=list)


class TopologySelectorTerm(KubeModel):
    match_label_expressions: list[TopologySelectorLabelRequirement] | None = None


class StorageClass(Resource):
    """storage.k8s.io/v1 StorageClass (cluster-scoped; top-level fields, no spec)."""

    API_VERSION = "storage.k8s.io/v1"
    KIND = "StorageClass"
    PLURAL = "storageclasses"
    SHORT_NAMES = ("sc",)
    NAMESPACED = False

    provisioner: str = ""
    parameters: dict[str, str] | None = None
    reclaim_policy: ReclaimPolicy | None = None
    mount_options: list[str] | None = None
    allow_volume_expansion: bool | None = None
    volume_binding_mode: BindingMode | None = None
    allowed_topologies: list[TopologySelectorTerm] | None = None


# --- helpers everyone reading these objects needs (component-helpers/storage/volume) -------


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """The class a claim asks for: the beta annotation first, then spec.storageClassName."""
    ann = pvc.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pvc.spec.storage_class_name or ""


def claim_has_class(pvc: PersistentVolumeClaim) -> bool:
    return ANN_BETA_STORAGE_CLASS in pvc.metadata.annotations or \
        pvc.spec.storage_class_name is not None


def volume_class(pv: PersistentVolume) -> str:
    ann = pv.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pv.spec.storage_class_name or ""


def is_claim_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """The PV controller finished binding it (volumeName and the bind-completed note)."""
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """`pv` is pre-bound or bound to `pvc` (a claimRef uid, when set, must match too)."""
    ref = pv.spec.claim_ref
    if ref is None:
        return False
    if ref.name != pvc.name or (ref.namespace or "") != (pvc.namespace or ""):
        return False
    return not ref.uid or ref.uid == pvc.metadata.uid


def claim_ref(pvc: PersistentVolumeClaim) -> ObjectReference:
    """The claimRef a PV bound to `pvc` carries (reference.GetReference of the claim)."""
    return ObjectReference(kind="PersistentVolumeClaim", api_version="v1", name=pvc.name,
                           namespace=pvc.namespace, uid=pvc.metadata.uid,
                           resource_version=pvc.metadata.resource_version)


def storage_request(pvc: PersistentVolumeClaim) -> float:
    """The claim's `resources.requests.storage` in bytes (0 when unset or malformed)."""
    return _bytes((pvc.spec.resources.requests or {}).get("storage"))


def storage_capacity(pv: PersistentVolume) -> float:
    """The volume's `capacity.storage` in bytes (0 when unset or malformed)."""
    return _bytes((pv.spec.capacity or {}).get("storage"))


def _bytes(value: object) -> float:
    if value is None:
        return 0.0
    try:
        return parse_quantity(value)  # type: ignore[arg-type]
    except ValueError:
        return 0.0


def is_default_class(sc: StorageClass) -> bool:
    return sc.metadata.annotations.get(ANN_DEFAULT_CLASS) == "true"


for _cls in (PersistentVolume, PersistentVolumeClaim, StorageClass):
    _registry.register(_cls)

__all__ = [
    "ACCESS_MODES",
    "ANN_BETA_STORAGE_CLASS",
    "ANN_BETA_STORAGE_PROVISIONER",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DEFAULT_CLASS",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "IMMEDIATE",
    "NOT_SUPPORTED_PROVISIONER",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "SOURCE_FIELDS",
    "StorageClass",
    "TopologySelectorLabelRequirement",
    "TopologySelectorTerm",
    "TypedObjectReference",
    "VOLUME_SOURCES",
    "VolumeNodeAffinity",
    "VolumeResourceRequirements",
    "WAIT_FOR_FIRST_CONSUMER",
    "claim_class",
    "claim_has_class",
    "claim_ref",
    "is_claim_fully_bound",
    "is_default_class",
    "is_volume_bound_to_claim",
    "storage_capacity",
    "storage_request",
    "volume_class",
]
