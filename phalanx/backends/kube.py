"""`default-scheduler`: the Kubernetes kube-scheduler.

Without `gangScheduling` the backend only points pods at kube-scheduler (schedulerName);
kube-scheduler then places pods one by one, with no gang semantics (Grove's default).

With `gangScheduling: true` it writes the Workload API objects kube-scheduler's
GangScheduling plugin reads (KEP-4671), in the version the target server serves:

| Kubernetes | API                         | objects per PodGang                                    | pod field                          |
|------------|-----------------------------|--------------------------------------------------------|------------------------------------|
| 1.35       | scheduling.k8s.io/v1alpha1  | Workload, `spec.podGroups[]` (one per PodGang group)   | `spec.workloadRef{name, podGroup}` |
| 1.36       | scheduling.k8s.io/v1alpha2  | Workload (`podGroupTemplates[]`) + one PodGroup each   | `spec.schedulingGroup.podGroupName`|
| 1.37       | scheduling.k8s.io/v1beta1   | as v1alpha2                                            | as v1alpha2                        |

Each PodGang group becomes its own gang (policy `gang.minCount = minReplicas`; `basic` when
minReplicas is 0). The Workload is named like the PodGang, and its groups / templates
carry the PodGang group names (shortened to a DNS label when longer than 63 characters).
Standalone PodGroups are named like the PodGang group (the PodClique), unique in the
namespace. Creation order is Workload, then PodGroups, then pods (the operator creates
pods only after `sync_podgang`); deletion runs in reverse.

Limits, checked at admission: at most 8 groups per Workload; no topology-aware placement
(see `topology.py`). The objects are immutable: a changed gang (another minReplicas, other
groups) re-creates them, and a 1.36+ PodGroup still used by pods is only replaced once
those pods are gone (its protection finalizer; `SyncPending` until then).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from phalanx.api import labels
from phalanx.api.pod import Pod, PodSchedulingGroup, WorkloadReference
from phalanx.api.scheduling import (
    WORKLOAD_MAX_POD_GROUPS,
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroupPolicy,
    TypedLocalObjectReference,
    Workload,
    WorkloadPodGroup,
    WorkloadSpec,
)
from phalanx.api.workloads import (
    V1ALPHA1,
    WORKLOAD_API_VERSIONS,
    WORKLOAD_KINDS,
    PodGroupSpec,
    PodGroupTemplate,
    PodGroupTemplateReference,
    WorkloadPodGroupTemplateReference,
    WorkloadSpecV2,
)
from phalanx.cluster.client import NotFound

from . import features
from .base import (
    OWNED_OBJECT_VERBS,
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    SyncPending,
    ValidationIssue,
    register_backend,
)
from .discovery import served_workload_versions
from .objects import (
    ConfiguredBackend,
    GroupObjects,
    dns_label,
    ensure,
    ensure_deleted,
    owned_meta,
    recreate_on_spec_change,
    required_pod_labels,
)
from .registry import BackendConfigError

if TYPE_CHECKING:
    from phalanx.api.base import Resource
    from phalanx.api.grove import PodCliqueSet, PodGang, PodGangGroup
    from phalanx.cluster.client import Client

log = logging.getLogger(__name__)

NEWEST_WORKLOAD_API = WORKLOAD_API_VERSIONS[-1]


class KubeBackendConfig(BackendConfig):
    """Profile config of `default-scheduler`.

    `workloadAPIVersion` unset = the newest version the server serves (the newest Phalanx
    knows when the client cannot tell). `mismatchPolicy` defaults to `reject`:
    kube-scheduler has no topology-aware placement, and silently spreading a gang that
    asked to be packed would surprise users.
    """

    gang_scheduling: bool = Field(False, alias="gangScheduling")
    workload_api_version: str | None = Field(None, alias="workloadAPIVersion")
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")

    @field_validator("workload_api_version")
    @classmethod
    def _known_version(cls, value: str | None) -> str | None:
        if value is None:
            return None
        full = value if "/" in value else f"scheduling.k8s.io/{value}"
        if full not in WORKLOAD_API_VERSIONS:
            raise ValueError(
                f"unknown Workload API version {value!r}; known: "
                + ", ".join(WORKLOAD_API_VERSIONS)
            )
        return full


def _policy(group: PodGangGroup) -> PodGroupPolicy:
    if group.min_replicas >= 1:
        return PodGroupPolicy(gang=GangSchedulingPolicy(min_count=group.min_replicas))
    return PodGroupPolicy(basic=BasicSchedulingPolicy())


def _controller_ref(podgang: PodGang) -> TypedLocalObjectReference:
    return TypedLocalObjectReference(
        api_group=podgang.API_VERSION.rpartition("/")[0], kind=podgang.kind, name=podgang.name
    )


def workload_objects(podgang: PodGang, version: str) -> list[Resource]:
    """The objects kube-scheduler needs for `podgang`, in creation order."""
    groups = podgang.spec.pod_groups
    if version == V1ALPHA1:
        spec = WorkloadSpec(
            controller_ref=_controller_ref(podgang),
            pod_groups=[WorkloadPodGroup(name=dns_label(g.name), policy=_policy(g)) for g in groups],
        )
        return [Workload(metadata=owned_meta(podgang, podgang.name), spec=spec)]
    workload_kind, podgroup_kind = WORKLOAD_KINDS[version]
    assert podgroup_kind is not None
    objects: list[Resource] = [
        workload_kind(
            metadata=owned_meta(podgang, podgang.name),
            spec=WorkloadSpecV2(
                controller_ref=_controller_ref(podgang),
                pod_group_templates=[
                    PodGroupTemplate(name=dns_label(g.name), scheduling_policy=_policy(g))
                    for g in groups
                ],
            ),
        )
    ]
    for g in groups:
        meta = owned_meta(podgang, g.name)
        # What the API server adds on create (KEP-5832); written here so the embedded
        # cluster stores the same object a real 1.36+ server would.
        meta.finalizers = [labels.FINALIZER_PODGROUP_PROTECTION]
        ref = WorkloadPodGroupTemplateReference(
            workload_name=podgang.name, pod_group_template_name=dns_label(g.name)
        )
        objects.append(
            podgroup_kind(
                metadata=meta,
                spec=PodGroupSpec(
                    pod_group_template_ref=PodGroupTemplateReference(workload=ref),
                    scheduling_policy=_policy(g),
                ),
            )
        )
    return objects


class KubeBackend(ConfiguredBackend[KubeBackendConfig]):
    name: ClassVar[str] = "default-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_DEFAULT

    def __init__(self, config: KubeBackendConfig) -> None:
        super().__init__(config)
        self.capabilities = (
            frozenset({Capability.GANG}) if config.gang_scheduling else frozenset()
        )
        # Resolved by init() through discovery; until then the configured (or newest) one.
        self.workload_api_version = config.workload_api_version or NEWEST_WORKLOAD_API

    async def init(self, client: Client) -> None:
        await super().init(client)
        if not self.config.gang_scheduling:
            return
        served = await served_workload_versions(client)
        wanted = self.config.workload_api_version
        if served is None:
            self.workload_api_version = wanted or NEWEST_WORKLOAD_API
        elif wanted is not None:
            if wanted not in served:
                raise BackendConfigError(
                    "config.workloadAPIVersion",
                    f"{wanted} is not served by the API server (served: "
                    f"{', '.join(served) or 'none'})",
                )
            self.workload_api_version = wanted
        elif served:
            self.workload_api_version = served[-1]
        else:
            raise BackendConfigError(
                "config.gangScheduling",
                "the API server serves no scheduling.k8s.io Workload API (1.35+ with the "
                "GenericWorkload feature gate); disable gangScheduling or enable the API",
            )
        log.info("default-scheduler: gang scheduling via %s", self.workload_api_version)

    async def sync_podgang(self, podgang: PodGang) -> None:
        if not self.config.gang_scheduling:
            return  # kube-scheduler needs no extra object
        client = self.client
        desired = workload_objects(podgang, self.workload_api_version)
        for obj in desired:
            # Workload pod groups / templates and PodGroup specs are immutable.
            await ensure(client, obj, recreate_on_spec_change)
        if self._podgroups is not None:
            # PodGroups of groups the PodGang no longer has (its cliques changed).
            current = {obj.name for obj in desired[1:]}
            for name in await self._podgroups.stale(client, podgang, current):
                await self._release_podgroup(name, podgang)
            self._podgroups.synced(podgang, current)

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        if not self.config.gang_scheduling:
            return
        # Reverse creation order: PodGroups, then the Workload.
        client = self.client
        if self._podgroups is not None:
            for name in await self._podgroups.all(client, podgang):
                await self._release_podgroup(name, podgang)
        workload_kind = WORKLOAD_KINDS[self.workload_api_version][0]
        await ensure_deleted(client, workload_kind, podgang.name, podgang)

    @property
    def workload_api_version(self) -> str:
        return self._version

    @workload_api_version.setter
    def workload_api_version(self, version: str) -> None:
        self._version = version
        podgroup_kind = WORKLOAD_KINDS[version][1]  # None on 1.35: groups live in the Workload
        self._podgroups = GroupObjects(podgroup_kind) if podgroup_kind is not None else None

    async def _release_podgroup(self, name: str, podgang: PodGang) -> None:
        """Delete a PodGroup; drop its protection finalizer once no live pod uses it,
        as kube-controller-manager's PodGroup protection does."""
        assert self._podgroups is not None
        client = self.client
        live = await ensure_deleted(client, self._podgroups.kind, name, podgang)
        if live is None or labels.FINALIZER_PODGROUP_PROTECTION not in live.metadata.finalizers:
            return
        pods = await client.list(
            Pod, podgang.namespace, label_selector={labels.LABEL_PODCLIQUE: name}
        )
        users = [
            p.name
            for p in pods.items
            if p.spec.scheduling_group is not None
            and p.spec.scheduling_group.pod_group_name == name
            and p.status.phase not in ("Succeeded", "Failed")
        ]
        if users:
            raise SyncPending(
                f"PodGroup {live.key} is still used by {len(users)} pod(s) "
                f"({', '.join(sorted(users)[:3])}{', ...' if len(users) > 3 else ''})"
            )
        live.metadata.finalizers = [
            f for f in live.metadata.finalizers if f != labels.FINALIZER_PODGROUP_PROTECTION
        ]
        try:
            await client.update(live)
        except NotFound:
            pass

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        if not self.config.gang_scheduling:
            return
        podgang, group = required_pod_labels(pod, labels.LABEL_PODGANG, labels.LABEL_PODCLIQUE)
        if self.workload_api_version == V1ALPHA1:
            pod.spec.workload_ref = WorkloadReference(name=podgang, pod_group=dns_label(group))
        else:
            pod.spec.scheduling_group = PodSchedulingGroup(pod_group_name=group)

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        issues = features.capability_issues(pcs, self.capabilities, self.name)
        if self.config.gang_scheduling:
            count = features.base_podgang_group_count(pcs)
            if count > WORKLOAD_MAX_POD_GROUPS:
                issues.append(
                    ValidationIssue(
                        field="spec.template.cliques",
                        message=(
                            f"the base PodGang would have {count} groups (standalone cliques "
                            "plus scaling-group cliques below minAvailable); a kube-scheduler "
                            f"Workload holds at most {WORKLOAD_MAX_POD_GROUPS}"
                        ),
                    )
                )
        return issues


SPEC = register_backend(
    BackendSpec(
        name=KubeBackend.name,
        config_model=KubeBackendConfig,
        factory=KubeBackend,
        rbac=(("scheduling.k8s.io", ("workloads", "podgroups"), OWNED_OBJECT_VERBS),),
    )
)
