"""Kubernetes built-in kinds: Pod (in pod.py, re-exported here), Node, Event, PriorityClass,
Namespace, ConfigMap, Service and Lease.

Field names are Kubernetes'. Objects read from a real API server may carry fields newer
than these models: load those with `registry.from_dict(data, lenient=True)`.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from pydantic import Field

from .base import Condition, KubeModel, MicroTime, Resource, _is_empty, get_condition
from .pod import (
    DEFAULT_SCHEDULER,
    Affinity,
    Container,
    ContainerPort,
    EnvVar,
    NodeAffinity,
    NodeSelector,
    NodeSelectorOperator,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Opaque,
    Pod,
    PodCondition,
    PodPhase,
    PodSchedulingGate,
    PodSchedulingGroup,
    PodSpec,
    PodStatus,
    PreferredSchedulingTerm,
    QuantityValue,
    ResourceList,
    ResourceRequirements,
    TaintEffect,
    Toleration,
    WorkloadReference,
)
from .quantity import parse_quantity

__all__ = [
    "DEFAULT_SCHEDULER",
    "Affinity",
    "ConfigMap",
    "Container",
    "ContainerPort",
    "EnvVar",
    "Event",
    "EventSeries",
    "EventSource",
    "Lease",
    "LeaseSpec",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorOperator",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "ObjectReference",
    "Opaque",
    "Pod",
    "PodCondition",
    "PodPhase",
    "PodSchedulingGate",
    "PodSchedulingGroup",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "QuantityValue",
    "ResourceList",
    "ResourceRequirements",
    "Service",
    "ServiceSpec",
    "Taint",
    "TaintEffect",
    "Toleration",
    "WorkloadReference",
]


# --- Node -----------------------------------------------------------------------------------


class Taint(KubeModel):
    key: str
    effect: TaintEffect
    value: str | None = None
    time_added: datetime | None = None


class NodeSpec(KubeModel):
    unschedulable: bool = Field(default=False, exclude_if=lambda v: not v)
    taints: list[Taint] | None = None
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    pod_cidrs: list[str] | None = Field(default=None, alias="podCIDRs")
    provider_id: str | None = Field(default=None, alias="providerID")
    external_id: str | None = Field(default=None, alias="externalID")
    config_source: Opaque | None = None


class NodeCondition(Condition):
    """Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable."""

    last_heartbeat_time: datetime | None = None


class NodeStatus(KubeModel):
    capacity: ResourceList = Field(default_factory=dict, exclude_if=_is_empty)
    allocatable: ResourceList = Field(default_factory=dict, exclude_if=_is_empty)
    conditions: list[NodeCondition] = Field(default_factory=list, exclude_if=_is_empty)
    phase: str | None = None
    addresses: list[Opaque] | None = None
    daemon_endpoints: Opaque | None = None
    node_info: Opaque | None = None
    images: list[Opaque] | None = None
    volumes_in_use: list[str] | None = None
    volumes_attached: list[Opaque] | None = None
    config: Opaque | None = None
    runtime_handlers: list[Opaque] | None = None
    features: Opaque | None = None
    declared_features: list[str] | None = None

    @cached_property
    def allocatable_resources(self) -> dict[str, float]:
        """allocatable (capacity when unset) as floats; cached, read-only."""
        source = self.allocatable or self.capacity
        return {k: parse_quantity(v) for k, v in source.items()}

    def invalidate_allocatable(self) -> None:
        self.__dict__.pop("allocatable_resources", None)


class Node(Resource):
    API_VERSION = "v1"
    KIND = "Node"
    PLURAL = "nodes"
    SHORT_NAMES = ("no",)
    NAMESPACED = False
    HAS_STATUS = True

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    def allocatable_resources(self) -> dict[str, float]:
        """status.allocatable as floats (capacity when allocatable is unset), incl.
        nvidia.com/gpu. Cached on the status: treat as read-only, and replace `status` (or
        call `status.invalidate_allocatable()`) after changing it in place."""
        return self.status.allocatable_resources

    @property
    def is_ready(self) -> bool:
        cond = get_condition(self.status.conditions, "Ready")  # type: ignore[arg-type]
        return cond is not None and cond.status == "True"

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


# --- Event ----------------------------------------------------------------------------------


class ObjectReference(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EventSource(KubeModel):
    component: str | None = None
    host: str | None = None


class EventSeries(KubeModel):
    count: int | None = None
    last_observed_time: MicroTime | None = None


class Event(Resource):
    """core/v1 Event. No spec or status: its fields are top-level, as in Kubernetes."""

    API_VERSION = "v1"
    KIND = "Event"
    PLURAL = "events"
    SHORT_NAMES = ("ev",)
    NAMESPACED = True

    involved_object: ObjectReference
    reason: str | None = None
    message: str | None = None
    type: str | None = None  # "Normal" or "Warning" (Kubernetes may add more)
    count: int | None = None
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    event_time: MicroTime | None = None
    series: EventSeries | None = None
    source: EventSource | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None
    action: str | None = None
    related: ObjectReference | None = None

    # Readers: an Event written through events.k8s.io/v1 (phalanx.api.events) carries eventTime,
    # series and reportingComponent instead of firstTimestamp, count and source.
    @property
    def occurrences(self) -> int:
        """How often it happened: count, else series.count, else once."""
        return self.count or (self.series.count if self.series and self.series.count else 1)

    @property
    def first_seen(self) -> datetime | None:
        return self.first_timestamp or self.event_time

    @property
    def last_seen(self) -> datetime | None:
        if self.series is not None and self.series.last_observed_time is not None:
            return self.series.last_observed_time
        return self.last_timestamp or self.event_time or self.first_timestamp

    @property
    def reporter(self) -> str:
        """The component that wrote it: source.component, else reportingComponent."""
        if self.source is not None and self.source.component:
            return self.source.component
        return self.reporting_component or ""


# --- scheduling, namespaces, config, coordination -------------------------------------------


class PriorityClass(Resource):
    """scheduling.k8s.io/v1 PriorityClass (cluster-scoped; top-level fields)."""

    API_VERSION = "scheduling.k8s.io/v1"
    KIND = "PriorityClass"
    PLURAL = "priorityclasses"
    SHORT_NAMES = ("pc",)
    NAMESPACED = False

    value: int
    global_default: bool | None = None
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None
    description: str | None = None


class NamespaceSpec(KubeModel):
    finalizers: list[str] | None = None


class NamespaceStatus(KubeModel):
    phase: Literal["Active", "Terminating"] | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


class Namespace(Resource):
    API_VERSION = "v1"
    KIND = "Namespace"
    PLURAL = "namespaces"
    SHORT_NAMES = ("ns",)
    NAMESPACED = False
    HAS_STATUS = True

    spec: NamespaceSpec = Field(default_factory=NamespaceSpec)
    status: NamespaceStatus = Field(default_factory=NamespaceStatus)


class ConfigMap(Resource):
    API_VERSION = "v1"
    KIND = "ConfigMap"
    PLURAL = "configmaps"
    SHORT_NAMES = ("cm",)
    NAMESPACED = True

    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None
    immutable: bool | None = None


class ServiceSpec(KubeModel):
    """The parts of a Service Grove uses (headless per-replica services); rest opaque."""

    type: str | None = None
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    cluster_ips: list[str] | None = Field(default=None, alias="clusterIPs")
    selector: dict[str, str] | None = None
    ports: list[Opaque] | None = None
    publish_not_ready_addresses: bool | None = None
    session_affinity: str | None = None
    ip_families: list[str] | None = None
    ip_family_policy: str | None = None
    internal_traffic_policy: str | None = None
    external_traffic_policy: str | None = None
    external_name: str | None = None
    external_ips: list[str] | None = Field(default=None, alias="externalIPs")
    session_affinity_config: Opaque | None = None
    load_balancer_ip: str | None = Field(default=None, alias="loadBalancerIP")
    load_balancer_class: str | None = None
    load_balancer_source_ranges: list[str] | None = None
    allocate_load_balancer_node_ports: bool | None = None
    health_check_node_port: int | None = None
    traffic_distribution: str | None = None


class Service(Resource):
    API_VERSION = "v1"
    KIND = "Service"
    PLURAL = "services"
    SHORT_NAMES = ("svc",)
    NAMESPACED = True
    HAS_STATUS = True

    spec: ServiceSpec = Field(default_factory=ServiceSpec)
    status: dict[str, Any] = Field(default_factory=dict, exclude_if=_is_empty)


class LeaseSpec(KubeModel):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: MicroTime | None = None
    renew_time: MicroTime | None = None
    lease_transitions: int | None = None
    strategy: str | None = None
    preferred_holder: str | None = None


class Lease(Resource):
    """coordination.k8s.io/v1 Lease, for leader election."""

    API_VERSION = "coordination.k8s.io/v1"
    KIND = "Lease"
    PLURAL = "leases"
    NAMESPACED = True

    spec: LeaseSpec = Field(default_factory=LeaseSpec)
