"""kai-scheduler, volcano, koordinator and phalanx-scheduler: objects field by field for the
Grove multi-node disaggregated sample, pod preparation, updates and deletion."""

from __future__ import annotations

import json

import pytest

from phalanx.api import labels
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup
from phalanx.backends.kai import KaiBackend, KaiBackendConfig
from phalanx.backends.koordinator import KoordinatorBackend, KoordinatorBackendConfig
from phalanx.backends.phalanx_scheduler import PhalanxBackend, PhalanxBackendConfig
from phalanx.backends.volcano import VolcanoBackend, VolcanoBackendConfig
from phalanx.cluster.client import NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

GROUPS = [g for g, _ in s.BASE_GROUPS]
PREFILL, DECODE = f"{s.PCS_NAME}-0-prefill-0", f"{s.PCS_NAME}-0-decode-0"


async def _cluster_with_pcs(queue: str | None = "team-a") -> MemoryCluster:
    client = MemoryCluster()
    await client.create(s.pcs("kai-scheduler", queue=queue))
    await client.create(s.cluster_topology())
    return client


# --- KAI -----------------------------------------------------------------------------------


def test_kai_podgroup_field_by_field_with_topology() -> None:
    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        obj = await client.get(KaiPodGroup, s.BASE_PODGANG, "default")
        assert [(r.kind, r.name, r.uid) for r in obj.metadata.owner_references] == [
            ("PodGang", s.BASE_PODGANG, pg.metadata.uid)
        ]
        topo = "grove-topology"
        assert obj.to_dict()["spec"] == {
            "minMember": 8,  # 1 + 4 + 1 + 2
            "queue": "team-a",  # from the PodCliqueSet's kai.scheduler/queue label
            "priorityClassName": "inference-high",
            "topologyConstraint": {"topology": topo, "requiredTopologyLevel": s.ZONE},
            "subGroups": [
                {"name": PREFILL, "topologyConstraint": {"topology": topo, "requiredTopologyLevel": s.RACK}},
                {"name": DECODE, "topologyConstraint": {"topology": topo, "requiredTopologyLevel": s.RACK}},
                {"name": GROUPS[0], "minMember": 1, "parent": PREFILL},
                {"name": GROUPS[1], "minMember": 4, "parent": PREFILL},
                {"name": GROUPS[2], "minMember": 1, "parent": DECODE},
                {"name": GROUPS[3], "minMember": 2, "parent": DECODE},
            ],
        }

    run_virtual(main)


def test_kai_update_keeps_fields_the_scheduler_owns() -> None:
    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang())
        await backend.sync_podgang(pg)
        live = await client.get(KaiPodGroup, s.BASE_PODGANG, "default")
        live.spec.mark_unschedulable = True
        live.spec.preemptibility = "non-preemptible"
        live.metadata.labels["kai.scheduler/extra"] = "x"
        live = await client.update(live)
        live.status.phase = "Running"
        await client.update_status(live)

        pg.spec.pod_groups[1].min_replicas = 3  # scale-in of the gang's minimum
        await backend.sync_podgang(pg)
        after = await client.get(KaiPodGroup, s.BASE_PODGANG, "default")
        assert after.metadata.uid == live.metadata.uid  # updated in place
        assert after.spec.min_member == 7
        assert after.spec.sub_groups is not None and after.spec.sub_groups[1].min_member == 3
        assert after.spec.mark_unschedulable is True
        assert after.spec.preemptibility == "non-preemptible"
        assert after.metadata.labels["kai.scheduler/extra"] == "x"
        assert after.status.phase == "Running"

    run_virtual(main)


