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

What the served 1.36 API can express (read from the server's /openapi/v3 and KEP-4671):
every PodGroup is its own gang, with one `minCount` for its pods; nothing ties several
PodGroups (or, in 1.35, several pod groups of one Workload) together. So one gang that must
be all-or-nothing is one PodGroup. The builders below write exactly that, for any version:

    objects = kube_gang_objects(V1ALPHA2, ObjectMeta(name="g", namespace="ns"), min_count=8)
    point_pod_at_gang(pod, V1ALPHA2, "g")      # spec.schedulingGroup / spec.workloadRef
    everything = kube_gang("g", "ns", 8, pod_spec)  # + 8 pods, in creation order

The default-scheduler backend maps each PodGang through them; benchmarks use `kube_gang`.
"""

from __future__ import annotations

from pydantic import Field

from . import registry as _registry
from .base import Condition, KubeModel, ObjectMeta, Resource, _is_empty
from .labels import FINALIZER_PODGROUP_PROTECTION, SCHEDULER_DEFAULT
from .pod import Pod, PodSchedulingGroup, PodSpec, WorkloadReference
from .scheduling import (
    WORKLOAD_MAX_POD_GROUPS,
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroupPolicy,
    TypedLocalObjectReference,
    Workload,
    WorkloadPodGroup,
    WorkloadSpec,
)
from .workload_versions import V1ALPHA1, V1ALPHA2, V1BETA1

# PodGroupScheduled condition (upstream) and its reasons.
PODGROUP_SCHEDULED = "PodGroupScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_PREEMPTED = "Preempted"


class TopologyConstraint(KubeModel):
    """All pods of one PodGroup in one domain of this node label (feature gate
    TopologyAwareWorkloadScheduling)."""

    key: str = Field(min_length=1)


class PodGroupSchedulingConstraints(KubeModel):
    # As served by 1.36 (`schedulingConstraints.topology[].key`); at most one for now.
    topology: list[TopologyConstraint] | None = Field(default=None, max_length=1)


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


# --- builders: one all-or-nothing gang -------------------------------------------------------


def gang_policy(min_count: int) -> PodGroupPolicy:
    """`gang.minCount` when at least one pod must be placed with the others, else `basic`
    (kube-scheduler's one-by-one scheduling: minCount must be positive)."""
    if min_count >= 1:
        return PodGroupPolicy(gang=GangSchedulingPolicy(min_count=min_count))
    return PodGroupPolicy(basic=BasicSchedulingPolicy())


def kube_gang_objects(version: str, meta: ObjectMeta, min_count: int, *,
                      template: str | None = None,
                      controller_ref: TypedLocalObjectReference | None = None) -> list[Resource]:
    """The Workload API objects of one gang, in creation order (the PodGroupWorkloadExists
    admission plugin wants the Workload first).

    1.35: a Workload `meta.name` with one pod group `template`. 1.36+: a Workload with one
    pod group template `template` and a PodGroup `meta.name` made from it, carrying the
    protection finalizer the API server adds on create (so the embedded cluster stores what
    a real server would). `template` defaults to `meta.name` and must be a DNS label.
    """
    template = template or meta.name or ""
    policy = gang_policy(min_count)
    if version == V1ALPHA1:
        spec = WorkloadSpec(controller_ref=controller_ref,
                            pod_groups=[WorkloadPodGroup(name=template, policy=policy)])
        return [Workload(metadata=meta.model_copy(deep=True), spec=spec)]
    workload_kind, podgroup_kind = WORKLOAD_KINDS[version]
    assert podgroup_kind is not None
    workload = workload_kind(metadata=meta.model_copy(deep=True), spec=WorkloadSpecV2(
        controller_ref=controller_ref,
        pod_group_templates=[PodGroupTemplate(name=template, scheduling_policy=policy)]))
    pg_meta = meta.model_copy(deep=True)
    if FINALIZER_PODGROUP_PROTECTION not in pg_meta.finalizers:
        pg_meta.finalizers.append(FINALIZER_PODGROUP_PROTECTION)
    ref = WorkloadPodGroupTemplateReference(workload_name=meta.name or "",
                                            pod_group_template_name=template)
    podgroup = podgroup_kind(metadata=pg_meta, spec=PodGroupSpec(
        pod_group_template_ref=PodGroupTemplateReference(workload=ref),
        scheduling_policy=policy.model_copy(deep=True)))
    return [workload, podgroup]


def point_pod_at_gang(pod: Pod, version: str, gang: str, *, template: str | None = None) -> None:
    """Make `pod` a member of the gang `kube_gang_objects` wrote under the name `gang`:
    `spec.workloadRef {name, podGroup}` on 1.35, `spec.schedulingGroup.podGroupName` on 1.36+
    (both immutable once the pod exists)."""
    if version == V1ALPHA1:
        pod.spec.workload_ref = WorkloadReference(name=gang, pod_group=template or gang)
        pod.spec.scheduling_group = None
    else:
        pod.spec.scheduling_group = PodSchedulingGroup(pod_group_name=gang)
        pod.spec.workload_ref = None


def kube_gang(name: str, namespace: str, size: int, pod_spec: PodSpec, *,
              version: str = V1ALPHA2, min_count: int | None = None,
              labels: dict[str, str] | None = None) -> list[Resource]:
    """A whole kube-scheduler gang ready to create, in order: the Workload (and PodGroup),
    then `size` pods `<name>-<i>` for kube-scheduler (`schedulerName: default-scheduler`)
    that must all be placed together (`min_count`, default `size`)."""
    meta = ObjectMeta(name=name, namespace=namespace, labels=dict(labels or {}))
    objects = kube_gang_objects(version, meta, size if min_count is None else min_count)
    for i in range(size):
        spec = pod_spec.model_copy(deep=True)
        spec.scheduler_name = SCHEDULER_DEFAULT
        pod = Pod(metadata=ObjectMeta(name=f"{name}-{i}", namespace=namespace,
                                      labels=dict(labels or {})), spec=spec)
        point_pod_at_gang(pod, version, name)
        objects.append(pod)
    return objects


for _cls in (WorkloadV1Alpha2, PodGroupV1Alpha2, WorkloadV1Beta1, PodGroupV1Beta1):
    _registry.register(_cls)
