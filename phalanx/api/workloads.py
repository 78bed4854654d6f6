"""The Kubernetes Workload API after 1.35: `Workload` + standalone `PodGroup`.

In 1.36 (KEP-4671 + KEP-5832) the gang API split in two resources of
`scheduling.k8s.io/v1alpha2`:
- `workloads`: the policy, `spec.podGroupTemplates[{name, schedulingPolicy, schedulingConstraints}]`
  (at most 8, immutable), plus an optional `controllerRef`;
- `podgroups`: one runtime instance per gang, `spec.podGroupTemplateRef.workload
  {workloadName, podGroupTemplateName}` and a copy of the template's policy (immutable);
  status carries the `PodGroupScheduled` condition. The API server protects a PodGroup with
  the finalizer `scheduling.k8s.io/podgroup-protection` while pods still reference it.
Pods point at their PodGroup with `spec.schedulingGroup.podGroupName`; `spec.workloadRef` is
gone. 1.37 serves the same shapes as `scheduling.k8s.io/v1beta1`.

The 1.35 shape (`scheduling.k8s.io/v1alpha1`, pod groups embedded in the Workload) is
`phalanx.api.scheduling.Workload`.
"""

from __future__ import annotations

from pydantic import Field

from . import registry as _registry
from .base import Condition, KubeModel, Resource, _is_empty
from .scheduling import (
    WORKLOAD_MAX_POD_GROUPS,
    PodGroupPolicy,
    TypedLocalObjectReference,
    Workload,
)

SCHEDULING_GROUP = "scheduling.k8s.io"
V1ALPHA1 = f"{SCHEDULING_GROUP}/v1alpha1"  # Kubernetes 1.35
V1ALPHA2 = f"{SCHEDULING_GROUP}/v1alpha2"  # 1.36
V1BETA1 = f"{SCHEDULING_GROUP}/v1beta1"  # 1.37
# Oldest first; the default-scheduler backend writes the newest one the server serves.
WORKLOAD_API_VERSIONS = (V1ALPHA1, V1ALPHA2, V1BETA1)

# PodGroupScheduled condition (upstream) and its reasons.
PODGROUP_SCHEDULED = "PodGroupScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_PREEMPTED = "Preempted"


class TopologyConstraint(KubeModel):
    """All pods of one PodGroup in one domain of this node label (feature gate
    TopologyAwareWorkloadScheduling)."""

    topology_key: str = Field(min_length=1)


class PodGroupSchedulingConstraints(KubeModel):
    topology_constraints: list[TopologyConstraint] | None = Field(default=None, max_length=1)


class PodGroupTemplate(KubeModel):
    name: str = Field(min_length=1, max_length=63)
    scheduling_policy: PodGroupPolicy
    scheduling_constraints: PodGroupSchedulingConstraints | None = None


class WorkloadSpecV2(KubeModel):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = Field(
        min_length=1, max_length=WORKLOAD_MAX_POD_GROUPS
    )

    def template(self, name: str) -> PodGroupTemplate | None:
        for t in self.pod_group_templates:
            if t.name == name:
                return t
        return None


class WorkloadPodGroupTemplateReference(KubeModel):
    workload_name: str = Field(min_length=1)
    pod_group_template_name: str = Field(min_length=1)


class PodGroupTemplateReference(KubeModel):
    workload: WorkloadPodGroupTemplateReference | None = None


class PodGroupSpec(KubeModel):
    pod_group_template_ref: PodGroupTemplateReference | None = None
    scheduling_policy: PodGroupPolicy
    scheduling_constraints: PodGroupSchedulingConstraints | None = None


class PodGroupStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list, exclude_if=_is_empty)


class _WorkloadV2(Resource):
    KIND = "Workload"
    PLURAL = "workloads"
    NAMESPACED = True

    spec: WorkloadSpecV2


class _PodGroupV2(Resource):
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: PodGroupSpec
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    @property
    def workload_name(self) -> str | None:
        ref = self.spec.pod_group_template_ref
        return ref.workload.workload_name if ref and ref.workload else None

    @property
    def template_name(self) -> str | None:
        ref = self.spec.pod_group_template_ref
        return ref.workload.pod_group_template_name if ref and ref.workload else None

    @property
    def min_count(self) -> int:
        """Pods that must be placed together (1 for a basic, non-gang group)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang else 1


class WorkloadV1Alpha2(_WorkloadV2):
    API_VERSION = V1ALPHA2


class PodGroupV1Alpha2(_PodGroupV2):
    API_VERSION = V1ALPHA2


class WorkloadV1Beta1(_WorkloadV2):
    API_VERSION = V1BETA1


class PodGroupV1Beta1(_PodGroupV2):
    API_VERSION = V1BETA1


# (Workload kind, PodGroup kind or None) per served version.
WORKLOAD_KINDS: dict[str, tuple[type[Resource], type[Resource] | None]] = {
    V1ALPHA1: (Workload, None),  # 1.35: pod groups live inside the Workload
    V1ALPHA2: (WorkloadV1Alpha2, PodGroupV1Alpha2),
    V1BETA1: (WorkloadV1Beta1, PodGroupV1Beta1),
}


for _cls in (WorkloadV1Alpha2, PodGroupV1Alpha2, WorkloadV1Beta1, PodGroupV1Beta1):
    _registry.register(_cls)