def test_kai_queue_rules() -> None:
    backend = KaiBackend(KaiBackendConfig())
    issues = backend.validate_podcliqueset(s.pcs("kai-scheduler"))
    assert [(i.field, i.feature) for i in issues] == [(f"metadata.labels[{labels.LABEL_KAI_QUEUE}]", None)]
    assert backend.validate_podcliqueset(s.pcs("kai-scheduler", queue="q")) == []
    with_default = KaiBackend(KaiBackendConfig.model_validate({"defaultQueue": "fallback"}))
    assert with_default.validate_podcliqueset(s.pcs("kai-scheduler")) == []

    async def main() -> None:
        client = await _cluster_with_pcs(queue=None)
        await with_default.init(client)
        pg = await client.create(s.podgang())
        await with_default.sync_podgang(pg)
        assert (await client.get(KaiPodGroup, s.BASE_PODGANG, "default")).spec.queue == "fallback"

    run_virtual(main)


def test_kai_queue_on_clique_templates_as_grove_workloads_put_it() -> None:
    """Grove's e2e workloads label the clique templates, not the PodCliqueSet: admitted, and
    the PodGroup takes the queue of its own cliques before any other's or the PodCliqueSet's."""
    backend = KaiBackend(KaiBackendConfig())
    pcs = s.pcs("kai-scheduler", queue="pcs-queue")
    for clique in pcs.spec.template.cliques:
        clique.labels = {labels.LABEL_KAI_QUEUE: f"q-{clique.name}"}
    pcs.metadata.labels = {}
    assert backend.validate_podcliqueset(pcs) == []
    one = s.pcs("kai-scheduler")
    one.spec.template.cliques[-1].labels = {labels.LABEL_KAI_QUEUE: "only-the-last"}
    assert backend.validate_podcliqueset(one) == []

    async def main() -> None:
        client = MemoryCluster()
        await client.create(pcs)
        await backend.init(client)
        pg = await client.create(s.podgang())  # prefill-0 and decode-0 groups
        await backend.sync_podgang(pg)
        assert (await client.get(KaiPodGroup, s.BASE_PODGANG, "default")).spec.queue == \
            "q-pleader"  # its first clique's
        decode = s.podgang()
        decode.metadata.name = f"{s.PCS_NAME}-0-decode-0"
        decode.spec.pod_groups = [g for g in decode.spec.pod_groups if "-decode-" in g.name]
        decode = await client.create(decode)
        await backend.sync_podgang(decode)
        assert (await client.get(KaiPodGroup, decode.name, "default")).spec.queue == "q-dleader"

        bare = s.pcs("kai-scheduler", queue="pcs-queue")
        bare.metadata.name = "bare"
        await client.create(bare)
        gang = s.podgang()
        gang.metadata.name = "bare-0"
        gang.metadata.labels[labels.LABEL_PART_OF] = "bare"
        gang = await client.create(gang)
        await backend.sync_podgang(gang)
        assert (await client.get(KaiPodGroup, "bare-0", "default")).spec.queue == "pcs-queue"

    run_virtual(main)


def test_kai_prepare_pod_and_delete() -> None:
    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        pod = s.grove_pod(GROUPS[2])
        backend.prepare_pod(pod)
        assert pod.spec.scheduler_name == "kai-scheduler"
        assert pod.metadata.annotations == {labels.ANNOTATION_KAI_POD_GROUP: s.BASE_PODGANG}
        assert pod.metadata.labels[labels.LABEL_KAI_SUBGROUP] == GROUPS[2]

        pg = await client.create(s.podgang())
        await backend.sync_podgang(pg)
        await backend.on_podgang_delete(pg)
        with pytest.raises(NotFound):
            await client.get(KaiPodGroup, s.BASE_PODGANG, "default")
        await backend.on_podgang_delete(pg)  # idempotent

    run_virtual(main)


# --- Volcano -------------------------------------------------------------------------------


