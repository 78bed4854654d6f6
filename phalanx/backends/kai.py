"""`kai-scheduler`: NVIDIA KAI Scheduler.

One `scheduling.run.ai/v2alpha2` PodGroup per PodGang, named like the PodGang and owned by it:

    metadata.labels: <the PodCliqueSet's, kai.scheduler/node-pool of the pods>  # shards
    spec:
      minMember: <sum of the groups' minReplicas>
      queue: <kai.scheduler/queue label of the PodGang, else of its PodCliqueSet, else of its
              clique templates; else `project`[-<node pool>]; else defaultQueue>
      priorityClassName: <priorityClassName label, else the PodGang's priorityClassName>
      preemptibility: <kai.scheduler/preemptibility label>
      topologyConstraint: {topology: <ClusterTopology name>, requiredTopologyLevel: <key>,
                           preferredTopologyLevel: <key>}          # PodGang-level pack
                          # (levels it leaves unset: kai.scheduler/topology* annotations)
      subGroups:
      - {name: <scaling-group replica config>, topologyConstraint}  # topologyConstraintGroupConfigs
      - {name: <PodGang group>, minMember: <minReplicas>, parent?, topologyConstraint?}

Every ClusterTopology is mirrored into KAI's cluster-scoped `kai.scheduler/v1alpha1` Topology
of the same name, owned by it: `levels: [{nodeLabel: <key>}]` broadest first, as soon as it
exists, with topology-aware scheduling on (`sync_cluster_topology`), and again when a PodGang
packs into it. KAI's levels are immutable, so a changed ClusterTopology replaces the Topology
(deleted and created again). The PodGroup's `topologyConstraint.topology` names it.

The labels and annotations are resolved as KAI's grove grouper resolves them
(`kai_metadata.py`). Pods get `schedulerName: kai-scheduler`, the `pod-group-name` annotation
and the `kai.scheduler/subgroup-name` label, and, when a `priorityClassName` label sets the
PodGroup's class, that class too: KAI schedules the gang with the PodGroup's priority, so the
pods' own (kubelet eviction; phalanx-scheduler standing in for kai-scheduler) is the same.
Only the fields above are written on update; preemptibility only when the label sets it, so an
admin's is kept, as is whatever KAI or an admin set elsewhere (markUnschedulable, status...).
KAI supports every feature a PodCliqueSet can ask for except Volcano's keys, which are
reported as ignored. It needs a queue, so a PodCliqueSet without a queue or `project` label is
rejected unless the profile sets `defaultQueue`. An invalid `kai.scheduler/preemptibility` is
refused (KAI's grouper fails on it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.kai_topology import KaiTopology, KaiTopologyLevel, KaiTopologySpec
from phalanx.api.scheduling import KaiPodGroup, KaiPodGroupSpec, KaiSubGroup, KaiTopologyConstraint
from phalanx.cluster.client import NotFound

from . import features, hints, topology
from .base import (
    OWNED_OBJECT_VERBS,
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    register_backend,
)
from .kai_metadata import (
    PROJECT,
    KaiMetadata,
    kai_override_issues,
    podgroup_metadata,
    top_level_levels,
)
from .objects import (
    ConfiguredBackend,
    ensure,
    ensure_deleted,
    ensure_new,
    merge_spec_fields,
    never_synced,
    owned_meta,
    owning_podcliqueset,
    recreate_on_spec_change,
    required_pod_labels,
    served,
)

if TYPE_CHECKING:
    from phalanx.api.grove import ClusterTopology, PodCliqueSet, PodGang, PodGangTopologyConstraint
    from phalanx.api.pod import Pod

log = logging.getLogger(__name__)
_TOPOLOGY_NOT_SERVED = (f"{KaiTopology.API_VERSION} {KaiTopology.KIND} is not served (KAI's "
                        "topology CRD is not installed): PodGroups name Topologies that "
                        "cannot be written")

# The PodGroup fields this backend owns; everything else on the object is left alone.
_merge_fields = merge_spec_fields(
    "min_member", "queue", "priority_class_name", "topology_constraint", "sub_groups"
)


def _merge_managed(existing: KaiPodGroup, desired: KaiPodGroup) -> bool:
    """The owned fields, and preemptibility when the label sets it (else an admin's stays)."""
    changed = _merge_fields(existing, desired)
    wanted = desired.spec.preemptibility
    if wanted is not None and existing.spec.preemptibility != wanted:
        existing.spec.preemptibility = wanted
        changed = True
    return changed


class KaiBackendConfig(BackendConfig):
    """Profile config of `kai-scheduler`.

    `mismatchPolicy` defaults to `reject`: KAI supports every feature Grove expresses, so
    a mismatch can only be a plain error worth surfacing at admission.
    """

    default_queue: str | None = Field(None, alias="defaultQueue", min_length=1)
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")


def _kai_constraint(
    tc: PodGangTopologyConstraint | None, topology_name: str | None
) -> KaiTopologyConstraint | None:
    required, preferred = topology.pack_keys(tc)
    encoded = topology.kai_topology_constraint(topology_name, required, preferred)
    return KaiTopologyConstraint.model_validate(encoded) if encoded else None


def _top_constraint(podgang: PodGang, meta: KaiMetadata, topology_name: str | None
                    ) -> KaiTopologyConstraint | None:
    """The PodGang's pack constraint; the levels it leaves unset from the annotations (then
    the Topology is the annotation's when the PodGang names none)."""
    required, preferred, from_annotations = top_level_levels(
        *topology.pack_keys(podgang.spec.topology_constraint), meta)
    name = topology_name
    if from_annotations and not name:
        name = meta.topology.get(labels.ANNOTATION_KAI_TOPOLOGY)
    encoded = topology.kai_topology_constraint(name, required, preferred)
    return KaiTopologyConstraint.model_validate(encoded) if encoded else None


def kai_podgroup(podgang: PodGang, meta: KaiMetadata | str | None,
                 topology_name: str | None) -> KaiPodGroup:
    """The KAI PodGroup for `podgang` (pure: unit-tested field by field). `meta`: what the
    workload's metadata asks for (kai_metadata.py); a bare queue name, or None, asks only that."""
    if not isinstance(meta, KaiMetadata):
        meta = KaiMetadata(queue=meta)
    spec = podgang.spec
    parent_of: dict[str, str] = {}
    sub_groups: list[KaiSubGroup] = []
    for cfg in spec.topology_constraint_group_configs or ():
        if not cfg.pod_group_names:
            continue
        for member in cfg.pod_group_names:
            parent_of[member] = cfg.name
        sub_groups.append(
            KaiSubGroup(
                name=cfg.name,
                topology_constraint=_kai_constraint(cfg.topology_constraint, topology_name),
            )
        )
    for g in spec.pod_groups:
        sub_groups.append(
            KaiSubGroup(
                name=g.name,
                min_member=g.min_replicas or None,  # KAI's schema: at least 1 when set
                parent=parent_of.get(g.name),
                topology_constraint=_kai_constraint(g.topology_constraint, topology_name),
            )
        )
    metadata = owned_meta(podgang, podgang.name)
    metadata.labels = {**meta.labels, **metadata.labels}  # the operator's own win
    return KaiPodGroup(
        metadata=metadata,
        spec=KaiPodGroupSpec(
            min_member=podgang.min_member() or None,
            queue=meta.queue,
            priority_class_name=meta.priority_class_name or spec.priority_class_name,
            preemptibility=meta.preemptibility,  # type: ignore[arg-type]
            topology_constraint=_top_constraint(podgang, meta, topology_name),
            sub_groups=sub_groups or None,
        ),
    )


def kai_topology(levels: topology.TopologyLevels) -> KaiTopology:
    """KAI's Topology mirroring a ClusterTopology (same name, owned by it): its node-label
    keys, broadest first. KAI's levels have no name of their own (no domain)."""
    meta = ObjectMeta(name=levels.name, labels={labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE})
    if levels.source is not None and levels.source.metadata.uid:
        meta.owner_references = [levels.source.owner_reference(controller=True, block=False)]
    spec = KaiTopologySpec(levels=[KaiTopologyLevel(node_label=lv.key) for lv in levels.levels])
    return KaiTopology(metadata=meta, spec=spec)


def _has_constraints(podgang: PodGang) -> bool:
    spec = podgang.spec
    return (
        spec.topology_constraint is not None
        or any(g.topology_constraint is not None for g in spec.pod_groups)
        or any(c.topology_constraint is not None for c in spec.topology_constraint_group_configs or ())
    )


class KaiBackend(ConfiguredBackend[KaiBackendConfig]):
    name: ClassVar[str] = "kai-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_KAI
    # Everything but Volcano's own keys (its queue and preemptable), which KAI does not read.
    capabilities: frozenset[Capability] = frozenset(Capability) - {
        Capability.VOLCANO_QUEUES, Capability.VOLCANO_PREEMPTABLE}
    _topology_served: bool | None = None

    def __init__(self, config: KaiBackendConfig) -> None:
        super().__init__(config)
        self._topology_lock = asyncio.Lock()
        self._foreign_topologies: set[str] = set()

    async def _ensure_topology(self, levels: topology.TopologyLevels) -> bool:
        """KAI's Topology for these levels; False when the server does not serve the kind
        (said once: the PodGroups then name a Topology KAI cannot find). One writer at a
        time: the topology controller and PodGang syncs would race to create it."""
        async with self._topology_lock:
            return await self._ensure_topology_locked(levels)

    async def _ensure_topology_locked(self, levels: topology.TopologyLevels) -> bool:
        if self._topology_served is None:
            self._topology_served = await served(self.client, KaiTopology)
            if not self._topology_served:
                log.warning("%s", _TOPOLOGY_NOT_SERVED)
        if not self._topology_served:
            return False
        desired = kai_topology(levels)
        try:
            live = await self.client.get(KaiTopology, desired.name)
        except NotFound:
            live = None
        if live is not None and \
                live.metadata.labels.get(labels.LABEL_MANAGED_BY) != labels.MANAGED_BY_VALUE:
            if desired.name not in self._foreign_topologies:  # an admin's: never replaced
                self._foreign_topologies.add(desired.name)
                log.warning("KAI Topology %s is not the operator's; left as it is",
                            desired.name)
            return True
        await ensure(self.client, desired, recreate_on_spec_change)
        return True

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        pcs = await owning_podcliqueset(client, podgang, self.cache)
        meta = podgroup_metadata(podgang, pcs, self.config.default_queue)
        if meta.queue is None:
            log.warning("PodGang %s has no KAI queue; KAI will not schedule it", podgang.key)
        topology_name = None
        if _has_constraints(podgang):
            levels = await topology.podgang_topology(client, podgang, self.cache)
            if levels is None:
                log.warning("PodGang %s: no ClusterTopology for its pack constraints", podgang.key)
            else:
                topology_name = levels.name
                await self._ensure_topology(levels)
        await ensure_new(client, kai_podgroup(podgang, meta, topology_name), _merge_managed,
                         new=never_synced(podgang))

    async def sync_cluster_topology(self, ct: ClusterTopology) -> None:
        if not await self._ensure_topology(topology.TopologyLevels.from_cluster_topology(ct)):
            raise RuntimeError(_TOPOLOGY_NOT_SERVED)  # the topology controller reports it

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        await ensure_deleted(self.client, KaiPodGroup, podgang.name, podgang)

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        (podgang,) = required_pod_labels(pod, labels.LABEL_PODGANG)
        pod.metadata.annotations[labels.ANNOTATION_KAI_POD_GROUP] = podgang
        group = pod.metadata.labels.get(labels.LABEL_PODCLIQUE)
        if group:
            pod.metadata.labels[labels.LABEL_KAI_SUBGROUP] = group
        pcs = hints.cached_podcliqueset(self.cache, pod)
        cls = pcs.metadata.labels.get(labels.LABEL_KAI_PRIORITY_CLASS) if pcs else None
        if cls and pod.spec.priority_class_name != cls:
            pod.spec.priority_class_name = cls  # the PodGroup's: the API server resolves it
            pod.spec.priority = None

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        issues = features.capability_issues(pcs, self.capabilities, self.name)
        issues += hints.preemptibility_errors(pcs)
        if not hints.first(pcs, hints.KAI_QUEUE) and not hints.first(pcs, PROJECT) \
                and not self.config.default_queue:
            issues.append(
                ValidationIssue(
                    field=f"metadata.labels[{labels.LABEL_KAI_QUEUE}]",
                    message=(
                        "kai-scheduler schedules only pods of a queue: set this label on the "
                        "PodCliqueSet or on its clique templates (spec.template.cliques[]."
                        "labels), a `project` label (KAI's fallback), or defaultQueue in the "
                        "kai-scheduler profile config"
                    ),
                )
            )
        return issues + kai_override_issues(pcs)


SPEC = register_backend(
    BackendSpec(
        name=KaiBackend.name,
        config_model=KaiBackendConfig,
        factory=KaiBackend,
        rbac=(
            ("scheduling.run.ai", ("podgroups",), OWNED_OBJECT_VERBS),
            ("kai.scheduler", ("topologies",), OWNED_OBJECT_VERBS),
        ),
    )
)
