"""`volcano`: the Volcano batch scheduler.

One `scheduling.volcano.sh/v1beta1` PodGroup per PodGang, named like the PodGang and owned by it:

    spec:
      minMember: <sum of the groups' minReplicas>
      minTaskMember: {<PodGang group>: <minReplicas>, ...}   # per-task gang minimums
      queue: <volcano.sh/queue-name label of the PodGang or its PodCliqueSet; else defaultQueue>
      priorityClassName: <PodGang priorityClassName>
      networkTopology: {mode: hard|soft, highestTierAllowed: <tier>}  # PodGang-level pack

Pods get `schedulerName: volcano` and the annotations `scheduling.k8s.io/group-name` (the
PodGroup) and `volcano.sh/task-spec` (the task, i.e. the PodGang group, that minTaskMember
counts). Volcano packs a whole PodGroup into one HyperNode tier; it has no per-group
(clique) or nested constraint, and no tier for a single host (see `topology.py`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from phalanx.api import labels
from phalanx.api.scheduling import VolcanoPodGroup, VolcanoPodGroupSpec

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
    ensure,
    ensure_deleted,
    merge_spec_fields,
    owned_meta,
    podgang_queue,
    required_pod_labels,
)

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod

log = logging.getLogger(__name__)

VOLCANO_DEFAULT_QUEUE = "default"  # the queue Volcano creates at install
# The PodGroup fields this backend owns; Volcano's own (minResources, ...) are kept.
_merge_managed = merge_spec_fields(
    "min_member", "min_task_member", "queue", "priority_class_name", "network_topology"
)


class VolcanoBackendConfig(BackendConfig):
    """Profile config of `volcano`.

    `mismatchPolicy` defaults to `reject`: the features Volcano lacks (per-clique and
    scaling-group pack constraints) are placement guarantees, not hints.
    """

    default_queue: str = Field(VOLCANO_DEFAULT_QUEUE, alias="defaultQueue", min_length=1)
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")


def volcano_podgroup(
    podgang: PodGang, queue: str, levels: topology.TopologyLevels | None
) -> VolcanoPodGroup:
    """The Volcano PodGroup for `podgang` (pure: unit-tested field by field)."""
    required, preferred = topology.pack_keys(podgang.spec.topology_constraint)
    return VolcanoPodGroup(
        metadata=owned_meta(podgang, podgang.name),
        spec=VolcanoPodGroupSpec(
            min_member=podgang.min_member(),
            min_task_member={g.name: g.min_replicas for g in podgang.spec.pod_groups} or None,
            queue=queue,
            priority_class_name=podgang.spec.priority_class_name,
            network_topology=topology.volcano_network_topology(levels, required, preferred),
        ),
    )


class VolcanoBackend(ConfiguredBackend[VolcanoBackendConfig]):
    name: ClassVar[str] = "volcano"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_VOLCANO
    # Volcano's predicates plugin allocates DRA claims only when its
    # `predicate.DynamicResourceAllocationEnable` argument is set (off by default).
    capabilities: frozenset[Capability] = frozenset(
        {Capability.GANG, Capability.TOPOLOGY, Capability.GANG_PREEMPTION, Capability.QUEUES,
         Capability.POD_PLACEMENT_FIELDS}
    )

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        queue = await podgang_queue(client, podgang, labels.LABEL_VOLCANO_QUEUE)
        levels = None
        if podgang.spec.topology_constraint is not None:
            levels = await topology.podgang_topology(client, podgang)
            if levels is None:
                log.warning("PodGang %s: no ClusterTopology to map its pack constraint", podgang.key)
        desired = volcano_podgroup(podgang, queue or self.config.default_queue, levels)
        await ensure(client, desired, _merge_managed)

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        await ensure_deleted(self.client, VolcanoPodGroup, podgang.name, podgang)

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        podgang, group = required_pod_labels(pod, labels.LABEL_PODGANG, labels.LABEL_PODCLIQUE)
        pod.metadata.annotations[labels.ANNOTATION_VOLCANO_GROUP_NAME] = podgang
        pod.metadata.annotations[labels.ANNOTATION_VOLCANO_TASK_SPEC] = group

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        issues = features.capability_issues(
            pcs, self.capabilities, self.name, gang_wide_topology_only=True
        )
        tc = pcs.spec.template.topology_constraint
        if tc is not None and tc.required_domain == topology.HOST_DOMAIN:
            issues.append(
                ValidationIssue(
                    field="spec.template.topologyConstraint",
                    message=(
                        "required pack domain 'host' has no Volcano HyperNode tier (tier 1 "
                        "already spans several nodes)"
                    ),
                    feature=Capability.TOPOLOGY,
                )
            )
        return issues


SPEC = register_backend(
    BackendSpec(
        name=VolcanoBackend.name,
        config_model=VolcanoBackendConfig,
        factory=VolcanoBackend,
        rbac=(("scheduling.volcano.sh", ("podgroups",), OWNED_OBJECT_VERBS),),
    )
)
