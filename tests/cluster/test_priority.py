"""The built-in Priority admission plugin of MemoryCluster."""

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodSpec, PriorityClass
from phalanx.cluster.client import Forbidden, Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def pod(name: str, cls: str | None = None) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="default"),
               spec=PodSpec(containers=[Container(name="c", image="x")], priority_class_name=cls))


def test_priority_class_name_resolves_to_its_value_and_policy() -> None:
    async def main() -> None:
        c = MemoryCluster()
        await c.create(PriorityClass(metadata=ObjectMeta(name="high"), value=1000,
                                     preemption_policy="Never"))
        p = await c.create(pod("a", "high"))
        assert p.spec.priority == 1000
        assert p.spec.preemption_policy == "Never"

    run_virtual(main())


def test_global_default_applies_when_no_class_is_named() -> None:
    async def main() -> None:
        c = MemoryCluster()
        assert (await c.create(pod("before"))).spec.priority == 0
        await c.create(PriorityClass(metadata=ObjectMeta(name="base"), value=7,
                                     global_default=True))
        p = await c.create(pod("after"))
        assert (p.spec.priority, p.spec.priority_class_name) == (7, "base")

    run_virtual(main())


def test_unknown_priority_class_is_rejected_naming_the_field() -> None:
    async def main() -> None:
        c = MemoryCluster()
        with pytest.raises(Invalid) as err:
            await c.create(pod("a", "nope"))
        assert err.value.field == "spec.priorityClassName"
        assert "nope" in str(err.value)

    run_virtual(main())


def test_builtin_admission_can_be_turned_off() -> None:
    async def main() -> None:
        c = MemoryCluster(builtin_admission=False)
        assert (await c.create(pod("a", "nope"))).spec.priority is None

    run_virtual(main())


# --- kube's plugin/pkg/admission/priority: a pod may not choose its own priority ---------

def _create_refused(objects: list, p: Pod) -> str:
    async def main() -> str:
        c = MemoryCluster()
        for obj in objects:
            await c.create(obj)
        with pytest.raises(Forbidden) as err:
            await c.create(p)
        return err.value.message

    return run_virtual(main())


def _pc(name: str, value: int, policy: str | None = None, default: bool = False
        ) -> PriorityClass:
    return PriorityClass(metadata=ObjectMeta(name=name), value=value, preemption_policy=policy,
                         global_default=default or None)


def test_written_priority_without_a_class_is_forbidden() -> None:
    p = pod("a")
    p.spec.priority = 1000
    assert _create_refused([], p) == (
        'pods "a" is forbidden: the integer value of priority (1000) must not be provided '
        "in pod spec; priority admission controller computed 0 from the given PriorityClass "
        "name")


def test_written_priority_differing_from_the_class_is_forbidden() -> None:
    p = pod("a", "low")
    p.spec.priority = 5
    assert "the integer value of priority (5) must not be provided in pod spec; priority " \
           "admission controller computed 100 from" in _create_refused([_pc("low", 100)], p)


def test_written_priority_differing_from_the_global_default_is_forbidden() -> None:
    p = pod("a")
    p.spec.priority = 0
    assert "computed 7 from" in _create_refused([_pc("base", 7, default=True)], p)


def test_written_preemption_policy_differing_from_the_class_is_forbidden() -> None:
    p = pod("a", "high")
    p.spec.preemption_policy = "Never"
    assert _create_refused([_pc("high", 1000)], p) == (
        'pods "a" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority "
        "from the given PriorityClass name")


def test_written_preemption_policy_never_without_a_class_is_forbidden() -> None:
    p = pod("a")
    p.spec.preemption_policy = "Never"
    assert "PreemptionPolicy (Never) must not be provided" in _create_refused([], p)


def test_written_priority_and_policy_equal_to_the_computed_ones_are_accepted() -> None:
    async def main() -> None:
        c = MemoryCluster()
        await c.create(_pc("high", 1000, "Never"))
        p = pod("a", "high")
        p.spec.priority, p.spec.preemption_policy = 1000, "Never"
        got = await c.create(p)
        assert (got.spec.priority, got.spec.preemption_policy) == (1000, "Never")
        q = pod("b")
        q.spec.priority, q.spec.preemption_policy = 0, "PreemptLowerPriority"
        assert (await c.create(q)).spec.priority == 0

    run_virtual(main())


def test_pod_gets_the_computed_preemption_policy() -> None:
    async def main() -> None:
        c = MemoryCluster()
        await c.create(_pc("high", 1000))
        assert (await c.create(pod("a", "high"))).spec.preemption_policy == \
            "PreemptLowerPriority"
        assert (await c.create(pod("b"))).spec.preemption_policy == "PreemptLowerPriority"

    run_virtual(main())


def test_priority_class_preemption_policy_defaults_to_preempt_lower_priority() -> None:
    async def main() -> None:
        c = MemoryCluster()
        pc = await c.create(_pc("low", 1))
        assert pc.preemption_policy == "PreemptLowerPriority"

    run_virtual(main())


def test_global_default_with_the_lowest_value_wins() -> None:
    async def main() -> None:
        c = MemoryCluster(builtin_admission=True)
        store = c._store(PriorityClass).objects
        # Two defaults can exist after a race; kube picks the lowest value.
        for pc in (_pc("a", 10, default=True), _pc("b", 5, default=True)):
            pc.metadata.resource_version = "1"
            store[pc.name] = pc
        got = await c.create(pod("x"))
        assert (got.spec.priority_class_name, got.spec.priority) == ("b", 5)

    run_virtual(main())


def test_system_class_priority_must_match() -> None:
    p = pod("a", "system-node-critical")
    p.spec.priority = 1
    assert "computed 2000001000 from" in _create_refused([], p)
