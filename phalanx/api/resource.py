"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceSlice,
ResourceClaim and ResourceClaimTemplate, with every field Kubernetes 1.36 has.

The models accept what client-go's types accept (Go zero values included); what the API
server defaults and refuses is in `phalanx.cluster.resourceclaims` (admission on the embedded
cluster). Opaque driver parameters (`config[].opaque.parameters`), capacity request
policies and device status data are kept as written.

Helpers at the bottom answer the questions every consumer asks: which claim a pod's entry
names (`pod_claim_name`), whether a claim is reserved for a pod, the devices an allocation
holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, ObjectMeta, Resource, _is_empty
from .pod import NodeSelector, Opaque, QuantityValue

API_VERSION = "resource.k8s.io/v1"
GROUP = "resource.k8s.io"
# Added by the scheduler when it allocates a claim; the resourceclaim controller (or the
# scheduler) removes it once the claim is deallocated.
FINALIZER = "resource.kubernetes.io/delete-protection"
# Annotation of a claim generated from a template: `<namespace>/<pod>` hints which pod
# (and which of its entries) the claim was made for (kube's PodResourceClaimAnnotation).
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"

EXACT_COUNT = "ExactCount"
ALL = "All"
AllocationMode = str  # "ExactCount" | "All" (a newer mode is refused by name at admission)
TaintEffect = Literal["None", "NoSchedule", "NoExecute"]

# Limits (k8s.io/api/resource/v1).
ALLOCATION_RESULTS_MAX_SIZE = 32
RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_MAX_SIZE = 8
DEVICE_REQUESTS_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64  # when a device uses taints or consumes counters
MAX_ATTRIBUTES_AND_CAPACITIES = 32
CEL_MAX_LENGTH = 10 * 1024


# --- devices (ResourceSlice) ---------------------------------------------------------------


class DeviceAttribute(KubeModel):
    """Exactly one value; the list forms need the DRAListTypeAttributes gate (alpha)."""

    int_value: int | None = Field(default=None, alias="int")
    bool_value: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    ints: list[int] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None

    def value(self) -> Any:
        """The scalar value (int, bool, str; a version as its string), or None."""
        for v in (self.int_value, self.bool_value, self.string, self.version):
            if v is not None:
                return v
        return None

    def kind(self) -> str:
        """"int", "bool", "string", "version" (or the list kind, or "")."""
        for name in ("int_value", "bool_value", "string", "version", "ints", "bools",
                     "strings", "versions"):
            if getattr(self, name) is not None:
                return name.removesuffix("_value")
        return ""


class DeviceCapacity(KubeModel):
    value: QuantityValue
    request_policy: Opaque | None = None  # consumable capacity (DRAConsumableCapacity)


class Counter(KubeModel):
    value: QuantityValue


class CounterSet(KubeModel):
    name: str
    counters: dict[str, Counter] = Field(default_factory=dict, exclude_if=_is_empty)


class DeviceCounterConsumption(KubeModel):
    counter_set: str
    counters: dict[str, Counter] = Field(default_factory=dict, exclude_if=_is_empty)


class DeviceTaint(KubeModel):
    key: str
    value: str | None = None
    effect: TaintEffect
    time_added: datetime | None = None


class Device(KubeModel):
    name: str
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict, exclude_if=_is_empty)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict, exclude_if=_is_empty)
    consumes_counters: list[DeviceCounterConsumption] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] | None = None
    binds_to_node: bool | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    allow_multiple_allocations: bool | None = None
    node_allocatable_resource_mappings: Opaque | None = None


class ResourcePool(KubeModel):
    name: str
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(KubeModel):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    devices: list[Device] = Field(default_factory=list, exclude_if=_is_empty)
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(Resource):
    API_VERSION = API_VERSION
    KIND = "ResourceSlice"
    PLURAL = "resourceslices"
    NAMESPACED = False

    spec: ResourceSliceSpec


# --- requests (ResourceClaim) --------------------------------------------------------------


class CELDeviceSelector(KubeModel):
    expression: str


class DeviceSelector(KubeModel):
    cel: CELDeviceSelector | None = None


class DeviceToleration(KubeModel):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None  # defaulted to Equal
    value: str | None = None
    effect: TaintEffect | Literal[""] | None = None
    toleration_seconds: int | None = None


class CapacityRequirements(KubeModel):
    requests: dict[str, QuantityValue] = Field(default_factory=dict, exclude_if=_is_empty)


class ExactDeviceRequest(KubeModel):
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: AllocationMode | None = None  # defaulted to ExactCount
    count: int | None = None  # defaulted to 1 for ExactCount
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(KubeModel):
    name: str
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: AllocationMode | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceRequest(KubeModel):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(KubeModel):
    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None  # DRAConsumableCapacity


