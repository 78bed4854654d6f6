"""scheduler.grove.io/v1alpha1 PodGang: the unit a scheduler backend gang-schedules.

Field names and schema follow Grove's scheduler API (scheduler.grove.io_podgangs.yaml): the
status holds only Grove's fields; when the gang was scheduled or became ready is the
`lastTransitionTime` of its `Scheduled` / `Ready` condition (`PodGang.true_since`).
Topology constraints here hold node-label keys (e.g. "topology.kubernetes.io/rack"), already
translated from the domain names users write on a PodCliqueSet.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from .base import Condition, KubeModel, Resource, _is_empty
from .crdtypes import Int32, crd, python_only

PodGangPhase = Literal["Pending", "Starting", "Running", "Failed", "Succeeded"]

# Condition types (Grove's) and the reasons Phalanx writes.
PODGANG_SCHEDULED = "Scheduled"
PODGANG_READY = "Ready"
PODGANG_INITIALIZED = "Initialized"
PODGANG_UNHEALTHY = "Unhealthy"
PODGANG_DISRUPTION_TARGET = "DisruptionTarget"
# Phalanx's: whether the scheduler backend's objects for the gang are in place.
PODGANG_BACKEND_SYNCED = "BackendSynced"
# Initialized=False until every pod exists and carries the grove.io/podgang label.
REASON_PODS_PENDING = "PodGangPodsCreationPending"  # Grove's reasons
# Initialized=True: references filled in; gates may be lifted.
REASON_READY = "PodGangPodsCreated"


class NamespacedName(KubeModel):
    namespace: str
    name: str


class PodGangPackConstraint(KubeModel):
    """Node-label keys: `required` must hold (one domain for all pods); `preferred` is
    best-effort."""

    required: str | None = None
    preferred: str | None = None


class PodGangTopologyConstraint(KubeModel):
    pack_constraint: PodGangPackConstraint | None = None


def _required(*names: str) -> ConfigDict:
    return ConfigDict(json_schema_extra=crd(required=list(names)))


class PodGangGroup(KubeModel):
    """A PodGang's PodGroup: pods sharing one PodTemplateSpec (one PodClique's pods)."""

    model_config = _required("minReplicas", "name", "podReferences")

    name: str
    pod_references: list[NamespacedName] = Field(default_factory=list)
    # Pods that must be scheduled together for the gang to start.
    min_replicas: Int32
    topology_constraint: PodGangTopologyConstraint | None = None


class TopologyConstraintGroupConfig(KubeModel):
    """A topology constraint for a strict subset of the PodGang's groups (e.g. one
    scaling-group replica)."""

    model_config = _required("name", "podGroupNames")

    name: str
    pod_group_names: list[str] = Field(default_factory=list)
    topology_constraint: PodGangTopologyConstraint | None = None


class PodGangSpec(KubeModel):
    model_config = _required("podgroups")

    # Grove's JSON name is all lower case: `podgroups`.
    pod_groups: list[PodGangGroup] = Field(default_factory=list, alias="podgroups")
    topology_constraint: PodGangTopologyConstraint | None = None
    topology_constraint_group_configs: list[TopologyConstraintGroupConfig] | None = None
    priority_class_name: str | None = None
    reuse_reservation_ref: NamespacedName | None = None


class PodGangStatus(KubeModel):
    model_config = _required("phase")
    # Grove's CRD requires status.phase: any status write to a PodGang that has none yet
    # (its controller has not written one) must carry one, and a gang nobody has reported
    # on is Pending.
    INITIAL_PHASE: ClassVar[str] = "Pending"

    # Grove's CRD has no enum: the values are its constants, checked in Python only.
    phase: PodGangPhase | None = Field(default=None, json_schema_extra=python_only("enum"))
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)
    placement_score: float | None = None


class PodGang(Resource):
    model_config = _required("spec")

    API_VERSION = "scheduler.grove.io/v1alpha1"
    KIND = "PodGang"
    PLURAL = "podgangs"
    SHORT_NAMES = ("pg",)
    NAMESPACED = True
    HAS_STATUS = True
    # Grove's (Phase, Age), and two conditions in `kubectl get pg -o wide` only.
    PRINTER_COLUMNS: ClassVar[tuple[dict[str, object], ...]] = (
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {
            "name": "Initialized",
            "type": "string",
            "priority": 1,
            "jsonPath": '.status.conditions[?(@.type=="Initialized")].status',
        },
        {
            "name": "Scheduled",
            "type": "string",
            "priority": 1,
            "jsonPath": '.status.conditions[?(@.type=="Scheduled")].status',
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    )

    spec: PodGangSpec = Field(default_factory=PodGangSpec)
    status: PodGangStatus = Field(default_factory=PodGangStatus)

    def group(self, name: str) -> PodGangGroup | None:
        for g in self.spec.pod_groups:
            if g.name == name:
                return g
        return None

    def min_member(self) -> int:
        """Pods that must be placed together: the sum of every group's minReplicas."""
        return sum(g.min_replicas for g in self.spec.pod_groups)

    def pod_names(self) -> list[str]:
        """Every referenced pod's name, group by group."""
        return [ref.name for g in self.spec.pod_groups for ref in g.pod_references]

    def condition(self, type_: str) -> Condition | None:
        for c in self.status.conditions:
            if c.type == type_:
                return c
        return None

    def is_condition_true(self, type_: str) -> bool:
        c = self.condition(type_)
        return c is not None and c.status == "True"

    def true_since(self, type_: str) -> datetime | None:
        """When the condition last became True (None while it is not True): e.g. when the
        gang was last scheduled (`Scheduled`) or became ready (`Ready`)."""
        c = self.condition(type_)
        return c.last_transition_time if c is not None and c.status == "True" else None

    @property
    def is_initialized(self) -> bool:
        return self.is_condition_true(PODGANG_INITIALIZED)

    @property
    def is_scheduled(self) -> bool:
        return self.is_condition_true(PODGANG_SCHEDULED)
