"""The scheduler-specific objects backends write for a PodGang.

- scheduling.k8s.io/v1alpha1 `Workload` (kube-scheduler gang scheduling, KEP-4671, 1.35)
- scheduling.run.ai/v2alpha2 `PodGroup` (KAI scheduler)            -> `KaiPodGroup`
- scheduling.volcano.sh/v1beta1 `PodGroup` (Volcano)                -> `VolcanoPodGroup`
- scheduling.sigs.k8s.io/v1alpha1 `PodGroup` (scheduler-plugins coscheduling, as Koordinator
  installs it)                                                      -> `CoschedulingPodGroup`
- scheduling.x-k8s.io/v1alpha1 `PodGroup` (scheduler-plugins today): `phalanx.api.schedulerplugins`

The peers' kinds have exactly the schema of the CRD each peer installs
(`../shared/peer-crds`; tests/api/test_peer_crd_parity.py compares them field by field), so
a strict API server accepts every object and status Phalanx writes. That decides two things
the gang status controller relies on: which kinds have a status subresource (`HAS_STATUS`:
Volcano's and Koordinator's PodGroups have none, their status is written with the object)
and which have `status.conditions` (KAI's and Volcano's do, without observedGeneration; the
coscheduling PodGroups have none, so a gang verdict goes only to the member pods there).

The v1alpha1 `Workload` is a built-in kind; its status is a Phalanx addition (1.35 served no
status). Later Workload versions are in `phalanx.api.workloads`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from .base import Condition, KubeModel, Resource, _is_empty
from .pod import ResourceList

# The condition Phalanx's gang status controller writes ("3/8 members created; waiting for 5").
GANG_INCOMPLETE = "GangIncomplete"
Opaque = dict[str, Any]


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


# --- shared by the peers' schemas -----------------------------------------------------------

# A DNS-1123 subdomain (Volcano queue names, HyperNode member names).
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A qualified label key (KAI Topology levels, metav1.Condition types).
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeModel):
    """metav1.LabelSelector."""

    match_expressions: list[LabelSelectorRequirement] | None = None
    match_labels: dict[str, str] | None = None


class SchedulerCondition(Condition):
    """A KAI / Volcano PodGroup condition: type, status, reason, message, lastTransitionTime
    and transitionID. Their schemas have no observedGeneration: it is never written (and not
    in this model's schema), so a shared `set_condition` call cannot put it on the wire."""

    transition_id: str | None = Field(default=None, alias="transitionID")
    observed_generation: SkipJsonSchema[int | None] = Field(default=None, exclude=True)


def _count(minimum: int | None = None) -> Any:
    """A pod counter (int32) that is left out while 0, as Go's omitempty does."""
    return Field(default=0, ge=minimum, exclude_if=_is_empty)


# --- scheduling.run.ai/v2alpha2 PodGroup (KAI) ------------------------------------------------


class KaiTopologyConstraint(KubeModel):
    # The name of KAI's Topology object, and levels given as its node-label keys.
    topology: str | None = None
    required_topology_level: str | None = None
    preferred_topology_level: str | None = None


class KaiSubGroup(KubeModel):
    name: str = Field(min_length=1)
    min_member: int | None = Field(default=None, ge=1)
    parent: str | None = None
    topology_constraint: KaiTopologyConstraint | None = None


class KaiPodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=1)
    queue: str | None = None
    priority_class_name: str | None = None
    preemptibility: Literal["preemptible", "non-preemptible"] | None = None
    parallelism: int | None = None
    completions: int | None = None
    backoff_limit: int | None = None
    mark_unschedulable: bool | None = None
    scheduling_backoff: int | None = None
    topology_constraint: KaiTopologyConstraint | None = None
    sub_groups: list[KaiSubGroup] | None = None


class KaiQueueDetails(KubeModel):
    name: str | None = None
    pod_group_requested_non_preemptible_resources: ResourceList | None = None
    pod_group_requested_resources: ResourceList | None = None
    queue_allocated_non_preemptible_resources: ResourceList | None = None
    queue_allocated_resources: ResourceList | None = None
    queue_deserved_resources: ResourceList | None = None
    queue_requested_resources: ResourceList | None = None
    queue_resource_limits: ResourceList | None = None


class KaiUnschedulableDetails(KubeModel):
    queue_details: KaiQueueDetails | None = None


class KaiUnschedulableExplanation(KubeModel):
    details: KaiUnschedulableDetails | None = None
    message: str | None = None
    reason: str | None = None


