"""grove.io/v1alpha1: PodCliqueSet, PodClique, PodCliqueScalingGroup, ClusterTopology
(and the scheduler.grove.io PodGang, defined in podgang.py and re-exported here).

Field names are Grove's (docs/api-reference/operator-api.md), so Grove manifests load
unchanged. Optional fields stay None when unset, so a manifest dumps back exactly as written;
`default_podcliqueset` applies Grove's defaults (run it at admission).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints

from .base import Condition, KubeModel, Resource, _is_empty
from .duration import DURATION_PATTERN, parse_duration
from .errors import PATTERN_HINTS
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
    "PODGANG_DISRUPTION_TARGET", "PODGANG_INITIALIZED", "PODGANG_READY", "PODGANG_SCHEDULED",
    "PODGANG_UNHEALTHY", "REASON_PODS_PENDING", "REASON_READY", "TOPOLOGY_DOMAINS",
    "AutoScalingConfig", "CliqueStartupType", "ClusterTopology", "ClusterTopologySpec",
    "HeadlessServiceConfig", "LastError", "NamespacedName", "PodClique", "PodCliqueScalingGroup",
    "PodCliqueScalingGroupConfig", "PodCliqueScalingGroupSpec", "PodCliqueScalingGroupStatus",
    "PodCliqueSet", "PodCliqueSetSpec", "PodCliqueSetStatus", "PodCliqueSetTemplateSpec",
    "PodCliqueSetUpdateStrategy", "PodCliqueSpec", "PodCliqueStatus", "PodCliqueTemplateSpec",
    "PodGang", "PodGangGroup", "PodGangPackConstraint", "PodGangPhase", "PodGangSpec",
    "PodGangStatus", "PodGangStatusSummary", "PodGangTopologyConstraint", "TopologyConstraint",
    "TopologyConstraintGroupConfig", "TopologyLevel", "TopologyPackConstraint",
    "default_podcliqueset",
]

GROVE_API_VERSION = "grove.io/v1alpha1"
DEFAULT_TERMINATION_DELAY = "4h"

# Grove's well-known domains, broadest first. Custom lower-case names are allowed too.
TOPOLOGY_DOMAINS = ("region", "zone", "datacenter", "block", "rack", "host", "numa")
DOMAIN_PATTERN = r"^[a-z][a-z0-9-]*$"
PATTERN_HINTS[DOMAIN_PATTERN] = (
    "a topology domain is lower-case letters, digits and '-', starting with a letter "
    f"(e.g. {', '.join(TOPOLOGY_DOMAINS)})"
)
TopologyDomain = Annotated[
    str, StringConstraints(min_length=1, max_length=63, pattern=DOMAIN_PATTERN)
]
GoDuration = Annotated[str, StringConstraints(pattern=DURATION_PATTERN)]
CliqueStartupType = Literal[
    "CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"
]
Opaque = dict[str, Any]


def _counter() -> Any:
    return Field(default=0, exclude_if=_is_empty)


# --- topology ---------------------------------------------------------------------------------


class TopologyPackConstraint(KubeModel):
    required: TopologyDomain | None = None
    preferred: TopologyDomain | None = None


class TopologyConstraint(KubeModel):
    """Where each replica of a PCS / scaling group / clique must be packed.

    `packDomain` is Grove's original field (a required domain); newer Grove spells it
    `pack.required` and adds `pack.preferred`. Both are accepted.
    """

    topology_name: str | None = None
    pack: TopologyPackConstraint | None = None
    pack_domain: TopologyDomain | None = None

    @property
    def required_domain(self) -> str | None:
        if self.pack is not None and self.pack.required:
            return self.pack.required
        return self.pack_domain

    @property
    def preferred_domain(self) -> str | None:
        return self.pack.preferred if self.pack is not None else None


class TopologyLevel(KubeModel):
    domain: TopologyDomain
    key: Annotated[str, StringConstraints(min_length=1, max_length=316)]


class ClusterTopologySpec(KubeModel):
    levels: list[TopologyLevel] = Field(min_length=1, max_length=7)


class ClusterTopology(Resource):
    """The cluster's topology hierarchy, broadest level first (cluster-scoped; no status)."""

    API_VERSION = GROVE_API_VERSION
    KIND = "ClusterTopology"
    PLURAL = "clustertopologies"
    SHORT_NAMES = ("ct",)
    NAMESPACED = False
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: ClusterTopologySpec

    def key_for(self, domain: str) -> str | None:
        """The node-label key of a domain ("rack" -> "topology.kubernetes.io/rack")."""
        for level in self.spec.levels:
            if level.domain == domain:
                return level.key
        return None

    def domains(self) -> list[str]:
        return [level.domain for level in self.spec.levels]


# --- cliques and scaling groups ---------------------------------------------------------------


class AutoScalingConfig(KubeModel):
    min_replicas: int | None = None
    max_replicas: int
    metrics: list[Opaque] | None = None


class PodCliqueSpec(KubeModel):
    """A clique: `replicas` identical pods of one role. Also the spec of a PodClique."""

    role_name: str | None = None
    pod_spec: PodSpec
    replicas: int = Field(ge=0)
    # Pods that must be gang-scheduled / stay available; defaults to replicas.
    min_available: int | None = Field(default=None, ge=0)
    starts_after: list[str] | None = None
    auto_scaling_config: AutoScalingConfig | None = None


