import pytest

from phalanx.api.base import set_status_condition
from phalanx.api.errors import ManifestError
from phalanx.api.registry import from_dict
from phalanx.api.schedulerplugins import SchedulerPluginsPodGroup, SchedulerPluginsPodGroupStatus
from phalanx.api.scheduling import (
    GANG_INCOMPLETE,
    GANG_OBJECT_KINDS,
    CoschedulingPodGroup,
    CoschedulingPodGroupStatus,
    KaiPodGroup,
    SchedulerCondition,
    VolcanoPodGroup,
    Workload,
)


def _workload(groups):
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "pcs-0", "namespace": "default"},
        "spec": {"podGroups": groups},
    }


def test_workload_round_trip():
    data = _workload(
        [
            {"name": "leader", "policy": {"gang": {"minCount": 1}}},
            {"name": "router", "policy": {"basic": {}}},
        ]
    )
    wl = from_dict(data)
    assert isinstance(wl, Workload) and wl.to_dict() == data
    assert wl.pod_group("leader").policy.gang.min_count == 1


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{"name": "a", "policy": {}}], "spec.podGroups[0].policy: exactly one of `basic` or `gang`"),
        (
            [{"name": "a", "policy": {"basic": {}, "gang": {"minCount": 1}}}],
            "exactly one of `basic` or `gang` must be set",
        ),
        ([{"name": "a", "policy": {"gang": {"minCount": 0}}}], "minCount: must be > 0"),
        ([], "spec.podGroups: must have at least 1 items, got 0"),
        (
            [{"name": f"g{i}", "policy": {"basic": {}}} for i in range(9)],
            "spec.podGroups: must have at most 8 items, got 9",
        ),
    ],
)
def test_workload_validation(groups, message):
    with pytest.raises(ManifestError) as info:
        from_dict(_workload(groups))
    assert message in str(info.value)


def test_kai_podgroup_round_trip():
    data = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pcs-0", "namespace": "default"},
        "spec": {
            "minMember": 3,
            "queue": "team-a",
            "priorityClassName": "inference-high",
            "markUnschedulable": True,
            "schedulingBackoff": 1,
            "topologyConstraint": {
                "topology": "default",
                "requiredTopologyLevel": "topology.kubernetes.io/rack",
            },
            "subGroups": [
                {"name": "leader", "minMember": 1},
                {"name": "worker", "minMember": 2, "parent": "leader"},
            ],
        },
        "status": {
            "phase": "Running",
            "running": 3,
            "conditions": [
                {"type": "UnschedulableOnNodePool", "status": "False", "transitionID": "2",
                 "reason": "", "message": ""}
            ],
        },
    }
    pg = from_dict(data)
    assert isinstance(pg, KaiPodGroup) and pg.to_dict() == data


def test_volcano_and_coscheduling_round_trip():
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pcs-0"},
        "spec": {
            "minMember": 3,
            "minTaskMember": {"leader": 1, "worker": 2},
            "queue": "default",
            "minResources": {"cpu": "3", "nvidia.com/gpu": 24},
        },
        "status": {"phase": "Inqueue"},
    }
    assert from_dict(volcano).to_dict() == volcano
    cosched = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pcs-0"},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 60},
        "status": {"phase": "Scheduling", "scheduled": 1},
    }
    assert isinstance(from_dict(cosched), CoschedulingPodGroup)
    assert from_dict(cosched).to_dict() == cosched


# Kinds whose schema has status.conditions (the coscheduling PodGroups have none).
CONDITION_KINDS = [k for k in GANG_OBJECT_KINDS if k is not CoschedulingPodGroup]


@pytest.mark.parametrize("cls", CONDITION_KINDS)
def test_every_gang_object_with_conditions_carries_the_gang_condition(cls):
    spec = {"podGroups": [{"name": "a", "policy": {"basic": {}}}]} if cls is Workload else {}
    obj = cls.model_validate({"metadata": {"name": "g"}, "spec": spec})
    assert set_status_condition(obj, GANG_INCOMPLETE, True, "MembersMissing", "3/8 created")
    assert not set_status_condition(obj, GANG_INCOMPLETE, True, "MembersMissing", "3/8 created")
    assert set_status_condition(obj, GANG_INCOMPLETE, True, "MembersMissing", "5/8 created")
    (cond,) = obj.status.conditions
    assert cond.message == "5/8 created"
    if cls in (KaiPodGroup, VolcanoPodGroup):
        assert isinstance(cond, SchedulerCondition)
    dumped = obj.to_dict()["status"]["conditions"][0]
    assert dumped["type"] == GANG_INCOMPLETE
    assert type(obj).model_validate(obj.to_dict()) == obj


def test_peer_conditions_never_carry_observed_generation():
    """KAI's and Volcano's condition schemas have no observedGeneration: a strict server
    refuses it (issue 22), so it is neither dumped nor in the schema."""
    for cls in (KaiPodGroup, VolcanoPodGroup):
        obj = cls.model_validate({"metadata": {"name": "g", "generation": 4}})
        assert set_status_condition(obj, "GangScheduled", False, "Unschedulable", "no room",
                                    observed_generation=4)
        assert "observedGeneration" not in obj.to_dict()["status"]["conditions"][0]


def test_status_subresource_and_conditions_follow_the_peer_crds():
    assert KaiPodGroup.HAS_STATUS and SchedulerPluginsPodGroup.HAS_STATUS
    assert not VolcanoPodGroup.HAS_STATUS and not CoschedulingPodGroup.HAS_STATUS
    assert "conditions" not in CoschedulingPodGroupStatus.model_fields
    assert "conditions" not in SchedulerPluginsPodGroupStatus.model_fields


@pytest.mark.parametrize(("levels", "message"), [
    ([], "levels: must have at least 1 items"),
    ([{"nodeLabel": "rack"}, {"nodeLabel": "rack"}], "levels must be unique"),
    ([{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
     "kubernetes.io/hostname label can only be used at the lowest level"),
    ([{"nodeLabel": "rack", "alias": "r"}], "alias"),
    ([{"nodeLabel": "bad key!"}], "nodeLabel"),
], ids=["empty", "duplicate", "hostname-not-last", "alias", "bad-label"])
def test_kai_topology_is_refused_as_kais_crd_refuses_it(levels, message):
    with pytest.raises(ManifestError) as info:
        from_dict({"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
                   "metadata": {"name": "t"}, "spec": {"levels": levels}})
    assert message in str(info.value)


@pytest.mark.parametrize(("selector", "ok"), [
    ({"exactMatch": {"name": "rack-1"}}, True),
    ({"regexMatch": {"pattern": "rack-.*"}}, True),
    ({"labelMatch": {"matchLabels": {"rack": "1"}}}, True),
    ({}, False),
    ({"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "b"}}, False),
    ({"exactMatch": {"name": "Not_DNS"}}, False),
])
def test_hypernode_member_selectors_follow_volcanos_rules(selector, ok):
    data = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": "h"},
            "spec": {"tier": 1, "members": [{"type": "HyperNode", "selector": selector}]}}
    if ok:
        assert from_dict(data).to_dict() == data
    else:
        with pytest.raises(ManifestError):
            from_dict(data)