def test_volcano_podgroup_field_by_field() -> None:
    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = VolcanoBackend(VolcanoBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        obj = await client.get(VolcanoPodGroup, s.BASE_PODGANG, "default")
        assert obj.metadata.owner_references[0].uid == pg.metadata.uid
        assert obj.to_dict()["spec"] == {
            "minMember": 8,
            "minTaskMember": dict(s.BASE_GROUPS),
            "queue": "default",  # Volcano's default queue; the PCS has only a KAI queue label
            "priorityClassName": "inference-high",
            # zone is the 3rd level above a node (rack=1, block=2, zone=3).
            "networkTopology": {"mode": "hard", "highestTierAllowed": 3},
        }
        pod = s.grove_pod(GROUPS[1])
        backend.prepare_pod(pod)
        assert pod.spec.scheduler_name == "volcano"
        assert pod.metadata.annotations == {
            labels.ANNOTATION_VOLCANO_GROUP_NAME: s.BASE_PODGANG,
            labels.ANNOTATION_VOLCANO_TASK_SPEC: GROUPS[1],
        }
        await backend.on_podgang_delete(pg)
        with pytest.raises(NotFound):
            await client.get(VolcanoPodGroup, s.BASE_PODGANG, "default")

    run_virtual(main)


def test_volcano_queue_from_label_and_config() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = VolcanoBackend(VolcanoBackendConfig.model_validate({"defaultQueue": "batch"}))
        await backend.init(client)
        pg = s.podgang()
        pg.metadata.labels[labels.LABEL_VOLCANO_QUEUE] = "research"
        pg = await client.create(pg)
        await backend.sync_podgang(pg)
        assert (await client.get(VolcanoPodGroup, s.BASE_PODGANG, "default")).spec.queue == "research"
        other = await client.create(s.podgang(name="other-0"))
        await backend.sync_podgang(other)
        assert (await client.get(VolcanoPodGroup, "other-0", "default")).spec.queue == "batch"

    run_virtual(main)


# --- Koordinator ---------------------------------------------------------------------------


def test_koordinator_podgroups_and_pod_annotations() -> None:
    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = KoordinatorBackend(
            KoordinatorBackendConfig.model_validate({"mode": "NonStrict", "waitingTime": "10m"})
        )
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True, refs=True))
        await backend.sync_podgang(pg)
        gang_group = json.dumps([f"default/{g}" for g in GROUPS], separators=(",", ":"))
        for g, n in s.BASE_GROUPS:
            obj = await client.get(CoschedulingPodGroup, g, "default")
            assert obj.metadata.owner_references[0].uid == pg.metadata.uid
            assert obj.to_dict()["spec"] == {"minMember": n, "scheduleTimeoutSeconds": 600}
            assert obj.metadata.annotations == {
                labels.ANNOTATION_KOORD_GANG_MODE: "NonStrict",
                labels.ANNOTATION_KOORD_GANG_GROUPS: gang_group,
                labels.ANNOTATION_KOORD_GANG_WAITING_TIME: "10m",
                labels.ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC: (
                    '{"gatherStrategy":[{"layer":"ZoneTopologyLayer","strategy":"MustGather"}]}'
                ),
            }  # no total-number: references == minReplicas here

        pod = s.grove_pod(GROUPS[1])
        backend.prepare_pod(pod)
        assert pod.spec.scheduler_name == "koord-scheduler"
        assert pod.metadata.labels[labels.LABEL_POD_GROUP] == GROUPS[1]
        assert pod.metadata.annotations[labels.ANNOTATION_KOORD_GANG_NAME] == GROUPS[1]
        assert pod.metadata.annotations[labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE] == "4"
        assert pod.metadata.annotations[labels.ANNOTATION_KOORD_GANG_GROUPS] == gang_group

        await backend.on_podgang_delete(pg)
        for g in GROUPS:
            with pytest.raises(NotFound):
                await client.get(CoschedulingPodGroup, g, "default")
        # After the gang is gone, a pod gets only the label (the CR form).
        late = s.grove_pod(GROUPS[1])
        backend.prepare_pod(late)
        assert late.metadata.annotations == {}

    run_virtual(main)


def test_koordinator_config_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="waitingTime"):
        KoordinatorBackendConfig.model_validate({"waitingTime": "0s"})
    with pytest.raises(ValueError, match="mode"):
        KoordinatorBackendConfig.model_validate({"mode": "strict"})


# --- phalanx-scheduler ---------------------------------------------------------------------


