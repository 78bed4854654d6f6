"""`default-scheduler`: the Kubernetes kube-scheduler.

Without `gangScheduling` the backend only points pods at kube-scheduler (schedulerName);
kube-scheduler then places pods one by one, with no gang semantics (Grove's default).

With `gangScheduling: true` it writes the Workload API objects kube-scheduler's
GangScheduling plugin reads (KEP-4671), in the scheduling.k8s.io version the server serves:

| Kubernetes | version      | objects per PodGang              | pod field                     |
|------------|--------------|----------------------------------|-------------------------------|
| 1.35       | v1alpha1     | Workload, one `spec.podGroups[]` | `workloadRef{name, podGroup}` |
| 1.36       | v1alpha2     | Workload (1 template), PodGroup  | `schedulingGroup.podGroupName`|
| 1.37       | v1beta1      | as v1alpha2                      | as v1alpha2                   |

**One gang per PodGang.** kube-scheduler gangs each PodGroup (1.35: each pod group) on its
own: one `minCount`, its own workload scheduling cycle, nothing that ties two PodGroups
together (KEP-4671: "individual PodGroups ... are treated as independent gangs"; the 1.36
OpenAPI has no field for it; hierarchical/composite groups are future work). A PodGang is
all-or-nothing across its groups, so the whole PodGang is one PodGroup with
`gang.minCount` = the sum of its groups' minReplicas (`basic` when that is 0). Workload,
template and PodGroup are named like the PodGang (the template shortened to a DNS label).
Creation order is Workload, PodGroup, then pods (the operator creates pods only after
`sync_podgang`); deletion runs in reverse.

**What is lost: per-group minimums.** kube-scheduler counts any minCount pods of the gang,
so when a group can have more pods than its minimum (minAvailable < replicas, or an
autoscaler above minAvailable) the gang may start with, say, extra workers and no leader.
Admission reports this as the capability `PerGroupMinimums`, handled by `mismatchPolicy`:
`reject` (default) refuses the PodCliqueSet naming each clique's `minAvailable`;
`pass-through` admits it and names them in the `SchedulerCompatible=False` condition. A gang
whose groups all run exactly their minimum loses nothing: minCount is then every pod.
Also per KEP-4671 (v1.36 algorithm): a PodGroup of unlike pods (leader + workers) is placed
best-effort; kube-scheduler does not promise to find a placement that exists.

**Without Grove's gate** (`podSchedulingGate: false`, only with `gangScheduling` on the
PodGroup API, 1.36+): kube-scheduler's GangScheduling PreEnqueue holds a pod until its
PodGroup exists and minCount of its pods exist, and Permit binds none before minCount are
placed, so base PodGangs' pods are created ungated. A pod is then released once its gang's
minimum exists rather than once its PodGang is Initialized (the same thing when minCount is
every pod, as `reject` keeps multi-group gangs). See docs/real-cluster.md.

Limits, checked at admission: no topology-aware placement (see `topology.py`). The objects
are immutable: a changed gang (another minimum) re-creates them, and a 1.36+ PodGroup still
used by pods is only replaced once those pods are gone (its protection finalizer;
`SyncPending` until then). The builders are `phalanx.api.workloads.kube_gang_objects` /
`point_pod_at_gang` (and `kube_gang` for a gang of plain pods, as benchmarks need).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from phalanx.api import labels
from phalanx.api.pod import Pod
from phalanx.api.scheduling import TypedLocalObjectReference
from phalanx.api.workload_versions import (
    NEEDS_PODGROUP_API,
    WORKLOAD_API_VERSIONS,
    gate_free_problem,
)
from phalanx.api.workloads import (
    WORKLOAD_KINDS,
    kube_gang_objects,
    point_pod_at_gang,
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
    create_new,
    dns_label,
    ensure,
    ensure_deleted,
    never_synced,
    owned_by,
    owned_meta,
    recreate_on_spec_change,
    required_pod_labels,
)
from .registry import BackendConfigError

if TYPE_CHECKING:
    from phalanx.api.base import Resource
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.cluster.client import Client

log = logging.getLogger(__name__)

NEWEST_WORKLOAD_API = WORKLOAD_API_VERSIONS[-1]


class KubeBackendConfig(BackendConfig):
    """Profile config of `default-scheduler`.

    `workloadAPIVersion` unset = the newest version the server serves (the newest Phalanx
    knows when the client cannot tell). `mismatchPolicy` defaults to `reject`:
    kube-scheduler has no topology-aware placement and, with gangScheduling, no per-group
    minimum (`PerGroupMinimums`, see the module docs); silently spreading a gang that asked
    to be packed, or starting one without its leader, would surprise users. `pass-through`
    admits such PodCliqueSets and names what is ignored in `SchedulerCompatible`.
    """

    # With gangScheduling, kube-scheduler 1.36's GangScheduling PreEnqueue holds a pod until
    # its PodGroup exists and minCount pods of it exist, and its Permit releases none before
    # minCount are placed: `podSchedulingGate: false` is allowed then (see the module docs).
    GATE_OPTIONAL: ClassVar[bool] = True

    gang_scheduling: bool = Field(False, alias="gangScheduling")
    workload_api_version: str | None = Field(None, alias="workloadAPIVersion")
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")

    @model_validator(mode="after")
    def _gate_free_needs_podgroups(self) -> KubeBackendConfig:
        problem = None if self.pod_scheduling_gate else gate_free_problem(
            self.gang_scheduling, self.workload_api_version)
        if problem:  # reported at podSchedulingGate, the field that asks for it
            raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                type=PydanticCustomError("value_error", "false {problem}", {"problem": problem}),
                loc=("podSchedulingGate",), input=False)])
        return self

    @model_validator(mode="after")
    def _version_needs_gangs(self) -> KubeBackendConfig:
        if self.workload_api_version is not None and not self.gang_scheduling:
            # As phalanx.api.config_rules says it: the version of objects never written.
            raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                type=PydanticCustomError("value_error", "has no effect without gangScheduling: "
                                         "true (only gang scheduling writes Workload API "
                                         "objects)"),
                loc=("workloadAPIVersion",), input=self.workload_api_version)])
        return self

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


def _controller_ref(podgang: PodGang) -> TypedLocalObjectReference:
    return TypedLocalObjectReference(
        api_group=podgang.API_VERSION.rpartition("/")[0], kind=podgang.kind, name=podgang.name
    )


def gang_min_count(podgang: PodGang) -> int:
    """The one minCount kube-scheduler enforces for the whole PodGang."""
    return sum(g.min_replicas for g in podgang.spec.pod_groups)


def workload_objects(podgang: PodGang, version: str) -> list[Resource]:
    """The objects kube-scheduler needs for `podgang`, in creation order: one gang."""
    return kube_gang_objects(
        version, owned_meta(podgang, podgang.name), gang_min_count(podgang),
        template=dns_label(podgang.name), controller_ref=_controller_ref(podgang))


class KubeBackend(ConfiguredBackend[KubeBackendConfig]):
    name: ClassVar[str] = "default-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_DEFAULT

    def __init__(self, config: KubeBackendConfig) -> None:
        super().__init__(config)
        # kube-scheduler runs every placement plugin, DynamicResources included.
        pod_fields = {Capability.DYNAMIC_RESOURCES, Capability.POD_PLACEMENT_FIELDS}
        self.capabilities = frozenset(
            pod_fields | {Capability.GANG} if config.gang_scheduling else pod_fields
        )
        # PodGang uid -> (Workload API version, minCount) its objects were last ensured for.
        self._ensured: dict[str, tuple[str, int]] = {}
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
        if not self.config.pod_scheduling_gate and gate_free_problem(
                True, self.workload_api_version):
            raise BackendConfigError(
                "config.podSchedulingGate",
                f"false {NEEDS_PODGROUP_API}; this server's is {self.workload_api_version}")
        log.info("default-scheduler: gang scheduling via %s%s", self.workload_api_version,
                 "" if self.config.pod_scheduling_gate else ", pods without Grove's gate")

    async def sync_podgang(self, podgang: PodGang) -> None:
        if not self.config.gang_scheduling:
            return  # kube-scheduler needs no extra object
        client = self.client
        desired = workload_objects(podgang, self.workload_api_version)
        uid = podgang.metadata.uid or ""
        # The objects depend on the version and the minimum only: a PodGang whose spec
        # changed otherwise (its pod references) needs no read of them.
        inputs = (self.workload_api_version, gang_min_count(podgang))
        unchanged = self._ensured.get(uid) == inputs
        fresh = never_synced(podgang) and uid not in self._ensured
        for obj in () if unchanged else desired:
            if fresh and await create_new(client, obj):
                continue  # a new gang: nothing to read, release or merge
            fresh = False
            if self._podgroups is not None and isinstance(obj, self._podgroups.kind):
                await self._release_if_changed(obj, podgang)
            # Workload pod groups / templates and PodGroup specs are immutable.
            await ensure(client, obj, recreate_on_spec_change)
        if self._podgroups is not None:
            # Owned PodGroups under another name: from the one-PodGroup-per-group layout of
            # earlier Phalanx versions, seen when the PodGang changed since (or, for any
            # PodGang, at its deletion, which releases every PodGroup it owns). None when
            # this sync created every object, the Workload first: every layout names it after
            # the PodGang, so no earlier sync made anything. That skips a LIST for each new
            # gang whose pod references were written before its first sync (84 of 101 in a
            # scaling group's 100-replica scale-up: a third round trip before its gates).
            current = {obj.name for obj in desired[1:]}
            stale = [] if fresh else await self._podgroups.stale(client, podgang, current)
            for name in stale:
                await self._release_podgroup(name, podgang)
            self._podgroups.synced(podgang, current)
        self._ensured[uid] = inputs

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
        if self._podgroups is not None:
            self._podgroups.forget(podgang)
        self._ensured.pop(podgang.metadata.uid or "", None)

    @property
    def workload_api_version(self) -> str:
        return self._version

    @workload_api_version.setter
    def workload_api_version(self, version: str) -> None:
        self._version = version
        podgroup_kind = WORKLOAD_KINDS[version][1]  # None on 1.35: groups live in the Workload
        self._podgroups = GroupObjects(podgroup_kind) if podgroup_kind is not None else None

    async def _release_if_changed(self, desired: Resource, podgang: PodGang) -> None:
        """A PodGroup whose (immutable) spec must change is deleted through its protection:
        gone once no live pod uses it, else SyncPending (ensure() then creates it anew)."""
        try:
            live = await self.client.get(type(desired), desired.name, desired.namespace)
        except NotFound:
            return
        if owned_by(live, podgang) and (live.metadata.deletion_timestamp is not None
                                        or live.spec != desired.spec):  # type: ignore[attr-defined]
            await self._release_podgroup(desired.name, podgang)

    async def _release_podgroup(self, name: str, podgang: PodGang) -> None:
        """Delete a PodGroup; drop its protection finalizer once no live pod uses it,
        as kube-controller-manager's PodGroup protection does."""
        assert self._podgroups is not None
        client = self.client
        live = await ensure_deleted(client, self._podgroups.kind, name, podgang)
        if live is None or labels.FINALIZER_PODGROUP_PROTECTION not in live.metadata.finalizers:
            return
        pods = await client.list(
            Pod, podgang.namespace, label_selector={labels.LABEL_PODGANG: podgang.name}
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
            await client.update(live, returning=False)
        except NotFound:
            pass

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        if not self.config.gang_scheduling:
            return
        (podgang,) = required_pod_labels(pod, labels.LABEL_PODGANG)
        point_pod_at_gang(pod, self.workload_api_version, podgang, template=dns_label(podgang))

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        issues = features.capability_issues(pcs, self.capabilities, self.name)
        if self.config.gang_scheduling:
            issues += features.group_minimum_issues(
                pcs, self.name,
                why="its Workload API gangs a whole PodGang as one PodGroup whose minCount is "
                    "the sum of the groups' minimums, so any pods of the gang count")
        return issues


SPEC = register_backend(
    BackendSpec(
        name=KubeBackend.name,
        config_model=KubeBackendConfig,
        factory=KubeBackend,
        rbac=(("scheduling.k8s.io", ("workloads", "podgroups"), OWNED_OBJECT_VERBS),),
    )
)
