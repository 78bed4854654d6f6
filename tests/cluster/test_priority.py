"""The built-in Priority admission plugin of MemoryCluster."""

import pytest

from phalanx.api.core import Container, Pod, PodSpec, PriorityClass
from phalanx.api.base import ObjectMeta
from phalanx.cluster.client import Invalid
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
