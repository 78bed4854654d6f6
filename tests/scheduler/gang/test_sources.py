"""Every backend's gang object becomes the same Gang; pods resolve to it by schedulerName."""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.podgang import PodGang
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup, Workload
from phalanx.scheduler.gang import GangCache, GangManager, GangMode, PackConstraint, Phase, Source
from phalanx.scheduler.gang.sources import Levels, default_sources
from phalanx.scheduler.gang.sources.coscheduling import ANNOTATION_NETWORK_TOPOLOGY_SPEC


def make_pod(name: str, scheduler: str, *, labels_: dict[str, str] | None = None, ann: dict[str, str] | None = None,
             **spec: Any) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "labels": labels_ or {}, "annotations": ann or {}},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c"}], **spec},
        }
    )


LEVELS = Levels([("zone", "topology.kubernetes.io/zone"), ("rack", "example.com/rack"), ("host", "kubernetes.io/hostname")])


def test_podgang_groups_minimums_and_every_pack_scope() -> None:
    pg = PodGang.model_validate(
        {
            "metadata": {"name": "pcs-0", "namespace": "ns", "generation": 3},
            "spec": {
                "podgroups": [
                    {"name": "pcs-0-prefill", "minReplicas": 2, "topologyConstraint": {"packConstraint": {"required": "kubernetes.io/hostname"}}},
                    {"name": "pcs-0-decode", "minReplicas": 3},
                ],
                "topologyConstraint": {"packConstraint": {"required": "topology.kubernetes.io/zone", "preferred": "example.com/rack"}},
                "topologyConstraintGroupConfigs": [
                    {"name": "sg-0", "podGroupNames": ["pcs-0-prefill", "pcs-0-decode"], "topologyConstraint": {"packConstraint": {"preferred": "example.com/rack"}}}
                ],
            },
        }
    )
    src = default_sources()[labels.SCHEDULER_PHALANX][0]
    (g,) = src.gangs(pg)
    assert g.id == "podgang:ns/pcs-0" and g.min_member == 5 and g.mode is GangMode.STRICT and g.generation == 3
    assert [(m.name, m.min_member) for m in g.groups] == [("pcs-0-prefill", 2), ("pcs-0-decode", 3)]
    assert str(g.object_ref) == "PodGang ns/pcs-0"
    assert [(p.name, p.groups, p.constraints) for p in g.packs] == [
        ("podgang", None, (PackConstraint("topology.kubernetes.io/zone", True), PackConstraint("example.com/rack", False))),
        ("sg-0", ("pcs-0-prefill", "pcs-0-decode"), (PackConstraint("example.com/rack", False),)),
        ("pcs-0-prefill", ("pcs-0-prefill",), (PackConstraint("kubernetes.io/hostname", True),)),
    ]
    assert [p.name for p in g.packs_for("pcs-0-decode")] == ["podgang", "sg-0"]
    pod = make_pod("p", labels.SCHEDULER_PHALANX, labels_={labels.LABEL_PODGANG: "pcs-0", labels.LABEL_PODCLIQUE: "pcs-0-decode"})
    ref = src.member(pod)
    assert ref is not None and ref.gang_id == g.id and ref.group == "pcs-0-decode"


def test_workload_pod_groups_are_separate_gangs_and_basic_groups_are_free() -> None:
    wl = Workload.model_validate(
        {
            "metadata": {"name": "pcs-0", "namespace": "ns"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}, {"name": "router", "policy": {"basic": {}}}]},
        }
    )
    src = default_sources()[labels.SCHEDULER_DEFAULT][0]
    gangs = {g.name: g for g in src.gangs(wl)}
    assert gangs["pcs-0/workers"].min_member == 4 and gangs["pcs-0/workers"].is_gang
    assert not gangs["pcs-0/router"].is_gang
    ref = src.member(make_pod("p", labels.SCHEDULER_DEFAULT, workloadRef={"name": "pcs-0", "podGroup": "workers"}))
    assert ref is not None and ref.gang_id == "workload:ns/pcs-0/workers"
    # A basic-policy member passes PreEnqueue alone.
    cache = GangCache(default_sources())
    mgr = GangManager(cache)
    cache.set_object(src, wl)
    cache.add_pod(make_pod("r", labels.SCHEDULER_DEFAULT, workloadRef={"name": "pcs-0", "podGroup": "router"}))
    cache.add_pod(make_pod("w", labels.SCHEDULER_DEFAULT, workloadRef={"name": "pcs-0", "podGroup": "workers"}))
    assert mgr.admit("ns/r").ok
    held = mgr.admit("ns/w")
    assert not held.ok and held.reason == Phase.INCOMPLETE and "1/4 members created" in held.message