class PodCliqueTemplateSpec(KubeModel):
    name: str = Field(min_length=1)
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    topology_constraint: TopologyConstraint | None = None
    rolling_update: Opaque | None = None
    resource_sharing: list[Opaque] | None = None
    spec: PodCliqueSpec


class PodCliqueScalingGroupConfig(KubeModel):
    """Cliques scaled together (e.g. a leader and its workers): `replicas` copies of them all."""

    name: str = Field(min_length=1)
    clique_names: list[str] = Field(min_length=1)
    annotations: dict[str, str] | None = None
    replicas: int | None = Field(default=None, ge=0)  # default 1
    min_available: int | None = Field(default=None, ge=0)  # default 1
    scale_config: AutoScalingConfig | None = None
    termination_delay: GoDuration | None = None
    topology_constraint: TopologyConstraint | None = None
    rolling_update: Opaque | None = None
    resource_sharing: list[Opaque] | None = None


class HeadlessServiceConfig(KubeModel):
    publish_not_ready_addresses: bool | None = None


class PodCliqueSetTemplateSpec(KubeModel):
    cliques: list[PodCliqueTemplateSpec] = Field(min_length=1)
    clique_startup_type: CliqueStartupType | None = None
    priority_class_name: str | None = None
    headless_service_config: HeadlessServiceConfig | None = None
    topology_constraint: TopologyConstraint | None = None
    # A Go duration ("4h", "30m"); see PodCliqueSet.termination_delay_seconds().
    termination_delay: GoDuration | None = None
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] | None = None
    resource_claim_templates: list[Opaque] | None = None
    resource_sharing: list[Opaque] | None = None


class PodCliqueSetUpdateStrategy(KubeModel):
    type: Literal["RollingRecreate", "OnDelete", "Coherent"] | None = None


class PodCliqueSetSpec(KubeModel):
    replicas: int = Field(default=0, ge=0, exclude_if=_is_empty)
    update_strategy: PodCliqueSetUpdateStrategy | None = None
    template: PodCliqueSetTemplateSpec


class LastError(KubeModel):
    code: str | None = None
    description: str | None = None
    observed_at: datetime | None = None


class PodGangStatusSummary(KubeModel):
    """An entry of PodCliqueSet status.podGangStatuses."""

    name: str
    phase: PodGangPhase | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


class PodCliqueSetStatus(KubeModel):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    last_errors: list[LastError] | None = None
    replicas: int = _counter()
    updated_replicas: int = _counter()
    available_replicas: int = _counter()
    hpa_pod_selector: str | None = None
    pod_gang_statuses: list[PodGangStatusSummary] | None = None
    current_generation_hash: str | None = None
    current_revision: str | None = None
    update_progress: Opaque | None = None


_SCALE_STATUS = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
}


class PodCliqueSet(Resource):
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
    observed_generation: int | None = None
    last_errors: list[LastError] | None = None
    replicas: int = _counter()
    ready_replicas: int = _counter()
    updated_replicas: int = _counter()
    schedule_gated_replicas: int = _counter()
    scheduled_replicas: int = _counter()
    last_scheduled: datetime | None = None
    hpa_pod_selector: str | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    current_pod_clique_set_generation_hash: str | None = None
    current_pod_template_hash: str | None = None
    update_progress: Opaque | None = None


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
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Scheduled", "type": "integer", "jsonPath": ".status.scheduledReplicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        {"name": "Gated", "type": "integer", "jsonPath": ".status.scheduleGatedReplicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodCliqueSpec
    status: PodCliqueStatus = Field(default_factory=PodCliqueStatus)


class PodCliqueScalingGroupSpec(KubeModel):
    replicas: int = Field(default=1, ge=0)
    min_available: int | None = Field(default=None, ge=0)
    clique_names: list[str] = Field(default_factory=list)


class PodCliqueScalingGroupStatus(KubeModel):
    replicas: int = _counter()
    scheduled_replicas: int = _counter()
    available_replicas: int = _counter()
    updated_replicas: int = _counter()
    selector: str | None = None
    observed_generation: int | None = None
    last_errors: list[LastError] | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    current_pod_clique_set_generation_hash: str | None = None
    update_progress: Opaque | None = None


class PodCliqueScalingGroup(Resource):
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
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Scheduled", "type": "integer", "jsonPath": ".status.scheduledReplicas"},
        {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodCliqueScalingGroupSpec = Field(default_factory=PodCliqueScalingGroupSpec)
    status: PodCliqueScalingGroupStatus = Field(default_factory=PodCliqueScalingGroupStatus)


# --- defaulting -------------------------------------------------------------------------------


def default_podcliqueset(pcs: PodCliqueSet) -> PodCliqueSet:
    """Apply Grove's defaults in place (and return `pcs`), as Grove's defaulting webhook does.

    cliqueStartupType AnyOrder; terminationDelay 4h; each clique's minAvailable = replicas;
    each scaling group's replicas = minAvailable = 1 when unset; a headless service config
    publishes not-ready addresses; update strategy RollingRecreate.
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
        if clique.spec.min_available is None:
            clique.spec.min_available = clique.spec.replicas
    for group in t.pod_clique_scaling_groups or ():
        if group.replicas is None:
            group.replicas = 1
        if group.min_available is None:
            group.min_available = 1
    return pcs
