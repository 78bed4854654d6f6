"""The KAI PodGroup from a workload's metadata, as KAI's grove grouper builds it
(phalanx/backends/kai_metadata.py; KAI pkg/podgrouper/podgrouper/plugins/grove/grove_grouper.go
and defaultgrouper/default_grouper.go)."""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.grove import PodCliqueSet
from phalanx.api.scheduling import KaiPodGroup
from phalanx.backends.kai import KaiBackend, KaiBackendConfig, _merge_managed
from phalanx.backends.kai_metadata import podgroup_metadata
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s


class _Cache:
    def __init__(self, pcs: PodCliqueSet) -> None:
        self.pcs = pcs

    def cached(self, kind: type, name: str, namespace: str | None) -> Any:
        return self.pcs if name == self.pcs.name else None


def _pcs(pcs_labels: dict | None = None, annotations: dict | None = None,
         clique_labels: dict | None = None) -> PodCliqueSet:
    pcs = s.pcs("kai-scheduler")
    pcs.metadata.labels = dict(pcs_labels or {})
    pcs.metadata.annotations = dict(annotations or {})
    for c in pcs.spec.template.cliques:
        c.labels = dict(clique_labels or {}) or None
    return pcs


def _podgroup(pcs: PodCliqueSet, *, topology: bool = False, config: dict | None = None,
              before: KaiPodGroup | None = None) -> KaiPodGroup:
    async def main() -> KaiPodGroup:
        client = MemoryCluster()
        await client.create(pcs)
        if topology:
            await client.create(s.cluster_topology())
        backend = KaiBackend(KaiBackendConfig.model_validate(config or {}))
        await backend.init(client)
        pg = await client.create(s.podgang(topology=topology))
        if before is not None:
            await client.create(before)
        await backend.sync_podgang(pg)
        return await client.get(KaiPodGroup, s.BASE_PODGANG, "default")

    return run_virtual(main)


def test_the_pcs_queue_goes_before_a_clique_templates() -> None:
    """Grove mirrors the PodCliqueSet's labels onto the PodGang, which KAI reads before the
    pod's: the PodCliqueSet's queue wins over a clique template's."""
    pcs = _pcs({labels.LABEL_KAI_QUEUE: "pcs-q"}, clique_labels={labels.LABEL_KAI_QUEUE: "pod-q"})
    assert podgroup_metadata(s.podgang(), pcs).queue == "pcs-q"
    assert podgroup_metadata(s.podgang(), _pcs(clique_labels={
        labels.LABEL_KAI_QUEUE: "pod-q"})).queue == "pod-q"


def test_the_project_label_is_the_queue_fallback_before_default_queue() -> None:
    """default_grouper.go calculateQueueName: `project`, with the pods' node pool appended."""
    project = _pcs({labels.LABEL_KAI_PROJECT: "team-b"})
    assert podgroup_metadata(s.podgang(), project, "team-a").queue == "team-b"
    pooled = _pcs({labels.LABEL_KAI_PROJECT: "team-b"},
                  clique_labels={labels.LABEL_KAI_NODE_POOL: "pool-x"})
    assert podgroup_metadata(s.podgang(), pooled, "team-a").queue == "team-b-pool-x"
    assert podgroup_metadata(s.podgang(), _pcs(), "team-a").queue == "team-a"
    both = _pcs({labels.LABEL_KAI_PROJECT: "team-b", labels.LABEL_KAI_QUEUE: "q"})
    assert podgroup_metadata(s.podgang(), both).queue == "q"
    # Admitted without a queue label or defaultQueue when `project` names one.
    assert KaiBackend(KaiBackendConfig()).validate_podcliqueset(project) == []