def test_kai_subgroup_tree_gives_leaf_minimums_and_parent_pack_scopes() -> None:
    pg = KaiPodGroup.model_validate(
        {
            "metadata": {"name": "pcs-0", "namespace": "ns"},
            "spec": {
                "minMember": 5,
                "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "topology.kubernetes.io/zone"},
                "subGroups": [
                    {"name": "sg", "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "example.com/rack"}},
                    {"name": "prefill", "parent": "sg", "minMember": 2},
                    {"name": "decode", "parent": "sg", "minMember": 3},
                ],
            },
        }
    )
    src = default_sources()[labels.SCHEDULER_KAI][0]
    (g,) = src.gangs(pg)
    assert g.source is Source.KAI and g.min_member == 5
    assert [(m.name, m.min_member) for m in g.groups] == [("prefill", 2), ("decode", 3)]
    assert [(p.name, p.groups) for p in g.packs] == [("podgroup", None), ("sg", ("prefill", "decode"))]
    pod = make_pod("p", labels.SCHEDULER_KAI, labels_={labels.LABEL_KAI_SUBGROUP: "decode", labels.LABEL_PODGANG: "pcs-0"},
                   ann={labels.ANNOTATION_KAI_POD_GROUP: "pcs-0"})
    ref = src.member(pod)
    assert ref is not None and ref.gang_id == "kai:ns/pcs-0" and ref.group == "decode"


def test_volcano_tasks_and_network_topology_tier_through_cluster_topology() -> None:
    pg = VolcanoPodGroup.model_validate(
        {
            "metadata": {"name": "pcs-0", "namespace": "ns"},
            "spec": {"minMember": 3, "minTaskMember": {"a": 1, "b": 2}, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
        }
    )
    (g,) = default_sources(lambda: LEVELS)[labels.SCHEDULER_VOLCANO][0].gangs(pg)
    assert [(m.name, m.min_member) for m in g.groups] == [("a", 1), ("b", 2)]
    assert g.packs[0].constraints == (PackConstraint("example.com/rack", True),) and not g.warnings
    (g2,) = default_sources()[labels.SCHEDULER_VOLCANO][0].gangs(pg)
    assert g2.packs == () and "ignored" in g2.warnings[0]
    pod = make_pod("p", labels.SCHEDULER_VOLCANO, ann={labels.ANNOTATION_VOLCANO_GROUP_NAME: "pcs-0", labels.ANNOTATION_VOLCANO_TASK_SPEC: "b"})
    ref = default_sources()[labels.SCHEDULER_VOLCANO][0].member(pod)
    assert ref is not None and ref.gang_id == "volcano:ns/pcs-0" and ref.group == "b"


def test_coscheduling_podgroup_with_koordinator_annotations() -> None:
    pg = CoschedulingPodGroup.model_validate(
        {
            "metadata": {
                "name": "pcs-0-decode",
                "namespace": "ns",
                "annotations": {
                    labels.ANNOTATION_KOORD_GANG_MODE: "NonStrict",
                    labels.ANNOTATION_KOORD_GANG_GROUPS: '["ns/pcs-0-decode", "ns/pcs-0-prefill"]',
                    labels.ANNOTATION_KOORD_GANG_WAITING_TIME: "90s",
                    ANNOTATION_NETWORK_TOPOLOGY_SPEC: '{"gatherStrategy":[{"layer":"RackTopologyLayer","strategy":"MustGather"}]}',
                },
            },
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30},
        }
    )
    src = default_sources(lambda: LEVELS)[labels.SCHEDULER_KOORDINATOR][0]
    (g,) = src.gangs(pg)
    # As Koordinator: a PodGroup's wait is spec.scheduleTimeoutSeconds, never the annotation.
    assert g.min_member == 3 and g.mode is GangMode.NON_STRICT and g.schedule_timeout == 30.0
    assert g.gang_group == ("coscheduling:ns/pcs-0-decode", "coscheduling:ns/pcs-0-prefill") and g.in_group
    assert g.packs[0].constraints == (PackConstraint("example.com/rack", True),)
    pod = make_pod("p", labels.SCHEDULER_KOORDINATOR, labels_={labels.LABEL_POD_GROUP: "pcs-0-decode"})
    ref = src.member(pod)
    assert ref is not None and ref.gang_id == g.id


def test_annotation_only_koordinator_gang_is_declared_by_its_pods() -> None:
    cache = GangCache(default_sources())
    mgr = GangManager(cache)
    ann = {labels.ANNOTATION_KOORD_GANG_NAME: "g", labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE: "2"}
    cache.add_pod(make_pod("a", labels.SCHEDULER_KOORDINATOR, ann=ann))
    st = cache.get("coscheduling:ns/g")
    assert st is not None and st.spec is not None and st.spec.source is Source.ANNOTATION and st.spec.min_member == 2
    assert mgr.admit("ns/a").reason == Phase.INCOMPLETE
    cache.add_pod(make_pod("b", labels.SCHEDULER_KOORDINATOR, ann=ann))
    assert mgr.admit("ns/a").ok


def test_pods_are_read_with_their_scheduler_sources_only() -> None:
    """A KAI pod carries grove.io/podgang too, but counts against its KAI PodGroup."""
    cache = GangCache(default_sources())
    pod = make_pod("p", labels.SCHEDULER_KAI, labels_={labels.LABEL_PODGANG: "pcs-0"}, ann={labels.ANNOTATION_KAI_POD_GROUP: "pcs-0"})
    cache.add_pod(pod)
    assert cache.gang_of("ns/p") is cache.get("kai:ns/pcs-0")
    assert cache.get("podgang:ns/pcs-0") is None
    other = make_pod("q", "some-other-scheduler", labels_={labels.LABEL_PODGANG: "pcs-0"})
    cache.add_pod(other)
    assert cache.gang_of("ns/q") is None
