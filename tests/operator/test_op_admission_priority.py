"""A PriorityClass a PodCliqueSet names must exist (phalanx/operator/admission_priority.py):
Phalanx gives the pods `spec.template.priorityClassName`, and the API server refuses pods
naming a class that does not exist, so admission refuses the PodCliqueSet instead (A7.1)."""

from __future__ import annotations

import pytest
from op_harness import NS, make_pcs

from phalanx.api.base import ObjectMeta
from phalanx.api.core import PriorityClass
from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import install_admission


def test_a_missing_priority_class_is_refused_naming_the_field() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        pcs = make_pcs("t", [("a", 1), ("b", 1)])
        pcs.spec.template.priority_class_name = "nope"
        with pytest.raises(Invalid) as err:
            await cluster.create(pcs.copy_deep())
        assert err.value.field == "spec.template.priorityClassName"
        assert 'Not found: "nope": no PriorityClass with name nope was found' in str(err.value)
        pcs.spec.template.priority_class_name = "system-node-critical"  # built in
        pcs.spec.template.cliques[1].spec.pod_spec.priority_class_name = "low"
        with pytest.raises(Invalid) as err:
            await cluster.create(pcs.copy_deep())
        assert err.value.field == "spec.template.cliques[1].spec.podSpec.priorityClassName"
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="low"), value=10))
        stored = await cluster.create(pcs.copy_deep())
        # An update that names a new class is checked; an unchanged name is not, even once
        # its class is gone (the pods' FailedCreate Events say so then).
        stored.spec.template.priority_class_name = "gone"
        with pytest.raises(Invalid):
            await cluster.update(stored.copy_deep())
        await cluster.delete(PriorityClass, "low")
        stored = await cluster.get(PodCliqueSet, "t", NS)
        stored.spec.replicas = 2
        assert (await cluster.update(stored)).spec.replicas == 2

    run_virtual(main)


@pytest.mark.parametrize("written, cls, field, why", [
    ({"priority": 1000}, None, "priority",
     ("the integer value of priority (1000) must not be provided in pod spec; priority "
      "admission controller computed 0 from the given PriorityClass name")),
    ({"priority": 5}, "low", "priority", "the integer value of priority (5)"),
    ({"preemption_policy": "Never"}, "low", "preemptionPolicy",
     ("the string value of PreemptionPolicy (Never) must not be provided in pod spec; "
      "priority admission controller computed PreemptLowerPriority from the given "
      "PriorityClass name")),
])
def test_a_podspec_writing_its_own_priority_is_refused_as_the_pods_would_be(
        written: dict, cls: str | None, field: str, why: str) -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="low"), value=10))
        pcs = make_pcs("t", [("a", 1), ("b", 1)])
        pcs.spec.template.priority_class_name = cls
        for attr, value in written.items():
            setattr(pcs.spec.template.cliques[1].spec.pod_spec, attr, value)
        with pytest.raises(Invalid) as err:
            await cluster.create(pcs.copy_deep())
        assert err.value.field == f"spec.template.cliques[1].spec.podSpec.{field}"
        assert f"Forbidden: {why}" in str(err.value)

    run_virtual(main)


def test_a_podspec_writing_the_computed_priority_is_admitted() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="low"), value=10))
        pcs = make_pcs("t", [("a", 1)])
        pcs.spec.template.priority_class_name = "low"
        pcs.spec.template.cliques[0].spec.pod_spec.priority = 10
        pcs.spec.template.cliques[0].spec.pod_spec.preemption_policy = "PreemptLowerPriority"
        await cluster.create(pcs.copy_deep())

    run_virtual(main)
