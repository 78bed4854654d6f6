"""`scheduler-plugins`: kubernetes-sigs/scheduler-plugins' Coscheduling plugin.

One `scheduling.x-k8s.io/v1alpha1` PodGroup per PodGang, named like the PodGang and owned by it
(the API group scheduler-plugins serves today; Koordinator's older `scheduling.sigs.k8s.io`
is the koordinator backend's):

    spec:
      minMember: <sum of the groups' minReplicas>          # omitted when 0 (the CRD wants >= 1)
      scheduleTimeoutSeconds: <scheduleTimeout in seconds>  # when configured

Pods get `schedulerName: scheduler-plugins-scheduler` (the profile scheduler-plugins installs)
and the label `scheduling.x-k8s.io/pod-group: <PodGang>`.

Coscheduling gangs each PodGroup on its own, with one count and no way to tie PodGroups
together, so a PodGang (all-or-nothing across its groups) is one PodGroup. What is lost, as for
kube-scheduler's Workload API: per-group minimums (`PerGroupMinimums`, reported per the
mismatch policy; a gang whose groups all run exactly their minimum loses nothing), topology
(Coscheduling has no pack constraint) and queues (ElasticQuota is per namespace, not a queue).
The PodGroup's status is scheduler-plugins' (its PodGroup controller writes phase and counts;
the CRD has no conditions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from phalanx.api import labels
from phalanx.api.config import register_scheduler_name
from phalanx.api.duration import DURATION_PATTERN, parse_duration
from phalanx.api.schedulerplugins import (
    POD_GROUP_LABEL,
    SCHEDULER_PLUGINS,
    SchedulerPluginsPodGroup,
    SchedulerPluginsPodGroupSpec,
)

from . import features
from .base import (
    OWNED_OBJECT_VERBS,
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    register_backend,
)
from .objects import (
    ConfiguredBackend,
    ensure_deleted,
    ensure_new,
    merge_spec_fields,
    never_synced,
    owned_meta,
    required_pod_labels,
)

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod

PROFILE = "scheduler-plugins"
# The PodGroup fields this backend owns; minResources (an admin's) is kept.
_merge_managed = merge_spec_fields("min_member", "schedule_timeout_seconds")


class SchedulerPluginsBackendConfig(BackendConfig):
    """Profile config of `scheduler-plugins`.

    `scheduleTimeout` (a Go duration) is each PodGroup's `scheduleTimeoutSeconds`; unset, the
    plugin's permitWaitingTimeSeconds applies. `mismatchPolicy` defaults to `reject`: a lost
    per-group minimum or pack constraint changes whether or where a gang runs.
    """

    schedule_timeout: str | None = Field(None, alias="scheduleTimeout", pattern=DURATION_PATTERN)
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")

    @field_validator("schedule_timeout")
    @classmethod
    def _whole_seconds(cls, value: str | None) -> str | None:
        if value is not None and parse_duration(value) < 1:
            raise ValueError(f"scheduleTimeout must be at least 1s, got {value!r}")
        return value


def schedulerplugins_podgroup(
    podgang: PodGang, config: SchedulerPluginsBackendConfig
) -> SchedulerPluginsPodGroup:
    """The PodGroup for `podgang` (pure: tested field by field)."""
    timeout = int(parse_duration(config.schedule_timeout)) if config.schedule_timeout else None
    return SchedulerPluginsPodGroup(
        metadata=owned_meta(podgang, podgang.name),
        spec=SchedulerPluginsPodGroupSpec(
            min_member=podgang.min_member() or None, schedule_timeout_seconds=timeout),
    )


class SchedulerPluginsBackend(ConfiguredBackend[SchedulerPluginsBackendConfig]):
    name: ClassVar[str] = PROFILE
    scheduler_name: ClassVar[str] = SCHEDULER_PLUGINS
    # scheduler-plugins' scheduler is kube-scheduler with extra plugins: the default ones
    # (DynamicResources included) honour every pod placement field.
    capabilities: frozenset[Capability] = frozenset({
        Capability.GANG, Capability.DYNAMIC_RESOURCES, Capability.POD_PLACEMENT_FIELDS})

    async def sync_podgang(self, podgang: PodGang) -> None:
        await ensure_new(self.client, schedulerplugins_podgroup(podgang, self.config),
                         _merge_managed, new=never_synced(podgang))

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        await ensure_deleted(self.client, SchedulerPluginsPodGroup, podgang.name, podgang)

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        (podgang,) = required_pod_labels(pod, labels.LABEL_PODGANG)
        pod.metadata.labels[POD_GROUP_LABEL] = podgang

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        issues = features.capability_issues(pcs, self.capabilities, self.name)
        issues += features.group_minimum_issues(
            pcs, self.name,
            why="Coscheduling gangs a whole PodGang as one PodGroup whose minMember is the "
                "sum of the groups' minimums, so any pods of the gang count")
        return issues


register_scheduler_name(PROFILE)
SPEC = register_backend(
    BackendSpec(
        name=SchedulerPluginsBackend.name,
        config_model=SchedulerPluginsBackendConfig,
        factory=SchedulerPluginsBackend,
        rbac=(("scheduling.x-k8s.io", ("podgroups",), OWNED_OBJECT_VERBS),),
    )
)