class OpaqueDeviceConfiguration(KubeModel):
    driver: str
    parameters: Any = None


class DeviceClaimConfiguration(KubeModel):
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(KubeModel):
    requests: list[DeviceRequest] = Field(default_factory=list, exclude_if=_is_empty)
    constraints: list[DeviceConstraint] | None = None
    config: list[DeviceClaimConfiguration] | None = None


class ResourceClaimSpec(KubeModel):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(KubeModel):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, QuantityValue] | None = None


class DeviceAllocationConfiguration(KubeModel):
    source: Literal["FromClass", "FromClaim"] | Literal[""] = ""
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(KubeModel):
    results: list[DeviceRequestAllocationResult] = Field(default_factory=list,
                                                         exclude_if=_is_empty)
    config: list[DeviceAllocationConfiguration] | None = None


class AllocationResult(KubeModel):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: datetime | None = None


class ResourceClaimConsumerReference(KubeModel):
    api_group: str | None = None
    resource: str
    name: str
    uid: str


class ResourceClaimStatus(KubeModel):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None
    devices: list[Opaque] | None = None


class ResourceClaim(Resource):
    API_VERSION = API_VERSION
    KIND = "ResourceClaim"
    PLURAL = "resourceclaims"
    NAMESPACED = True
    HAS_STATUS = True

    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(Resource):
    API_VERSION = API_VERSION
    KIND = "ResourceClaimTemplate"
    PLURAL = "resourceclaimtemplates"
    NAMESPACED = True

    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


# --- classes -------------------------------------------------------------------------------


class DeviceClassConfiguration(KubeModel):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(KubeModel):
    selectors: list[DeviceSelector] | None = None
    config: list[DeviceClassConfiguration] | None = None
    extended_resource_name: str | None = None


class DeviceClass(Resource):
    API_VERSION = API_VERSION
    KIND = "DeviceClass"
    PLURAL = "deviceclasses"
    NAMESPACED = False

    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


for _cls in (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate):
    _registry.register(_cls)


# --- helpers -------------------------------------------------------------------------------


def pod_claim_name(pod: Any, entry: dict[str, Any]) -> tuple[str | None, bool, str]:
    """resourceclaim.Name: (the claim's name or None, whether the claim must be owned by
    the pod, an error or ""). A template entry names the claim recorded in the pod's
    `status.resourceClaimStatuses`; None there (and no error) means the controller decided
    no claim is needed; no entry yet is an error (the claim is not created yet)."""
    name = entry.get("name", "")
    where = f'pod "{pod.metadata.namespace or ""}/{pod.metadata.name or ""}"'
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False, ""
    if entry.get("resourceClaimTemplateName"):
        for st in pod.status.resource_claim_statuses or ():
            if isinstance(st, dict) and st.get("name") == name:
                claim = st.get("resourceClaimName")
                return (str(claim) if claim else None), True, ""
        return None, False, f"{where}: ResourceClaim not created yet"
    return None, False, (f"{where}, spec.resourceClaim {name!r}: none of the supported "
                         "fields are set")


def is_for_pod(pod: Any, claim: ResourceClaim) -> str:
    """resourceclaim.IsForPod: "" when the pod owns (controls) the claim, else why not."""
    c, p = f"{claim.namespace}/{claim.name}", f"{pod.metadata.namespace}/{pod.metadata.name}"
    if claim.namespace != pod.metadata.namespace:
        return f"ResourceClaim {c} is not in the same namespace as Pod {p}"
    if not is_owned_by(claim, pod.metadata.uid or ""):
        return f"ResourceClaim {c} was not created for Pod {p} (Pod is not owner)"
    return ""


def is_reserved_for(claim: ResourceClaim, uid: str) -> bool:
    return any(r.uid == uid for r in claim.status.reserved_for or ())


def can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.status.reserved_for or ()) < RESERVED_FOR_MAX_SIZE


def is_owned_by(claim: ResourceClaim, uid: str) -> bool:
    ref = claim.metadata.controller_ref()
    return ref is not None and ref.uid == uid


def pod_reference(pod: Any) -> ResourceClaimConsumerReference:
    return ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name or "",
                                          uid=pod.metadata.uid or "")


def allocated_devices(claim: ResourceClaim) -> list[tuple[str, str, str]]:
    """(driver, pool, device) of every device the claim's allocation holds exclusively
    (admin access does not hold a device)."""
    alloc = claim.status.allocation
    if alloc is None:
        return []
    return [(r.driver, r.pool, r.device) for r in alloc.devices.results if not r.admin_access]
