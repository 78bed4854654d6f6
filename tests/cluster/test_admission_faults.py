"""Admission hooks, fault injection, stats."""

import asyncio

import pytest

from phalanx.cluster.client import Conflict, Invalid, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from .kinds import Gadget, Widget, widget


def test_mutating_and_validating_admission_on_create_and_update():
    calls = []

    def mutate(obj, old):
        calls.append(("mutate", obj.name, old is not None))
        obj.metadata.labels.setdefault("team", "default")

    def validate(obj, old):
        calls.append(("validate", obj.name, old is not None))
        if obj.spec.replicas > 10:
            raise Invalid("at most 10 replicas", field="spec.replicas")
        if old is not None and obj.spec.image != old.spec.image:
            raise Invalid("image is immutable", field="spec.image")

    async def main():
        c = MemoryCluster()
        c.register_admission(Widget, mutate=mutate, validate=validate)
        a = await c.create(widget("a", image="v1"))
        assert a.metadata.labels == {"team": "default"}
        with pytest.raises(Invalid) as err:
            await c.create(widget("big", replicas=11))
        assert err.value.field == "spec.replicas"
        assert c.count(Widget) == 1
        a.spec.image = "v2"
        with pytest.raises(Invalid) as err:
            await c.update(a)
        assert err.value.field == "spec.image"
        with pytest.raises(Invalid):
            await c.patch(Widget, "a", {"spec": {"image": "v3"}})
        a = await c.patch(Widget, "a", {"spec": {"replicas": 3}})
        assert a.spec.replicas == 3
        # Other kinds are not affected.
        await c.create(Gadget.model_validate({"metadata": {"name": "g"}}))
    run_virtual(main)
    assert calls[:2] == [("mutate", "a", False), ("validate", "a", False)]
    assert ("validate", "a", True) in calls


def test_operations_limit_a_hook_to_creates_or_updates():
    calls = []

    async def main():
        c = MemoryCluster()
        c.register_admission(Widget, mutate=lambda o, old: calls.append(("m", old is None)),
                             validate=lambda o, old: calls.append(("v", old is None)),
                             operations=("CREATE",))
        c.register_admission(Widget, validate=lambda o, old: calls.append(("v-up", old is None)),
                             operations=("UPDATE",))
        assert not c.admission.mutates_updates(Widget)
        await c.create(widget("a"))
        await c.patch(Widget, "a", {"spec": {"replicas": 2}})
        with pytest.raises(ValueError, match="DELETE"):
            c.register_admission(Widget, validate=lambda o, old: None,
                                 operations=("DELETE",))  # type: ignore[arg-type]
        c.register_admission(Widget, mutate=lambda o, old: None)
        assert c.admission.mutates_updates(Widget)
    run_virtual(main)
    assert calls == [("m", True), ("v", True), ("v-up", False)]


def test_async_hooks_and_value_errors():
    async def mutate(obj, old):
        await asyncio.sleep(1)  # e.g. a webhook round trip
        obj.spec.image = obj.spec.image or "default-image"

    def validate(obj, old):
        if obj.name.startswith("bad"):
            raise ValueError("names must not start with 'bad'")

    async def main():
        c = MemoryCluster()
        c.register_admission(Widget, mutate=mutate)
        c.register_admission(Widget, validate=validate)
        assert (await c.create(widget("a"))).spec.image == "default-image"
        with pytest.raises(Invalid, match="must not start"):
            await c.create(widget("bad-one"))
    run_virtual(main)


def test_fail_writes_by_verb_and_kind_and_counters():
    async def main():
        c = MemoryCluster(seed=1)
        c.faults.fail_writes(1.0, verbs={"update"}, kinds={Widget})
        a = await c.create(widget("a"))
        with pytest.raises(ServerError):
            await c.update(a)
        await c.update_status(a)  # other verbs pass
        await c.create(Gadget.model_validate({"metadata": {"name": "g"}}))
        c.faults.clear()
        await c.update(a)
        c.faults.fail_writes(1.0, error=Conflict, times=2)
        for _ in range(2):
            with pytest.raises(Conflict):
                await c.create(widget("b"))
        await c.create(widget("b"))  # the rule is used up
        print(c.faults.summary())
        assert c.faults.injected == {"update Widget: ServerError": 1,
                                     "create Widget: Conflict": 2}
    run_virtual(main)


def test_fault_rate_is_seeded():
    async def failures(seed):
        c = MemoryCluster(seed=seed)
        c.faults.fail_writes(0.3)
        out = []
        for i in range(50):
            try:
                await c.create(widget(f"w{i}"))
                out.append(0)
            except ServerError:
                out.append(1)
        return out

    a = run_virtual(failures(5))
    assert a == run_virtual(failures(5))
    assert 5 < sum(a) < 25


def test_fault_hook_gives_exact_control():
    async def main():
        c = MemoryCluster()
        c.faults.add_hook(lambda verb, kind, key: ServerError("boom")
                          if (verb, key) == ("delete", "default/b") else None)
        await c.create(widget("a"))
        await c.create(widget("b"))
        await c.delete(Widget, "a")
        with pytest.raises(ServerError):
            await c.delete(Widget, "b")
        assert c.faults.total == 1
    run_virtual(main)


def test_drop_watches_ends_streams():
    async def main():
        c = MemoryCluster(seed=3)
        c.faults.drop_watches(1.0)
        stream = c.watch(Widget)
        await c.create(widget("a"))
        assert [e async for e in stream] == []  # ended instead of delivering
        assert c.faults.injected["watch Widget: dropped"] == 1
    run_virtual(main)


def test_stats_count_writes_per_verb_and_kind():
    async def main():
        c = MemoryCluster()
        a = await c.create(widget("a"))
        a.spec.replicas = 2
        a = await c.update(a)
        a.status.ready = 1
        await c.update_status(a)
        await c.patch(Widget, "a", {"spec": {"replicas": 3}})
        await c.delete(Widget, "a")
        assert c.stats.writes == {("create", "Widget"): 1, ("update", "Widget"): 1,
                                  ("update_status", "Widget"): 1, ("patch", "Widget"): 1,
                                  ("delete", "Widget"): 1}
        assert c.stats.total_writes("Widget") == 5
        assert "total" in c.stats.table()
    run_virtual(main)
