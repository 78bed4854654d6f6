"""`koordinator`: Koordinator's koord-scheduler (Coscheduling plugin).

One `scheduling.sigs.k8s.io/v1alpha1` PodGroup per PodGang group, named like the group (the
PodClique, unique in the namespace) and owned by the PodGang. The PodGang's groups are
bound into one Koordinator *gang group*, so they are admitted together:

    metadata.annotations:
      gang.scheduling.koordinator.sh/mode: Strict | NonStrict
      gang.scheduling.koordinator.sh/groups: '["ns/group-a","ns/group-b"]'   # 2+ groups only
      gang.scheduling.koordinator.sh/waiting-time: <waitingTime>            # when configured
      gang.scheduling.koordinator.sh/total-number: <pods>                    # once references are known
      gang.scheduling.koordinator.sh/network-topology-spec: '{"gatherStrategy":[...]}'  # PodGang pack
    spec: {minMember: <minReplicas>, scheduleTimeoutSeconds: <waitingTime in seconds>}

Pods get `schedulerName: koord-scheduler`, the label `pod-group.scheduling.sigs.k8s.io:
<group>` and, when the backend has already synced their PodGang (the usual order), the same
gang annotations with `name` and `min-available`. Koordinator reads either form; both carry
the same values. No queues (Koordinator's quota is ElasticQuota) and no per-group or nested
pack constraints.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator

from phalanx.api import labels
from phalanx.api.duration import DURATION_PATTERN, parse_duration
from phalanx.api.scheduling import CoschedulingPodGroup, CoschedulingPodGroupSpec

from . import features, topology
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
    GroupObjects,
    ensure,
    ensure_deleted,
    owned_meta,
    replace_spec,
    required_pod_labels,
)

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod


class KoordinatorBackendConfig(BackendConfig):
    """Profile config of `koordinator`.

    `mode` Strict (Koordinator's default): a failed member sends the whole gang back.
    `mismatchPolicy` defaults to `reject`: what Koordinator lacks (per-clique and
    scaling-group pack constraints, queues) would change where or whether a gang runs.
    """

    mode: Literal["Strict", "NonStrict"] = "Strict"
    waiting_time: str | None = Field(None, alias="waitingTime", pattern=DURATION_PATTERN)
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")

    @field_validator("waiting_time")
    @classmethod
    def _positive(cls, value: str | None) -> str | None:
        if value is not None and parse_duration(value) <= 0:
            raise ValueError(f"waitingTime must be positive, got {value!r}")
        return value


def gang_annotations(
    podgang: PodGang, config: KoordinatorBackendConfig, levels: topology.TopologyLevels | None
) -> dict[str, dict[str, str]]:
    """Per PodGang group: the Koordinator gang annotations its PodGroup carries."""
    ns = podgang.namespace or "default"
    groups = podgang.spec.pod_groups
    shared = {labels.ANNOTATION_KOORD_GANG_MODE: config.mode}
    if len(groups) > 1:
        shared[labels.ANNOTATION_KOORD_GANG_GROUPS] = json.dumps(
            [f"{ns}/{g.name}" for g in groups], separators=(",", ":")
        )
    if config.waiting_time:
        shared[labels.ANNOTATION_KOORD_GANG_WAITING_TIME] = config.waiting_time
    required, preferred = topology.pack_keys(podgang.spec.topology_constraint)
    spec = topology.koordinator_network_topology_annotation(levels, required, preferred)
    if spec:
        shared[labels.ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC] = spec
    out: dict[str, dict[str, str]] = {}
    for g in groups:
        ann = dict(shared)
        if len(g.pod_references) > g.min_replicas:
            ann[labels.ANNOTATION_KOORD_GANG_TOTAL_NUMBER] = str(len(g.pod_references))
        out[g.name] = ann
    return out


def koordinator_podgroups(
    podgang: PodGang, config: KoordinatorBackendConfig, levels: topology.TopologyLevels | None
) -> list[CoschedulingPodGroup]:
    """The PodGroups for `podgang` (pure: unit-tested field by field)."""
    timeout = int(parse_duration(config.waiting_time)) if config.waiting_time else None
    annotations = gang_annotations(podgang, config, levels)
    objects = []
    for g in podgang.spec.pod_groups:
        meta = owned_meta(podgang, g.name)
        meta.annotations = annotations[g.name]
        objects.append(
            CoschedulingPodGroup(
                metadata=meta,
                spec=CoschedulingPodGroupSpec(
                    min_member=g.min_replicas, schedule_timeout_seconds=timeout
                ),
            )
        )
    return objects


class KoordinatorBackend(ConfiguredBackend[KoordinatorBackendConfig]):
    name: ClassVar[str] = "koordinator"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_KOORDINATOR
    # koord-scheduler is kube-scheduler (1.35) plus Koordinator's plugins: the default plugins,
    # DynamicResources included, honour every pod placement field.
    capabilities: frozenset[Capability] = frozenset({
        Capability.GANG, Capability.TOPOLOGY, Capability.DYNAMIC_RESOURCES,
        Capability.POD_PLACEMENT_FIELDS})

    def __init__(self, config: KoordinatorBackendConfig) -> None:
        super().__init__(config)
        # (namespace, group) -> pod annotations, filled by sync_podgang for prepare_pod,
        # which sees only the pod.
        self._pod_annotations: dict[tuple[str, str], dict[str, str]] = {}
        self._podgroups = GroupObjects(CoschedulingPodGroup)

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        levels = None
        if podgang.spec.topology_constraint is not None:
            levels = await topology.podgang_topology(client, podgang)
        ns = podgang.namespace or "default"
        for pg, g in zip(
            koordinator_podgroups(podgang, self.config, levels), podgang.spec.pod_groups, strict=True
        ):
            await ensure(client, pg, replace_spec)
            self._pod_annotations[(ns, g.name)] = {
                labels.ANNOTATION_KOORD_GANG_NAME: g.name,
                labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE: str(g.min_replicas),
                **pg.metadata.annotations,
            }
        # PodGroups of groups the PodGang no longer has (its cliques changed).
        current = {g.name for g in podgang.spec.pod_groups}
        await self._delete(podgang, await self._podgroups.stale(client, podgang, current))
        self._podgroups.synced(podgang, current)

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        await self._delete(podgang, await self._podgroups.all(self.client, podgang))

    async def _delete(self, podgang: PodGang, names: list[str]) -> None:
        ns = podgang.namespace or "default"
        for name in names:
            await ensure_deleted(self.client, CoschedulingPodGroup, name, podgang)
            self._pod_annotations.pop((ns, name), None)

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        (group,) = required_pod_labels(pod, labels.LABEL_PODCLIQUE)
        pod.metadata.labels[labels.LABEL_POD_GROUP] = group
        cached = self._pod_annotations.get((pod.namespace or "default", group))
        if cached:
            pod.metadata.annotations.update(cached)

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        return features.capability_issues(
            pcs, self.capabilities, self.name, gang_wide_topology_only=True
        )


SPEC = register_backend(
    BackendSpec(
        name=KoordinatorBackend.name,
        config_model=KoordinatorBackendConfig,
        factory=KoordinatorBackend,
        rbac=(("scheduling.sigs.k8s.io", ("podgroups",), OWNED_OBJECT_VERBS),),
    )
)
