"""`volcano`: the Volcano batch scheduler.

One `scheduling.volcano.sh/v1beta1` PodGroup per PodGang, named like the PodGang and owned by it:

    spec:
      minMember: <sum of the groups' minReplicas>
      minTaskMember: {<PodGang group>: <minReplicas>, ...}   # per-task gang minimums
      queue: <scheduling.volcano.sh/queue-name annotation, else volcano.sh/queue-name label
              (hints.VOLCANO_QUEUE); else defaultQueue>
      priorityClassName: <PodGang priorityClassName>
      networkTopology: {mode: hard|soft, highestTierAllowed: <tier>}  # PodGang-level pack

The queue: Volcano's PodGroup controller reads the pod's `scheduling.volcano.sh/queue-name`
annotation; Phalanx writes the PodGroup itself (Volcano's controller leaves pods of a group
alone), so it reads the same key first -- on the PodGang, the clique templates of its groups
(the pods carry it), the PodCliqueSet -- then Phalanx's earlier `volcano.sh/queue-name` label
in the same order; a lower place overridden by another value is reported as ignored. KAI's
queue label is not Volcano's: reported as ignored too.

Pods get `schedulerName: volcano` and the annotations `scheduling.k8s.io/group-name` (the
PodGroup) and `volcano.sh/task-spec` (the task, i.e. the PodGang group, that minTaskMember
counts). Their `volcano.sh/preemptable` (annotation, else label) is Volcano's: "false" keeps
them from being evicted. Volcano packs a whole PodGroup into one HyperNode tier; it has no per-group
(clique) or nested constraint, and no tier for a single host (see `topology.py`).

The tiers name `topology.volcano.sh/v1alpha1` HyperNodes, which this backend writes for each
ClusterTopology (`volcano_hypernodes.py`): when the ClusterTopology appears or changes
(`sync_cluster_topology`), and when a PodGang packs into it, at most every
`HYPERNODE_REFRESH` seconds (nodes come and go; one node list per refresh, and only the
HyperNodes that changed are written). A cluster without the HyperNode CRD gets none; the
backend says so once. Volcano's PodGroup CRD has no status subresource: its status is
Volcano's, written with the object.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from phalanx.api import labels
from phalanx.api.core import Node
from phalanx.api.scheduling import VolcanoNetworkTopology, VolcanoPodGroup, VolcanoPodGroupSpec
from phalanx.api.volcano_topology import HyperNode

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
from .objects import (
    ConfiguredBackend,
    delete_object,
    ensure,
    ensure_deleted,
    ensure_new,
    merge_spec_fields,
    never_synced,
    owned_by,
    owned_meta,
    replace_spec,
    required_pod_labels,
    served,
)
from .volcano_hypernodes import hypernode_tree

if TYPE_CHECKING:
    from phalanx.api.grove import ClusterTopology, PodCliqueSet, PodGang
    from phalanx.api.pod import Pod

log = logging.getLogger(__name__)

VOLCANO_DEFAULT_QUEUE = "default"  # the queue Volcano creates at install
# Seconds between two HyperNode refreshes of one topology driven by PodGang syncs.
HYPERNODE_REFRESH = 30.0
_NOT_SERVED = (f"{HyperNode.API_VERSION} {HyperNode.KIND} is not served (Volcano's network "
               "topology CRD is not installed): pack constraints name HyperNode tiers that "
               "cannot be written")
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
    network = topology.volcano_network_topology(levels, required, preferred)
    return VolcanoPodGroup(
        metadata=owned_meta(podgang, podgang.name),
        spec=VolcanoPodGroupSpec(
            min_member=podgang.min_member(),
            min_task_member={g.name: g.min_replicas for g in podgang.spec.pod_groups} or None,
            queue=queue,
            priority_class_name=podgang.spec.priority_class_name,
            network_topology=VolcanoNetworkTopology.model_validate(network) if network else None,
        ),
    )


class VolcanoBackend(ConfiguredBackend[VolcanoBackendConfig]):
    name: ClassVar[str] = "volcano"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_VOLCANO
    # Volcano's predicates plugin allocates DRA claims only when its
    # `predicate.DynamicResourceAllocationEnable` argument is set (off by default).
    capabilities: frozenset[Capability] = frozenset(
        {Capability.GANG, Capability.TOPOLOGY, Capability.GANG_PREEMPTION,
         Capability.VOLCANO_QUEUES, Capability.VOLCANO_PREEMPTABLE,
         Capability.POD_PLACEMENT_FIELDS}
    )

    def __init__(self, config: VolcanoBackendConfig) -> None:
        super().__init__(config)
        self._hypernodes_served: bool | None = None
        # topology name -> (when its HyperNodes were last synced, name -> spec written).
        self._hypernodes: dict[str, tuple[float, dict[str, Any]]] = {}
        self._hypernodes_lock = asyncio.Lock()

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        queue = await hints.podgang_value(client, podgang, hints.VOLCANO_QUEUE, self.cache)
        levels = None
        if podgang.spec.topology_constraint is not None:
            levels = await topology.podgang_topology(client, podgang, self.cache)
            if levels is None:
                log.warning("PodGang %s: no ClusterTopology to map its pack constraint",
                            podgang.key)
            else:
                last = self._hypernodes.get(levels.name)
                if last is None or client.clock.now() - last[0] >= HYPERNODE_REFRESH:
                    await self._sync_hypernodes(levels)
        desired = volcano_podgroup(podgang, queue or self.config.default_queue, levels)
        await ensure_new(client, desired, _merge_managed, new=never_synced(podgang))

    async def sync_cluster_topology(self, ct: ClusterTopology) -> None:
        """The topology's HyperNodes (the topology controller reports a failure, e.g. the
        HyperNode CRD not installed, in the topology's status)."""
        if not await self._sync_hypernodes(topology.TopologyLevels.from_cluster_topology(ct),
                                           look=True):
            raise RuntimeError(_NOT_SERVED)

    async def _sync_hypernodes(self, levels: topology.TopologyLevels, *,
                               look: bool = False) -> bool:
        """Write the topology's HyperNodes for the current nodes; delete the ones it owns
        that no domain needs any more. False when the server does not serve HyperNodes.
        PodGang syncs write only what changed since the last sync; the topology controller
        (`look`) checks every one, so a changed or deleted HyperNode is repaired. One sync
        at a time (both would race)."""
        async with self._hypernodes_lock:
            return await self._sync_hypernodes_locked(levels, look)

    async def _sync_hypernodes_locked(self, levels: topology.TopologyLevels, look: bool) -> bool:
        client = self.client
        if self._hypernodes_served is None:
            self._hypernodes_served = await served(client, HyperNode)
            if not self._hypernodes_served:
                log.warning("%s", _NOT_SERVED)
        if not self._hypernodes_served:
            return False
        # Labels are all it reads: the nodes' metadata, not their status (images, conditions).
        nodes = (await client.list_metadata(Node)).items
        tree = hypernode_tree(levels, (meta.labels for meta in nodes))
        _, written = self._hypernodes.get(levels.name, (0.0, {}))
        wanted = {h.name: h.spec for h in tree}
        stale = look or not written or bool(written.keys() - wanted.keys())  # domains gone
        # Checking every one (`look`) or deleting: one list of the managed HyperNodes is
        # read, not each by name (hundreds at 5,000 nodes). Only what differs is written.
        live = await self._managed_hypernodes() if stale else {}
        for hn in tree:
            if look or written.get(hn.name) != hn.spec:
                found = live.get(hn.name)
                if found is not None:
                    await ensure(client, hn, replace_spec, listed=found)
                else:
                    await ensure_new(client, hn, replace_spec,
                                     new=stale or hn.name not in written)
        if stale:
            await self._delete_stale_hypernodes(levels, wanted, live)
        self._hypernodes[levels.name] = (client.clock.now(), wanted)
        return True

    async def _managed_hypernodes(self) -> dict[str, HyperNode]:
        found = await self.client.list(
            HyperNode, label_selector={labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE})
        return {hn.name: hn for hn in found.items}

    async def _delete_stale_hypernodes(self, levels: topology.TopologyLevels,
                                       wanted: dict[str, Any],
                                       live: dict[str, HyperNode]) -> None:
        source = levels.source
        if source is None or not source.metadata.uid:
            return
        for hn in live.values():
            if hn.name not in wanted and owned_by(hn, source):
                await delete_object(self.client, hn)

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
        return issues + hints.overridden_issues(
            pcs, hints.VOLCANO_QUEUE, "Volcano queue", Capability.VOLCANO_QUEUES,
            "Volcano reads the pod's scheduling.volcano.sh/queue-name annotation; then the "
            "PodCliqueSet's, then the volcano.sh/queue-name label")


SPEC = register_backend(
    BackendSpec(
        name=VolcanoBackend.name,
        config_model=VolcanoBackendConfig,
        factory=VolcanoBackend,
        rbac=(
            ("scheduling.volcano.sh", ("podgroups",), OWNED_OBJECT_VERBS),
            ("topology.volcano.sh", ("hypernodes",), OWNED_OBJECT_VERBS),
        ),
    )
)
