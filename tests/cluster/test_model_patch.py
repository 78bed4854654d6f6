"""`model_patch.patched`: a merge patch applied along the model equals the whole-object path
(dump, merge, validate), or declines; it shares what the patch leaves alone and never
changes the object it was given. And `MemoryCluster.patch`, which uses it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.core import Pod
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.model_patch import patched
from phalanx.cluster.objects import from_dict, merge_patch

from .kinds import Widget, widget

GATE = "grove.io/podgang-pending-creation"


def grove_pod(**extra_spec: Any) -> Pod:
    """A pod as the operator writes it: labels, an owner, env, requests, a gate."""
    return Pod.model_validate({
        "metadata": {"name": "w-0", "namespace": "default", "resourceVersion": "7",
                     "labels": {"grove.io/podgang": "g", "app": "w"},
                     "annotations": {"note": "x"},
                     "ownerReferences": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
                                          "name": "w", "uid": "u1", "controller": True}]},
        "spec": {"containers": [{"name": "main", "image": "img:1",
                                 "env": [{"name": "A", "value": "1"}],
                                 "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"},
                                               "limits": {"nvidia.com/gpu": "1"}}}],
                 "schedulingGates": [{"name": GATE}, {"name": "other"}],
                 "schedulerName": "phalanx-scheduler", "hostname": "w-0", **extra_spec},
        "status": {"phase": "Pending",
                   "conditions": [{"type": "PodScheduled", "status": "False",
                                   "reason": "SchedulingGated"}]},
    })


def whole_object_path(obj: Pod, patch: dict[str, Any]) -> Pod | None:
    """What MemoryCluster.patch did before `patched`: dump, merge, validate (None: Invalid)."""
    data = merge_patch(obj.model_dump(by_alias=True, exclude_none=True, mode="json"), patch)
    try:
        return from_dict(type(obj), data, obj.name)
    except Invalid:
        return None


# Patches a controller or a user would send, valid and not, nested and not.
_values = st.one_of(st.none(), st.text(max_size=3), st.integers(-2, 3))
_patches = st.fixed_dictionaries({}, optional={
    "metadata": st.fixed_dictionaries({}, optional={
        "resourceVersion": st.sampled_from(["7", "8"]),
        "labels": st.one_of(st.none(), st.dictionaries(st.sampled_from(["app", "new", "a/b"]),
                                                       st.one_of(st.none(), st.just("v")))),
        "annotations": st.dictionaries(st.sampled_from(["note", "n2"]),
                                       st.one_of(st.none(), st.just("y"))),
        "finalizers": st.one_of(st.none(), st.just(["f.io/x"])),
        "name": st.sampled_from(["w-0", None]),
        "bogus": _values,
    }),
    "spec": st.fixed_dictionaries({}, optional={
        "schedulingGates": st.one_of(st.none(), st.just([]), st.just([{"name": "other"}]),
                                     st.just([{"nam": "typo"}])),
        "nodeSelector": st.one_of(st.none(), st.dictionaries(
            st.sampled_from(["zone", "rack"]), st.one_of(st.none(), st.just("z1")))),
        "priority": _values,
        "containers": st.one_of(st.none(), st.just([{"name": "main", "image": "img:2"}]),
                                st.just([{"name": "main", "image": "img:1", "resources": {
                                    "requests": {"cpu": "5"}}}])),
        "hostname": _values,
        "tolerations": st.one_of(st.none(), st.just([{"key": "k", "operator": "Exists"}])),
        "schedulerName": st.one_of(st.none(), st.just("default-scheduler")),
        "affinity": st.one_of(st.none(), st.just({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}})),
    }),
    "status": st.fixed_dictionaries({}, optional={
        "phase": st.one_of(st.none(), st.sampled_from(["Running", "Pending"])),
        "conditions": st.one_of(st.none(), st.just([{"type": "Ready", "status": "True"}])),
        "podIP": st.one_of(st.none(), st.just("10.0.0.1")),
    }),
    "kind": st.sampled_from(["Pod", "Service"]),
    "unknownTopLevel": _values,
})


@settings(max_examples=300, deadline=None)
@given(patch=_patches)
def test_patched_equals_the_whole_object_path_or_declines(patch):
    pod = grove_pod()
    before = pod.to_dict()
    fast = patched(pod, patch)
    slow = whole_object_path(pod, patch)
    if fast is not None:
        assert slow is not None, f"patched accepted what the API server refuses: {patch}"
        assert fast == slow
        assert fast.to_dict() == slow.to_dict()
        assert fast.spec.total_requests == slow.spec.total_requests
    assert pod.to_dict() == before  # the stored object is never changed


def test_a_gate_lift_shares_what_it_leaves_alone():
    pod = grove_pod()
    new = patched(pod, {"metadata": {"resourceVersion": "7"}, "spec": {"schedulingGates": None}})
    assert new is not None and new.spec.scheduling_gates == []
    assert [g.name for g in pod.spec.scheduling_gates] == [GATE, "other"]
    assert new.spec is not pod.spec and new.metadata is not pod.metadata
    assert new.spec.containers is pod.spec.containers
    assert new.status is pod.status
    assert new.metadata.labels is pod.metadata.labels


def test_a_rebuilt_model_does_not_keep_values_derived_from_the_old_fields():
    pod = grove_pod()
    assert pod.spec.total_requests["cpu"] == 2.0  # cached on the stored spec
    new = patched(pod, {"spec": {"containers": [{"name": "main", "image": "i", "resources": {
        "requests": {"cpu": "5"}}}]}})
    assert new is not None
    assert new.spec.total_requests["cpu"] == 5.0
    assert pod.spec.total_requests["cpu"] == 2.0


@pytest.mark.parametrize("patch", [
    {"spec": {"noSuchField": 1}},  # the whole-object path names the field in its error
    {"spec": {"schedulingGates": [{"nam": "typo"}]}},
    {"spec": {"containers": None}},  # required
    {"spec": {"scheduling_gates": []}},  # a Python name is not a wire name
])
def test_declines_what_only_the_whole_object_path_can_word(patch):
    assert patched(grove_pod(), patch) is None


def test_memory_cluster_patch_keeps_the_stored_object_and_shares_the_rest():
    async def main():
        c = MemoryCluster()
        pod = grove_pod()
        pod.metadata.resource_version = None
        await c.create(pod)
        stored = c._store(Pod).objects["default/w-0"]
        kept = copy.deepcopy(stored.to_dict())
        out = await c.patch(Pod, "w-0", {"metadata": {"resourceVersion":
                                                      stored.metadata.resource_version},
                                         "spec": {"schedulingGates": [{"name": "other"}]}})
        assert [g.name for g in out.spec.scheduling_gates] == ["other"]
        assert stored.to_dict() == kept
        new = c._store(Pod).objects["default/w-0"]
        assert new.spec.containers is stored.spec.containers
        assert int(new.metadata.resource_version) > int(stored.metadata.resource_version)
        with pytest.raises(Invalid) as err:  # a new gate: the pod rules still apply
            await c.patch(Pod, "w-0", {"spec": {"schedulingGates": [{"name": "x"}]}})
        assert err.value.field == "spec.schedulingGates"
    run_virtual(main)


def test_an_update_mutating_hook_gets_an_object_of_its_own():
    def mutate(obj, old):
        obj.spec.image += "-mutated"  # in place, on what it was given

    async def main():
        c = MemoryCluster()
        c.register_admission(Widget, mutate=mutate, operations=("UPDATE",))
        await c.create(widget("a", image="v1", replicas=1))
        stored = c._store(Widget).objects["default/a"]
        out = await c.patch(Widget, "a", {"spec": {"replicas": 2}})
        assert (out.spec.image, out.spec.replicas) == ("v1-mutated", 2)
        assert (stored.spec.image, stored.spec.replicas) == ("v1", 1)
    run_virtual(main)