def test_phalanx_backend_writes_nothing_and_reports_only_what_it_lacks() -> None:
    async def main() -> None:
        client = s.RecordingClient(MemoryCluster())
        backend = PhalanxBackend(PhalanxBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True))
        client.writes.clear()
        await backend.sync_podgang(pg)
        await backend.on_podgang_delete(pg)
        assert client.writes == []
        pod = s.grove_pod(GROUPS[0])
        backend.prepare_pod(pod)
        assert pod.spec.scheduler_name == "phalanx-scheduler"
        assert pod.metadata.labels[labels.LABEL_PODGANG] == s.BASE_PODGANG
        topo = {"packDomain": "zone"}
        issues = backend.validate_podcliqueset(
            s.pcs("phalanx-scheduler", queue="q", topologyConstraint=topo))
        # Topology and queues (KAI Queues, issue 26) are both honoured.
        assert issues == []

    run_virtual(main)


def test_kai_mirrors_the_cluster_topology_into_a_kai_topology() -> None:
    from phalanx.api.grove import ClusterTopology
    from phalanx.api.kai_topology import KaiTopology

    async def main() -> None:
        client = await _cluster_with_pcs()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        plain = await client.create(s.podgang(name="plain-0"))
        await backend.sync_podgang(plain)
        assert (await client.list(KaiTopology)).items == []  # no constraint, no Topology

        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        topo = await client.get(KaiTopology, "grove-topology")
        ct = await client.get(ClusterTopology, "grove-topology")
        assert [(r.kind, r.uid) for r in topo.metadata.owner_references] == [("ClusterTopology", ct.metadata.uid)]
        # KAI's CRD has no level alias: the node-label keys, broadest first.
        assert topo.to_dict()["spec"] == {
            "levels": [{"nodeLabel": s.ZONE}, {"nodeLabel": s.BLOCK}, {"nodeLabel": s.RACK},
                       {"nodeLabel": s.HOST}]
        }

    run_virtual(main)


def test_koordinator_deletes_podgroups_of_removed_groups() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = KoordinatorBackend(KoordinatorBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang())
        await backend.sync_podgang(pg)
        pg.spec.pod_groups = pg.spec.pod_groups[1:]
        await backend.sync_podgang(pg)
        left = sorted(o.name for o in (await client.list(CoschedulingPodGroup, "default")).items)
        assert left == sorted(GROUPS[1:])

    run_virtual(main)


def test_an_object_owned_by_another_podgang_is_not_taken_over() -> None:
    from phalanx.backends.objects import OwnedElsewhere

    async def main() -> None:
        client = MemoryCluster()
        backend = KoordinatorBackend(KoordinatorBackendConfig())
        await backend.init(client)
        first = await client.create(s.podgang())
        await backend.sync_podgang(first)
        clash = await client.create(s.podgang(name="clash-0"))  # same group names
        with pytest.raises(OwnedElsewhere, match=f"belongs to PodGang {s.BASE_PODGANG}"):
            await backend.sync_podgang(clash)
        owner = (await client.get(CoschedulingPodGroup, GROUPS[0], "default")).metadata.owner_references
        assert [r.uid for r in owner] == [first.metadata.uid]

    run_virtual(main)


@pytest.mark.parametrize(("backend", "needed"), [
    (KaiBackend(KaiBackendConfig()), [labels.LABEL_PODGANG]),
    (VolcanoBackend(VolcanoBackendConfig()), [labels.LABEL_PODGANG, labels.LABEL_PODCLIQUE]),
    (KoordinatorBackend(KoordinatorBackendConfig()), [labels.LABEL_PODCLIQUE]),
])
def test_prepare_pod_names_every_missing_grove_label(backend, needed) -> None:
    pod = s.grove_pod(GROUPS[0])
    for key in needed:
        pod.metadata.labels.pop(key)
    what = "label" if len(needed) == 1 else "labels"
    with pytest.raises(ValueError) as err:
        backend.prepare_pod(pod)
    assert str(err.value) == (
        f"pod {pod.name}: {what} {' and '.join(needed)} must be set before prepare_pod")
