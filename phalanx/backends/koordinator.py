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

The layers the network-topology annotation names are defined by the cluster's one
`scheduling.koordinator.sh/v1alpha1` ClusterNetworkTopology, `default` (the only one
koord-scheduler reads), which this backend writes from the ClusterTopology, owned by it:

    networkTopologySpec:
    - {topologyLayer: ZoneTopologyLayer, labelKey: [topology.kubernetes.io/zone]}
    - {topologyLayer: BlockTopologyLayer, parentTopologyLayer: ZoneTopologyLayer, labelKey: [...]}
    - {topologyLayer: NodeTopologyLayer, parentTopologyLayer: BlockTopologyLayer}

A `default` written by someone else (not labelled as the operator's) is left alone; so is one
already mirroring another ClusterTopology (Koordinator has room for one): either is reported
once. Koordinator's PodGroup CRD has no status subresource and no conditions; its status is
Koordinator's (phalanx-scheduler reports gang verdicts on the member pods).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.duration import DURATION_PATTERN, parse_duration
from phalanx.api.koordinator_topology import (
    DEFAULT_NETWORK_TOPOLOGY,
    NODE_TOPOLOGY_LAYER,
    ClusterNetworkTopology,
    ClusterNetworkTopologySpec,
    NetworkTopologyLayer,
)
from phalanx.api.scheduling import CoschedulingPodGroup, CoschedulingPodGroupSpec
from phalanx.cluster.client import NotFound

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
    ensure_new,
    never_synced,
    owned_by,
    owned_meta,
    replace_spec,
    required_pod_labels,
    served,
)

if TYPE_CHECKING:
    from phalanx.api.grove import ClusterTopology, PodCliqueSet, PodGang
    from phalanx.api.pod import Pod

log = logging.getLogger(__name__)


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


