"""grove.io/v1alpha1: PodCliqueSet, PodClique, PodCliqueScalingGroup (this module),
ClusterTopologyBinding and the legacy ClusterTopology (grove_topology.py), and the
scheduler.grove.io PodGang (podgang.py), all re-exported here.

Field names and schema are Grove's current API (ai-dynamo/grove operator/api/core/v1alpha1):
Grove manifests load unchanged, Phalanx writes nothing Grove's CRDs would refuse, and the
CRDs generated from these models hold Grove's schema (crdtypes.py; the parity test is
tests/api/test_grove_crd_parity.py). Optional fields stay None when unset, so a manifest
dumps back exactly as written; `default_podcliqueset` applies Grove's defaults (run it at
admission).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StringConstraints

from .base import Condition, KubeModel, Resource, _is_empty
from .crdtypes import Int32, Int64, crd, python_only, rule, validations
from .duration import DURATION_PATTERN, parse_duration
from .grove_extras import (
    PCSGResourceSharingSpec,
    PCSResourceSharingSpec,
    PodCliqueScalingGroupUpdateProgress,
    PodCliqueSetUpdateProgress,
    PodCliqueUpdateProgress,
    ResourceClaimTemplateConfig,
    ResourceSharingSpec,
)
from .grove_topology import (
    DOMAIN_PATTERN,
    GROVE_API_VERSION,
    TOPOLOGY_DOMAINS,
    AnyTopology,
    ClusterTopology,
    ClusterTopologyBinding,
    ClusterTopologyBindingSpec,
    ClusterTopologyBindingStatus,
    ClusterTopologySpec,
    SchedulerTopologyBinding,
    SchedulerTopologyStatus,
    TopologyConstraint,
    TopologyDomain,
    TopologyLevel,
    TopologyPackConstraint,
)
from .pod import PodSpec
from .podgang import (
    PODGANG_DISRUPTION_TARGET,
    PODGANG_INITIALIZED,
    PODGANG_READY,
    PODGANG_SCHEDULED,
    PODGANG_UNHEALTHY,
    REASON_PODS_PENDING,
    REASON_READY,
    NamespacedName,
    PodGang,
    PodGangGroup,
    PodGangPackConstraint,
    PodGangPhase,
    PodGangSpec,
    PodGangStatus,
    PodGangTopologyConstraint,
    TopologyConstraintGroupConfig,
)

__all__ = [
    "DOMAIN_PATTERN", "PODGANG_DISRUPTION_TARGET", "PODGANG_INITIALIZED", "PODGANG_READY",
    "PODGANG_SCHEDULED", "PODGANG_UNHEALTHY", "REASON_PODS_PENDING", "REASON_READY",
    "TOPOLOGY_DOMAINS", "AnyTopology", "AutoScalingConfig", "CliqueStartupType",
    "ClusterTopology", "ClusterTopologyBinding", "ClusterTopologyBindingSpec",
    "ClusterTopologyBindingStatus", "ClusterTopologySpec", "HeadlessServiceConfig", "LastError",
    "NamespacedName", "PodClique", "PodCliqueScalingGroup", "PodCliqueScalingGroupConfig",
    "PodCliqueScalingGroupSpec", "PodCliqueScalingGroupStatus", "PodCliqueSet",
    "PodCliqueSetSpec", "PodCliqueSetStatus", "PodCliqueSetTemplateSpec",
    "PodCliqueSetUpdateStrategy", "PodCliqueSpec", "PodCliqueStatus", "PodCliqueTemplateSpec",
    "PodGang", "PodGangGroup", "PodGangPackConstraint", "PodGangPhase", "PodGangSpec",
    "PodGangStatus", "PodGangStatusSummary", "PodGangTopologyConstraint",
    "SchedulerTopologyBinding", "SchedulerTopologyStatus", "TopologyConstraint",
    "TopologyConstraintGroupConfig", "TopologyDomain", "TopologyLevel", "TopologyPackConstraint",
    "default_podcliqueset",
]

DEFAULT_TERMINATION_DELAY = "4h"

GoDuration = Annotated[str, StringConstraints(pattern=DURATION_PATTERN)]
CliqueStartupType = Literal[
    "CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"
]
Opaque = dict[str, Any]
_ATOMIC = crd(**{"x-kubernetes-list-type": "atomic"})
# Checked in Python and by admission (Grove's webhook), not by Grove's CRD schema.
_INT32_NO_MIN = python_only("minimum", format="int32")
_INT32_DEFAULT_1 = python_only("minimum", format="int32", default=1)


def _counter(*, crd_default: bool = True) -> Any:
    """A status count: 0 when unset, left out of dumps when 0 (Go's omitempty). Grove's CRD
    defaults most counts to 0 on the server; `crd_default=False` for the ones it does not."""
    extra: dict[str, Any] = {"format": "int32"}  # (the Field's extra replaces Int32's)
    if not crd_default:
        extra["default"] = None  # a None default is not emitted
    return Field(default=0, exclude_if=_is_empty, json_schema_extra=extra)


# --- cliques and scaling groups ---------------------------------------------------------------


class AutoScalingConfig(KubeModel):
    min_replicas: Int32 | None = None
    max_replicas: Int32
    # autoscaling/v2 MetricSpecs, kept as written (see phalanx.operator.admission).
    metrics: list[Opaque] | None = Field(default=None, json_schema_extra=_ATOMIC)


class PodCliqueSpec(KubeModel):
    """A clique: `replicas` identical pods of one role. Also the spec of a PodClique."""

    role_name: str
    pod_spec: PodSpec
    replicas: Int32 = Field(ge=0, json_schema_extra=_INT32_NO_MIN)
    # Pods that must be gang-scheduled / stay available; defaults to replicas.
    min_available: Int32 | None = Field(default=None, ge=0, json_schema_extra=_INT32_NO_MIN)
    starts_after: list[str] | None = None
    auto_scaling_config: AutoScalingConfig | None = None


class PodCliqueTemplateSpec(KubeModel):
    name: str = Field(min_length=1, json_schema_extra=python_only("minLength"))
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    topology_constraint: TopologyConstraint | None = None
    resource_sharing: list[ResourceSharingSpec] | None = None
    spec: PodCliqueSpec


class PodCliqueScalingGroupConfig(KubeModel):
    """Cliques scaled together (e.g. a leader and its workers): `replicas` copies of them all."""

    name: str = Field(min_length=1, json_schema_extra=python_only("minLength"))
    clique_names: list[str] = Field(min_length=1, json_schema_extra=python_only("minItems"))
    annotations: dict[str, str] | None = None
    replicas: Int32 | None = Field(default=None, ge=0, json_schema_extra=_INT32_DEFAULT_1)
    min_available: Int32 | None = Field(default=None, ge=0, json_schema_extra=_INT32_DEFAULT_1)
    scale_config: AutoScalingConfig | None = None
    resource_sharing: list[PCSGResourceSharingSpec] | None = None
    topology_constraint: TopologyConstraint | None = None


class HeadlessServiceConfig(KubeModel):
    model_config = ConfigDict(json_schema_extra=crd(required=["publishNotReadyAddresses"]))

    publish_not_ready_addresses: bool | None = Field(default=None,
                                                     json_schema_extra=crd(default=True))


_CLIQUES_BY_NAME = crd(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})


class PodCliqueSetTemplateSpec(KubeModel):
    cliques: list[PodCliqueTemplateSpec] = Field(
        min_length=1, json_schema_extra={**_CLIQUES_BY_NAME, **python_only("minItems")})
    clique_startup_type: CliqueStartupType | None = Field(
        default=None, json_schema_extra=crd(default="CliqueStartupTypeAnyOrder"))
    priority_class_name: str | None = None
    headless_service_config: HeadlessServiceConfig | None = None
    topology_constraint: TopologyConstraint | None = None
    # A Go duration ("4h", "30m"); see PodCliqueSet.termination_delay_seconds().
    termination_delay: GoDuration | None = Field(
        default=None, json_schema_extra=python_only("pattern"))  # Grove's webhook parses it
    resource_claim_templates: list[ResourceClaimTemplateConfig] | None = None
    resource_sharing: list[PCSResourceSharingSpec] | None = None
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] | None = None


class PodCliqueSetUpdateStrategy(KubeModel):
    type: Literal["RollingRecreate", "OnDelete"] | None = Field(
        default=None, json_schema_extra=crd(default="RollingRecreate"))


class PodCliqueSetSpec(KubeModel):
    replicas: Int32 = Field(default=0, ge=0, exclude_if=_is_empty,
                            json_schema_extra=_INT32_NO_MIN)
    update_strategy: PodCliqueSetUpdateStrategy | None = None
    template: PodCliqueSetTemplateSpec


class LastError(KubeModel):
    code: str
    description: str
    observed_at: datetime


class PodGangStatusSummary(KubeModel):
    """An entry of PodCliqueSet status.podGangStatuses."""

    name: str
    phase: PodGangPhase
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


def _required(*names: str) -> ConfigDict:
    """A model whose CRD schema lists `names` as required (Go fields without omitempty,
    which the server defaults), though Python fills them in itself."""
    return ConfigDict(json_schema_extra=crd(required=list(names)))


class PodCliqueSetStatus(KubeModel):
    model_config = _required("availableReplicas", "updatedReplicas")

    observed_generation: Int64 | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    last_errors: list[LastError] | None = None
    replicas: Int32 = _counter(crd_default=False)
    updated_replicas: Int32 = _counter()
    available_replicas: Int32 = _counter()
    hpa_pod_selector: str | None = None
    pod_gang_statuses: list[PodGangStatusSummary] | None = None
    current_generation_hash: str | None = None
    update_progress: PodCliqueSetUpdateProgress | None = None


_SCALE_STATUS = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
}

# New PodCliqueSets may not use the deprecated packDomain; objects created with it keep it
# (the rules pass on every update: `oldSelf` has a value).
_NO_NEW_PACK_DOMAIN = "packDomain is deprecated and cannot be used on new workloads; use " \
    "pack.required"
_PACK_DOMAIN_RULES = validations(
    rule("oldSelf.hasValue() || !has(self.spec.template.topologyConstraint) || "
         "!has(self.spec.template.topologyConstraint.packDomain)", _NO_NEW_PACK_DOMAIN,
         reason="FieldValueForbidden", field_path=".spec.template.topologyConstraint.packDomain",
         optional_old_self=True),
    rule("oldSelf.hasValue() || !has(self.spec.template.cliques) || "
         "self.spec.template.cliques.all(c, !has(c.topologyConstraint) || "
         "!has(c.topologyConstraint.packDomain))", _NO_NEW_PACK_DOMAIN,
         reason="FieldValueForbidden", field_path=".spec.template.cliques",
         optional_old_self=True),
    rule("oldSelf.hasValue() || !has(self.spec.template.podCliqueScalingGroups) || "
         "self.spec.template.podCliqueScalingGroups.all(g, !has(g.topologyConstraint) || "
         "!has(g.topologyConstraint.packDomain))", _NO_NEW_PACK_DOMAIN,
         reason="FieldValueForbidden", field_path=".spec.template.podCliqueScalingGroups",
         optional_old_self=True),
)


class PodCliqueSet(Resource):
    model_config = ConfigDict(json_schema_extra=_PACK_DOMAIN_RULES)

    API_VERSION = GROVE_API_VERSION
    KIND = "PodCliqueSet"
    PLURAL = "podcliquesets"
    SHORT_NAMES = ("pcs",)
    NAMESPACED = True
    HAS_STATUS = True
    SCALE: ClassVar[dict[str, str] | None] = {
        **_SCALE_STATUS,
        "labelSelectorPath": ".status.hpaPodSelector",
    }
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
        {"name": "Updated", "type": "integer", "jsonPath": ".status.updatedReplicas"},
        {"name": "PCLQs-Updated", "type": "integer",
         "jsonPath": ".status.updateProgress.updatedPodCliquesCount"},
        {"name": "PCLQs-Total", "type": "integer",
         "jsonPath": ".status.updateProgress.totalPodCliquesCount"},
        {"name": "PCSGs-Updated", "type": "integer",
         "jsonPath": ".status.updateProgress.updatedPodCliqueScalingGroupsCount"},
        {"name": "PCSGs-Total", "type": "integer",
         "jsonPath": ".status.updateProgress.totalPodCliqueScalingGroupsCount"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodCliqueSetSpec
    status: PodCliqueSetStatus = Field(default_factory=PodCliqueSetStatus)

    def clique(self, name: str) -> PodCliqueTemplateSpec | None:
        for c in self.spec.template.cliques:
            if c.name == name:
                return c
        return None

    def scaling_group_of(self, clique_name: str) -> PodCliqueScalingGroupConfig | None:
        """The scaling group a clique belongs to (None for a standalone clique)."""
        for group in self.spec.template.pod_clique_scaling_groups or ():
            if clique_name in group.clique_names:
                return group
        return None

    def standalone_cliques(self) -> list[PodCliqueTemplateSpec]:
        return [c for c in self.spec.template.cliques if self.scaling_group_of(c.name) is None]

    def termination_delay_seconds(self) -> float | None:
        delay = self.spec.template.termination_delay
        return parse_duration(delay) if delay is not None else None


class PodCliqueStatus(KubeModel):
    model_config = _required("readyReplicas", "scheduleGatedReplicas", "scheduledReplicas",
                             "updatedReplicas")

    observed_generation: Int64 | None = None
    last_errors: list[LastError] | None = None
    replicas: Int32 = _counter(crd_default=False)
    ready_replicas: Int32 = _counter()
    updated_replicas: Int32 = _counter()
    schedule_gated_replicas: Int32 = _counter()
    scheduled_replicas: Int32 = _counter()
    hpa_pod_selector: str | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    current_pod_clique_set_generation_hash: str | None = None
    current_pod_template_hash: str | None = None
    update_progress: PodCliqueUpdateProgress | None = None


class PodClique(Resource):
    API_VERSION = GROVE_API_VERSION
    KIND = "PodClique"
    PLURAL = "podcliques"
    SHORT_NAMES = ("pclq",)
    NAMESPACED = True
    HAS_STATUS = True
    SCALE: ClassVar[dict[str, str] | None] = {
        **_SCALE_STATUS,
        "labelSelectorPath": ".status.hpaPodSelector",
    }
    # Grove's, column for column (`kubectl get pclq`; priority 1: `-o wide` only).
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "MinAvail", "type": "integer", "jsonPath": ".spec.minAvailable"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        {"name": "Scheduled", "type": "integer", "jsonPath": ".status.scheduledReplicas"},
        {"name": "Updated", "type": "integer", "jsonPath": ".status.updatedReplicas"},
        {"name": "Gated", "type": "integer", "priority": 1,
         "jsonPath": ".status.scheduleGatedReplicas"},
        {"name": "MinBreached", "type": "string", "priority": 1,
         "jsonPath": '.status.conditions[?(@.type=="MinAvailableBreached")].status'},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodCliqueSpec
    status: PodCliqueStatus = Field(default_factory=PodCliqueStatus)


class PodCliqueScalingGroupSpec(KubeModel):
    model_config = _required("cliqueNames", "replicas")

    replicas: Int32 = 1
    min_available: Int32 | None = Field(default=None, json_schema_extra=crd(default=1))
    clique_names: list[str] = Field(default_factory=list)


class PodCliqueScalingGroupStatus(KubeModel):
    model_config = _required("availableReplicas", "scheduledReplicas", "updatedReplicas")

    replicas: Int32 = _counter(crd_default=False)
    scheduled_replicas: Int32 = _counter()
    available_replicas: Int32 = _counter()
    updated_replicas: Int32 = _counter()
    selector: str | None = None
    observed_generation: Int64 | None = None
    last_errors: list[LastError] | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    current_pod_clique_set_generation_hash: str | None = None
    update_progress: PodCliqueScalingGroupUpdateProgress | None = None


class PodCliqueScalingGroup(Resource):
    model_config = _required("spec")

    API_VERSION = GROVE_API_VERSION
    KIND = "PodCliqueScalingGroup"
    PLURAL = "podcliquescalinggroups"
    SHORT_NAMES = ("pcsg",)
    NAMESPACED = True
    HAS_STATUS = True
    SCALE: ClassVar[dict[str, str] | None] = {
        **_SCALE_STATUS,
        "labelSelectorPath": ".status.selector",
    }
    # Grove's, column for column (`kubectl get pcsg`; priority 1: `-o wide` only).
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "MinAvail", "type": "integer", "jsonPath": ".spec.minAvailable"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
        {"name": "Scheduled", "type": "integer", "jsonPath": ".status.scheduledReplicas"},
        {"name": "Updated", "type": "integer", "jsonPath": ".status.updatedReplicas"},
        {"name": "PCLQs-Updated", "type": "integer",
         "jsonPath": ".status.updateProgress.updatedPodCliquesCount"},
        {"name": "PCLQs-Total", "type": "integer",
         "jsonPath": ".status.updateProgress.totalPodCliquesCount"},
        {"name": "MinBreached", "type": "string", "priority": 1,
         "jsonPath": '.status.conditions[?(@.type=="MinAvailableBreached")].status'},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodCliqueScalingGroupSpec = Field(default_factory=PodCliqueScalingGroupSpec)
    status: PodCliqueScalingGroupStatus = Field(default_factory=PodCliqueScalingGroupStatus)


# --- defaulting -------------------------------------------------------------------------------


def default_podcliqueset(pcs: PodCliqueSet) -> PodCliqueSet:
    """Apply Grove's defaults in place (and return `pcs`), as Grove's defaulting webhook does.

    cliqueStartupType AnyOrder; terminationDelay 4h; a clique's replicas 0 becomes 1, and
    its minAvailable and autoScalingConfig.minReplicas, when unset, are its replicas as
    written (so 0 stays 0 there, and is refused); each scaling group's replicas =
    minAvailable = 1 when unset and scaleConfig.minReplicas = its replicas; a headless
    service config publishes not-ready addresses; update strategy RollingRecreate.
    """
    t = pcs.spec.template
    if t.clique_startup_type is None:
        t.clique_startup_type = "CliqueStartupTypeAnyOrder"
    if t.termination_delay is None:
        t.termination_delay = DEFAULT_TERMINATION_DELAY
    if t.headless_service_config is None:
        t.headless_service_config = HeadlessServiceConfig(publish_not_ready_addresses=True)
    elif t.headless_service_config.publish_not_ready_addresses is None:
        t.headless_service_config.publish_not_ready_addresses = True
    if pcs.spec.update_strategy is None:
        pcs.spec.update_strategy = PodCliqueSetUpdateStrategy(type="RollingRecreate")
    elif pcs.spec.update_strategy.type is None:
        pcs.spec.update_strategy.type = "RollingRecreate"
    for clique in t.cliques:
        spec = clique.spec
        written = spec.replicas
        if spec.replicas == 0:
            spec.replicas = 1
        if spec.min_available is None:
            spec.min_available = written
        if spec.auto_scaling_config is not None and spec.auto_scaling_config.min_replicas is None:
            spec.auto_scaling_config.min_replicas = written
    for group in t.pod_clique_scaling_groups or ():
        if group.replicas is None:
            group.replicas = 1
        if group.min_available is None:
            group.min_available = 1
        if group.scale_config is not None and group.scale_config.min_replicas is None:
            group.scale_config.min_replicas = group.replicas
    return pcs
