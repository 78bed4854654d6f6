import pytest

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Node, Pod
from phalanx.api.grove import PodCliqueScalingGroup, PodCliqueSet
from phalanx.api.podgang import PodGang
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup, Workload


def test_every_kind_registered_once():
    kinds = registry.kinds()
    assert len({k.gvk() for k in kinds}) == len(kinds)
    for cls in (Pod, Node, PodCliqueSet, PodGang, Workload, KaiPodGroup, OperatorConfiguration):
        assert cls in kinds
    assert OperatorConfiguration not in registry.kinds(served_only=True)


def test_lookup_by_gvk_and_kind():
    assert registry.get("grove.io/v1alpha1", "PodCliqueSet") is PodCliqueSet
    assert registry.get("scheduling.volcano.sh/v1beta1", "PodGroup") is VolcanoPodGroup
    assert registry.by_kind("PodGang") is PodGang
    with pytest.raises(registry.UnknownKind, match="ambiguous"):
        registry.by_kind("PodGroup")


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("pcs", PodCliqueSet),
        ("PodCliqueSet", PodCliqueSet),
        ("podcliquesets", PodCliqueSet),
        ("pcsg", PodCliqueScalingGroup),
        ("podgang", PodGang),
        ("pg", PodGang),
        ("po", Pod),
        ("nodes", Node),
        ("podgroups.scheduling.run.ai", KaiPodGroup),
        ("podgroup.scheduling.sigs.k8s.io", CoschedulingPodGroup),
        ("workloads.v1alpha1.scheduling.k8s.io", Workload),
    ],
)
def test_resolve_cli_names(name, cls):
    assert registry.resolve(name) is cls


def test_resolve_errors_help():
    with pytest.raises(registry.UnknownKind) as info:
        registry.resolve("podgroups")
    assert "podgroups.scheduling.run.ai" in str(info.value)
    with pytest.raises(registry.UnknownKind, match="did you mean 'podgang'"):
        registry.resolve("podgangg")
    with pytest.raises(registry.UnknownKind):
        registry.resolve("operatorconfiguration")  # not served


def test_register_new_version_prefers_it_within_its_group():
    class WorkloadNext(Resource):
        API_VERSION = "scheduling.k8s.io/v9test"
        KIND = "Workload"
        PLURAL = "workloads"

    registry.register(WorkloadNext, preferred=True)
    try:
        assert registry.by_kind("Workload") is WorkloadNext
        assert registry.resolve("workloads.v1alpha1.scheduling.k8s.io") is Workload
        registry.register(WorkloadNext)  # idempotent
        with pytest.raises(ValueError, match="already registered"):

            class Clash(Resource):
                API_VERSION = "scheduling.k8s.io/v9test"
                KIND = "Workload"

            registry.register(Clash)
    finally:
        registry._ORDER.remove(WorkloadNext)
        del registry._BY_GVK[WorkloadNext.gvk()]
        registry._PREFERRED.discard(WorkloadNext)


def test_from_dict_errors_are_manifest_errors():
    with pytest.raises(registry.UnknownKind, match="missing apiVersion"):
        registry.from_dict({"kind": "Pod"})
    with pytest.raises(Exception) as info:
        registry.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert str(info.value) == "Pod/p: spec: required field is missing"
