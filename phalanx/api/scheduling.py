"""The scheduler-specific objects backends write for a PodGang.

- scheduling.k8s.io/v1alpha1 `Workload` (kube-scheduler gang scheduling, KEP-4671, 1.35)
- scheduling.run.ai/v2alpha2 `PodGroup` (KAI scheduler)            -> `KaiPodGroup`
- scheduling.volcano.sh/v1beta1 `PodGroup` (Volcano)                -> `VolcanoPodGroup`
- scheduling.sigs.k8s.io/v1alpha1 `PodGroup` (scheduler-plugins coscheduling, as Koordinator
  uses it)                                                          -> `CoschedulingPodGroup`

Each has a status that can carry conditions: Phalanx's gang status controller writes a
GangIncomplete condition on whichever object represents the gang (use
`base.set_status_condition`). Where upstream has no conditions (Workload, coscheduling
PodGroup) the field is a Phalanx addition.

Later Workload versions (v1alpha2, v1beta1) go in their own classes (e.g. `WorkloadV1Alpha2`
in a module of their own) and are added with `registry.register(...)`; this `Workload` stays
the v1alpha1 shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import Field, model_validator

from .base import Condition, KubeModel, Resource, _is_empty
from .pod import ResourceList

# The condition Phalanx's gang status controller writes ("3/8 members created; waiting for 5").
GANG_INCOMPLETE = "GangIncomplete"
Opaque = dict[str, Any]


def _counter() -> Any:
    return Field(default=0, exclude_if=_is_empty)


# --- scheduling.k8s.io/v1alpha1 Workload ------------------------------------------------------

WORKLOAD_MAX_POD_GROUPS = 8


class TypedLocalObjectReference(KubeModel):
    api_group: str | None = None
    kind: str
    name: str


class BasicSchedulingPolicy(KubeModel):
    """No gang semantics: pods of the group are scheduled one by one."""


class GangSchedulingPolicy(KubeModel):
    min_count: int = Field(gt=0)


class PodGroupPolicy(KubeModel):
    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        # Workloads are few (one per PodGang), so a Python check is affordable here.
        if (self.basic is None) == (self.gang is None):
            raise ValueError("exactly one of `basic` or `gang` must be set")
        return self


class WorkloadPodGroup(KubeModel):
    name: str = Field(min_length=1)
    policy: PodGroupPolicy


class WorkloadSpec(KubeModel):
    controller_ref: TypedLocalObjectReference | None = None
    pod_groups: list[WorkloadPodGroup] = Field(min_length=1, max_length=WORKLOAD_MAX_POD_GROUPS)


class WorkloadStatus(KubeModel):
    """Not in upstream v1alpha1: Phalanx records gang conditions here."""

    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


class Workload(Resource):
    API_VERSION = "scheduling.k8s.io/v1alpha1"
    KIND = "Workload"
    PLURAL = "workloads"
    SHORT_NAMES = ("wl",)
    NAMESPACED = True
    HAS_STATUS = True

    spec: WorkloadSpec
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)

    def pod_group(self, name: str) -> WorkloadPodGroup | None:
        for g in self.spec.pod_groups:
            if g.name == name:
                return g
        return None


# --- scheduling.run.ai/v2alpha2 PodGroup (KAI) ------------------------------------------------


class KaiTopologyConstraint(KubeModel):
    # The name of KAI's Topology object, and levels given as its node-label keys.
    topology: str | None = None
    required_topology_level: str | None = None
    preferred_topology_level: str | None = None


class KaiSubGroup(KubeModel):
    name: str = Field(min_length=1)
    min_member: int | None = None
    parent: str | None = None
    topology_constraint: KaiTopologyConstraint | None = None


class KaiPodGroupSpec(KubeModel):
    min_member: int | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    preemptibility: str | None = None
    parallelism: int | None = None
    completions: int | None = None
    backoff_limit: int | None = None
    mark_unschedulable: bool | None = None
    scheduling_backoff: int | None = None
    topology_constraint: KaiTopologyConstraint | None = None
    sub_groups: list[KaiSubGroup] | None = None


class SchedulerCondition(Condition):
    """A KAI / Volcano PodGroup condition: metav1-like plus transitionID."""

    transition_id: str | None = Field(default=None, alias="transitionID")


class KaiPodGroupStatus(KubeModel):
    phase: str | None = None
    conditions: list[SchedulerCondition] = Field(default_factory=list, exclude_if=_is_empty)
    running: int = _counter()
    succeeded: int = _counter()
    failed: int = _counter()
    pending: int = _counter()
    resources_status: Opaque | None = None
    scheduling_conditions: list[Opaque] | None = None


class KaiPodGroup(Resource):
    API_VERSION = "scheduling.run.ai/v2alpha2"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: KaiPodGroupSpec = Field(default_factory=KaiPodGroupSpec)
    status: KaiPodGroupStatus = Field(default_factory=KaiPodGroupStatus)


# --- scheduling.volcano.sh/v1beta1 PodGroup ---------------------------------------------------


class VolcanoPodGroupSpec(KubeModel):
    min_member: int | None = None
    min_task_member: dict[str, int] | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    min_resources: ResourceList | None = None
    network_topology: Opaque | None = None
    sub_group_policy: list[Opaque] | None = None


class VolcanoPodGroupStatus(KubeModel):
    # Pending, Inqueue, Running, Unknown, Completed.
    phase: str | None = None
    conditions: list[SchedulerCondition] = Field(default_factory=list, exclude_if=_is_empty)
    running: int = _counter()
    succeeded: int = _counter()
    failed: int = _counter()


class VolcanoPodGroup(Resource):
    API_VERSION = "scheduling.volcano.sh/v1beta1"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: VolcanoPodGroupSpec = Field(default_factory=VolcanoPodGroupSpec)
    status: VolcanoPodGroupStatus = Field(default_factory=VolcanoPodGroupStatus)


# --- scheduling.sigs.k8s.io/v1alpha1 PodGroup (coscheduling; Koordinator) ---------------------


class CoschedulingPodGroupSpec(KubeModel):
    min_member: int | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None


class CoschedulingPodGroupStatus(KubeModel):
    # Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed, Unknown.
    phase: str | None = None
    occupied_by: str | None = None
    scheduled: int = _counter()
    running: int = _counter()
    succeeded: int = _counter()
    failed: int = _counter()
    schedule_start_time: datetime | None = None
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


class CoschedulingPodGroup(Resource):
    API_VERSION = "scheduling.sigs.k8s.io/v1alpha1"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: CoschedulingPodGroupSpec = Field(default_factory=CoschedulingPodGroupSpec)
    status: CoschedulingPodGroupStatus = Field(default_factory=CoschedulingPodGroupStatus)


# Every kind that can represent a gang to some scheduler, for the gang status controller.
GANG_OBJECT_KINDS: tuple[type[Resource], ...] = (
    Workload,
    KaiPodGroup,
    VolcanoPodGroup,
    CoschedulingPodGroup,
)
