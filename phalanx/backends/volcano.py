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
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    register_backend,
)
from .objects import (
    ClientHolder,
    ensure,
    ensure_deleted,
    merge_spec_fields,
    owned_meta,
    owning_podcliqueset,
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


class VolcanoBackend(ClientHolder):
    name: ClassVar[str] = "volcano"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_VOLCANO
    capabilities: frozenset[Capability] = frozenset(
        {Capability.GANG, Capability.TOPOLOGY, Capability.GANG_PREEMPTION, Capability.QUEUES}
    )

    def __init__(self, config: VolcanoBackendConfig) -> None:
        self.config = config
        self.mismatch_policy = config.mismatch_policy

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        queue = podgang.metadata.labels.get(labels.LABEL_VOLCANO_QUEUE)
        if not queue:
            pcs = await owning_podcliqueset(client, podgang)
            queue = features.pcs_queue(pcs, labels.LABEL_VOLCANO_QUEUE) if pcs else None
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
        podgang = pod.metadata.labels.get(labels.LABEL_PODGANG)
        group = pod.metadata.labels.get(labels.LABEL_PODCLIQUE)
        if not podgang or not group:
            raise ValueError(
                f"pod {pod.name}: labels {labels.LABEL_PODGANG} and {labels.LABEL_PODCLIQUE} "
                "must be set before prepare_pod"
            )
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
        rbac=(
            (
                "scheduling.volcano.sh",
                ("podgroups",),
                ("get", "list", "watch", "create", "update", "patch", "delete"),
            ),
        ),
    )
)