def cluster_network_topology(levels: topology.TopologyLevels) -> ClusterNetworkTopology:
    """The `default` ClusterNetworkTopology with a layer per level of the ClusterTopology
    (pure: tested on its own). Each layer's parent is the next broader one; the host level is
    Koordinator's built-in NodeTopologyLayer, the chain's start, present even when the
    ClusterTopology has no host level."""
    layers: list[NetworkTopologyLayer] = []
    parent: str | None = None
    for level in levels.levels:
        name = levels.koordinator_layer(level.key)
        if name is None or name == NODE_TOPOLOGY_LAYER:
            continue
        layers.append(NetworkTopologyLayer(topology_layer=name, parent_topology_layer=parent,
                                           label_key=[level.key]))
        parent = name
    layers.append(NetworkTopologyLayer(topology_layer=NODE_TOPOLOGY_LAYER,
                                       parent_topology_layer=parent))
    meta = ObjectMeta(name=DEFAULT_NETWORK_TOPOLOGY,
                      labels={labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE})
    if levels.source is not None and levels.source.metadata.uid:
        meta.owner_references = [levels.source.owner_reference(controller=True, block=False)]
    return ClusterNetworkTopology(
        metadata=meta, spec=ClusterNetworkTopologySpec(network_topology_spec=layers))


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
        self._network_served: bool | None = None
        self._network_written: ClusterNetworkTopologySpec | None = None
        self._network_reported: set[str] = set()  # problems said once
        self._network_lock = asyncio.Lock()

    async def sync_podgang(self, podgang: PodGang) -> None:
        client = self.client
        levels = None
        if podgang.spec.topology_constraint is not None:
            levels = await topology.podgang_topology(client, podgang, self.cache)
            if levels is not None:
                await self._sync_network_topology(levels)
        ns = podgang.namespace or "default"
        for pg, g in zip(
            koordinator_podgroups(podgang, self.config, levels), podgang.spec.pod_groups, strict=True
        ):
            await ensure_new(client, pg, replace_spec, new=never_synced(podgang))
            self._pod_annotations[(ns, g.name)] = {
                labels.ANNOTATION_KOORD_GANG_NAME: g.name,
                labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE: str(g.min_replicas),
                **pg.metadata.annotations,
            }
        # PodGroups of groups the PodGang no longer has (its cliques changed).
        current = {g.name for g in podgang.spec.pod_groups}
        await self._delete(podgang, await self._podgroups.stale(client, podgang, current))
        self._podgroups.synced(podgang, current)

    # The topology object this backend keeps (the topology controller watches it for drift).
    topology_kind: ClassVar[type] = ClusterNetworkTopology

    async def sync_cluster_topology(self, ct: ClusterTopology) -> None:
        """`default` for this topology (the topology controller reports a failure in the
        topology's status: the CRD not installed, or `default` someone else's)."""
        problem = await self._sync_network_topology(
            topology.TopologyLevels.from_cluster_topology(ct), look=True)
        if problem:
            raise RuntimeError(problem)

    async def check_topology_drift(self, ct: ClusterTopology, reference: str
                                   ) -> tuple[bool, str, int]:
        """An admin's ClusterNetworkTopology named by the binding, against its levels: the
        same layers, parents and label keys (in sync, why not, its generation)."""
        try:
            live = await self.client.get(ClusterNetworkTopology, reference)
        except NotFound:
            return False, f"ClusterNetworkTopology {reference!r} not found", 0
        want = cluster_network_topology(topology.TopologyLevels.from_cluster_topology(ct))
        if live.spec != want.spec:
            return (False, "ClusterNetworkTopology layers differ from ClusterTopologyBinding "
                    "levels", live.metadata.generation or 0)
        return True, "", live.metadata.generation or 0

    async def _sync_network_topology(self, levels: topology.TopologyLevels, *,
                                     look: bool = False) -> str:
        """Write `default` for these levels unless it is someone else's. Returns what kept
        it from being written ("" when written or unchanged), said once. PodGang syncs trust
        what was written last; the topology controller (`look`) reads the live object, so a
        changed or deleted one is repaired. One writer at a time (both would race)."""
        async with self._network_lock:
            return await self._sync_network_topology_locked(levels, look)

    async def _sync_network_topology_locked(self, levels: topology.TopologyLevels,
                                            look: bool) -> str:
        desired = cluster_network_topology(levels)
        if not look and self._network_written == desired.spec:
            return ""
        client = self.client
        if self._network_served is None:
            self._network_served = await served(client, ClusterNetworkTopology)
        if not self._network_served:
            return self._report_once(
                f"{ClusterNetworkTopology.API_VERSION} {ClusterNetworkTopology.KIND} is not "
                "served: the network-topology layers of gang annotations are undefined")
        try:
            live = await client.get(ClusterNetworkTopology, DEFAULT_NETWORK_TOPOLOGY)
        except NotFound:
            live = None
        if live is not None:
            ours = live.metadata.labels.get(labels.LABEL_MANAGED_BY) == labels.MANAGED_BY_VALUE
            source = levels.source
            if not ours or (source is not None and live.metadata.owner_references
                            and not owned_by(live, source)):
                return self._report_once(
                    f"ClusterNetworkTopology {DEFAULT_NETWORK_TOPOLOGY} is not the operator's "
                    f"mirror of ClusterTopology {levels.name}; left as it is (koord-scheduler "
                    "reads only that one)")
        await ensure(client, desired, replace_spec)
        self._network_written = desired.spec
        return ""

    def _report_once(self, message: str) -> str:
        if message not in self._network_reported:
            self._network_reported.add(message)
            log.warning("%s", message)
        return message

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        await self._delete(podgang, await self._podgroups.all(self.client, podgang))
        self._podgroups.forget(podgang)

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
        rbac=(
            ("scheduling.sigs.k8s.io", ("podgroups",), OWNED_OBJECT_VERBS),
            ("scheduling.koordinator.sh", ("clusternetworktopologies",), OWNED_OBJECT_VERBS),
        ),
    )
)