def test_preemptibility_priority_class_topology_and_labels_reach_the_podgroup() -> None:
    pcs = _pcs({labels.LABEL_KAI_QUEUE: "q", labels.LABEL_KAI_PREEMPTIBILITY: "non-preemptible",
                labels.LABEL_KAI_PRIORITY_CLASS: "inference", labels.LABEL_KAI_NODE_POOL: "p",
                "team": "ml", "grove.io/something": "x"},
               {labels.ANNOTATION_KAI_TOPOLOGY: "kai-topo",
                labels.ANNOTATION_KAI_TOPOLOGY_REQUIRED: s.RACK})
    pg = _podgroup(pcs)
    assert pg.spec.queue == "q"
    assert pg.spec.preemptibility == "non-preemptible"
    assert pg.spec.priority_class_name == "inference"  # the label over the PodGang's class
    tc = pg.spec.topology_constraint
    assert tc is not None and (tc.topology, tc.required_topology_level,
                               tc.preferred_topology_level) == ("kai-topo", s.RACK, None)
    assert pg.metadata.labels["team"] == "ml"
    assert pg.metadata.labels[labels.LABEL_KAI_NODE_POOL] == "p"  # KAI's shards read it
    assert "grove.io/something" not in pg.metadata.labels  # Grove mirrors none of those
    assert pg.metadata.labels[labels.LABEL_PODGANG] == s.BASE_PODGANG  # ours kept


def test_a_pack_constraint_goes_before_the_topology_annotations() -> None:
    """The annotations fill only what the PodGang's pack constraint leaves unset."""
    pcs = _pcs({labels.LABEL_KAI_QUEUE: "q"},
               {labels.ANNOTATION_KAI_TOPOLOGY: "kai-topo",
                labels.ANNOTATION_KAI_TOPOLOGY_REQUIRED: s.RACK,
                labels.ANNOTATION_KAI_TOPOLOGY_PREFERRED: s.HOST})
    tc = _podgroup(pcs, topology=True).spec.topology_constraint
    assert tc is not None
    assert (tc.required_topology_level, tc.preferred_topology_level) == (s.ZONE, s.HOST)
    assert tc.topology == "grove-topology"  # the ClusterTopology the PodGang packs into


def test_a_node_pool_on_the_pods_reaches_the_podgroup() -> None:
    pcs = _pcs({labels.LABEL_KAI_QUEUE: "q"}, clique_labels={labels.LABEL_KAI_NODE_POOL: "p"})
    assert _podgroup(pcs).metadata.labels[labels.LABEL_KAI_NODE_POOL] == "p"


def test_an_admins_preemptibility_is_kept_the_labels_is_written() -> None:
    admin = KaiPodGroup.model_validate({"metadata": {"name": "x"}, "spec": {
        "queue": "q", "preemptibility": "non-preemptible"}})
    desired = KaiPodGroup.model_validate({"metadata": {"name": "x"}, "spec": {"queue": "q"}})
    assert _merge_managed(admin, desired) is False
    assert admin.spec.preemptibility == "non-preemptible"
    desired.spec.preemptibility = "preemptible"
    assert _merge_managed(admin, desired) is True
    assert admin.spec.preemptibility == "preemptible"


def test_the_pods_get_the_podgroups_priority_class() -> None:
    """KAI schedules the gang with the PodGroup's class: the pods get it too, so their own
    priority (phalanx-scheduler standing in for KAI; kubelet eviction) is the same; an explicit
    class the label overrides is reported."""
    pcs = _pcs({labels.LABEL_KAI_QUEUE: "q", labels.LABEL_KAI_PRIORITY_CLASS: "inference"})
    backend = KaiBackend(KaiBackendConfig())
    backend.cache = _Cache(pcs)  # type: ignore[assignment]
    pod = s.grove_pod(s.BASE_GROUPS[0][0])
    pod.metadata.labels[labels.LABEL_PART_OF] = s.PCS_NAME
    pod.spec.priority_class_name, pod.spec.priority = "inference-high", 1000
    backend.prepare_pod(pod)
    assert (pod.spec.priority_class_name, pod.spec.priority) == ("inference", None)
    [issue] = backend.validate_podcliqueset(pcs)  # the sample's template class
    assert issue.field == "spec.template.priorityClassName" and issue.best_effort
    assert "'inference-high' is overridden by metadata.labels[priorityClassName] " \
           "('inference')" in issue.message