class KaiSchedulingCondition(KubeModel):
    type: str | None = None
    status: str | None = None
    node_pool: str | None = None
    reason: str | None = None
    message: str | None = None
    reasons: list[KaiUnschedulableExplanation] | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: datetime | None = None


class KaiResourcesStatus(KubeModel):
    allocated: ResourceList | None = None
    allocated_non_preemptible: ResourceList | None = None
    requested: ResourceList | None = None


class KaiPodGroupStatus(KubeModel):
    phase: str | None = None
    conditions: list[SchedulerCondition] = Field(default_factory=list, exclude_if=_is_empty)
    running: int = _count()
    succeeded: int = _count()
    failed: int = _count()
    pending: int = _count()
    resources_status: KaiResourcesStatus | None = None
    scheduling_conditions: list[KaiSchedulingCondition] | None = None


class KaiPodGroup(Resource):
    API_VERSION = "scheduling.run.ai/v2alpha2"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: KaiPodGroupSpec = Field(default_factory=KaiPodGroupSpec)
    status: KaiPodGroupStatus = Field(default_factory=KaiPodGroupStatus)


# --- scheduling.volcano.sh/v1beta1 PodGroup ---------------------------------------------------


class VolcanoNetworkTopology(KubeModel):
    """Pack the pods into one HyperNode of at most this tier (`hard`) or prefer it (`soft`)."""

    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = Field(default=None, ge=0)
    highest_tier_name: str | None = Field(default=None, max_length=253)


class VolcanoSubGroupPolicy(KubeModel):
    name: str | None = Field(default=None, max_length=253)
    label_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    min_sub_groups: int = Field(default=0, ge=0)
    network_topology: VolcanoNetworkTopology | None = None
    sub_group_size: int = Field(default=1, ge=1)


class VolcanoPodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=0)
    min_task_member: dict[str, int] | None = None
    # Volcano's CRD defaults the queue to `default` (the queue Volcano creates at install).
    queue: str = Field(default="default", max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
    priority_class_name: str | None = Field(default=None, max_length=253)
    min_resources: ResourceList | None = None
    network_topology: VolcanoNetworkTopology | None = None
    sub_group_policy: list[VolcanoSubGroupPolicy] | None = None


class VolcanoPodGroupStatus(KubeModel):
    phase: Literal["Pending", "Running", "Unknown", "Inqueue", "Completed"] | None = None
    conditions: list[SchedulerCondition] = Field(default_factory=list, exclude_if=_is_empty)
    running: int = _count(0)
    succeeded: int = _count(0)
    failed: int = _count(0)


class VolcanoPodGroup(Resource):
    """Volcano's CRD has no status subresource: the status is written with the object (as
    Volcano's own scheduler does), so HAS_STATUS is False."""

    API_VERSION = "scheduling.volcano.sh/v1beta1"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = False

    spec: VolcanoPodGroupSpec = Field(default_factory=VolcanoPodGroupSpec)
    status: VolcanoPodGroupStatus = Field(default_factory=VolcanoPodGroupStatus)


# --- scheduling.sigs.k8s.io/v1alpha1 PodGroup (coscheduling; Koordinator) ---------------------


class CoschedulingPodGroupSpec(KubeModel):
    min_member: int | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None


class CoschedulingPodGroupStatus(KubeModel):
    """What Koordinator's PodGroup controller writes; no conditions in this schema."""

    # Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed, Unknown.
    phase: str | None = None
    occupied_by: str | None = None
    scheduled: int = _count()
    running: int = _count()
    succeeded: int = _count()
    failed: int = _count()
    schedule_start_time: datetime | None = None


class CoschedulingPodGroup(Resource):
    """The CRD Koordinator installs has no status subresource (HAS_STATUS False)."""

    API_VERSION = "scheduling.sigs.k8s.io/v1alpha1"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = False

    spec: CoschedulingPodGroupSpec = Field(default_factory=CoschedulingPodGroupSpec)
    status: CoschedulingPodGroupStatus = Field(default_factory=CoschedulingPodGroupStatus)


# Every kind that can represent a gang to some scheduler, for the gang status controller
# (scheduler-plugins' scheduling.x-k8s.io PodGroup is in phalanx.api.schedulerplugins).
GANG_OBJECT_KINDS: tuple[type[Resource], ...] = (
    Workload,
    KaiPodGroup,
    VolcanoPodGroup,
    CoschedulingPodGroup,
)
