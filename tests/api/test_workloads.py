"""The Workload API builders: one all-or-nothing gang in each served version, and the
served 1.36 shape of PodGroup scheduling constraints."""

from __future__ import annotations

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.pod import Pod, PodSpec
from phalanx.api.scheduling import Workload
from phalanx.api.workloads import (
    V1ALPHA1,
    V1ALPHA2,
    V1BETA1,
    PodGroupSpec,
    PodGroupV1Alpha2,
    gang_policy,
    kube_gang,
    kube_gang_objects,
)

SPEC = PodSpec.model_validate({"containers": [{"name": "c", "image": "busybox"}]})


def test_gang_policy_is_basic_below_one() -> None:
    assert gang_policy(3).to_dict() == {"gang": {"minCount": 3}}
    assert gang_policy(0).to_dict() == {"basic": {}}


def test_v1alpha1_gang_is_one_pod_group_of_one_workload() -> None:
    [wl] = kube_gang_objects(V1ALPHA1, ObjectMeta(name="g", namespace="ns"), 4, template="t")
    assert isinstance(wl, Workload)
    assert wl.to_dict()["spec"] == {
        "podGroups": [{"name": "t", "policy": {"gang": {"minCount": 4}}}]}


@pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])
def test_v1alpha2_and_v1beta1_gang_is_a_workload_then_its_podgroup(version: str) -> None:
    meta = ObjectMeta(name="g", namespace="ns", labels={"a": "b"})
    wl, pg = kube_gang_objects(version, meta, 4)
    assert (wl.api_version, wl.kind) == (version, "Workload")
    assert (pg.api_version, pg.kind) == (version, "PodGroup")
    assert wl.to_dict()["spec"] == {
        "podGroupTemplates": [{"name": "g", "schedulingPolicy": {"gang": {"minCount": 4}}}]}
    assert pg.to_dict()["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "g", "podGroupTemplateName": "g"}},
        "schedulingPolicy": {"gang": {"minCount": 4}}}
    assert pg.metadata.labels == {"a": "b"}
    assert pg.metadata.finalizers == ["scheduling.k8s.io/podgroup-protection"]
    assert meta.finalizers == []  # the caller's metadata is not changed


@pytest.mark.parametrize("version", [V1ALPHA1, V1ALPHA2])
def test_kube_gang_is_the_gang_objects_then_its_pods(version: str) -> None:
    objects = kube_gang("bench-7", "ns", 3, SPEC, version=version, labels={"run": "x"})
    gang, pods = objects[:-3], objects[-3:]
    kinds = ["Workload"] if version == V1ALPHA1 else ["Workload", "PodGroup"]
    assert [o.kind for o in gang] == kinds
    for o in gang:
        if isinstance(o, Workload):
            assert o.spec.pod_groups[0].policy.gang.min_count == 3  # type: ignore[union-attr]
    assert [p.name for p in pods] == ["bench-7-0", "bench-7-1", "bench-7-2"]
    for pod in pods:
        assert isinstance(pod, Pod)
        assert pod.spec.scheduler_name == "default-scheduler"
        assert pod.metadata.labels == {"run": "x"}
        if version == V1ALPHA1:
            ref = pod.to_dict()["spec"]["workloadRef"]
            assert ref == {"name": "bench-7", "podGroup": "bench-7"}
        else:
            assert pod.to_dict()["spec"]["schedulingGroup"] == {"podGroupName": "bench-7"}
    assert SPEC.scheduling_group is None  # the template is copied, not changed


def test_kube_gang_min_count_may_be_below_the_size() -> None:
    objects = kube_gang("g", "ns", 4, SPEC, min_count=2)
    pg = objects[1]
    assert isinstance(pg, PodGroupV1Alpha2) and pg.min_count == 2


def test_scheduling_constraints_have_the_served_field_names() -> None:
    """1.36's OpenAPI: `schedulingConstraints.topology[].key` (feature gate
    TopologyAwareWorkloadScheduling)."""
    spec = PodGroupSpec.model_validate({
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]}})
    assert spec.scheduling_constraints is not None
    assert spec.scheduling_constraints.topology[0].key == "example.com/rack"  # type: ignore[index]
