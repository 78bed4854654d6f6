import pytest

from phalanx.api.base import set_status_condition
from phalanx.api.errors import ManifestError
from phalanx.api.registry import from_dict
from phalanx.api.scheduling import (
    GANG_INCOMPLETE,
    GANG_OBJECT_KINDS,
    CoschedulingPodGroup,
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


@pytest.mark.parametrize("cls", GANG_OBJECT_KINDS)
def test_every_gang_object_carries_the_gang_condition(cls):
    spec = {"podGroups": [{"name": "a", "policy": {"basic": {}}}]} if cls is Workload else {}
    obj = cls.model_validate({"metadata": {"name": "g"}, "spec": spec})
    assert cls.HAS_STATUS
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
