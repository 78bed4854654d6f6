"""Controllers and the Manager: event mapping, retries, requeue, wait_idle."""

import asyncio

import pytest

from phalanx.api.base import OwnerReference
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.controller import (
    Controller,
    Manager,
    Result,
    generation_changed,
    map_from_label,
    map_to_owner,
)
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import split_key

from .kinds import Note, Widget, widget


def test_reconciles_own_kind_and_owner_mapping(client_factory):
    """A tiny ReplicaSet-like controller: Widget.spec.replicas Notes owned by the Widget,
    Widget.status.ready counting them. Converges through events only."""

    async def main():
        c = client_factory()
        mgr = Manager(c)
        widgets = mgr.informer(Widget)
        notes = mgr.informer(Note)
        notes.add_index("owner", lambda n: [r.uid for r in n.metadata.owner_references])

        async def reconcile(key):
            ns, name = split_key(key)
            w = widgets.get(key)
            if w is None:
                return
            mine = notes.by_index("owner", w.metadata.uid)
            for i in range(len(mine), w.spec.replicas):
                n = Note.model_validate({"metadata": {"name": f"{name}-{i}", "namespace": ns}})
                n.metadata.owner_references = [w.owner_reference()]
                await c.create(n)
            if w.status.ready != len(mine):
                fresh = w.copy_deep()
                fresh.status.ready = len(mine)
                await c.update_status(fresh)
            return

        ctrl = mgr.add(Controller("widgets", reconcile, workers=2))
        ctrl.watch(widgets)
        ctrl.watch(notes, map_to_owner(Widget))
        await mgr.start()
        await c.create(widget("a", replicas=3))
        await c.create(widget("b", replicas=1))
        await mgr.wait_idle(timeout=60)
        assert sorted(n.name for n in notes.list()) == ["a-0", "a-1", "a-2", "b-0"]
        assert widgets.get("default/a").status.ready == 3
        assert widgets.get("default/b").status.ready == 1
        await mgr.stop()
    client_factory.run(main)


def test_errors_are_retried_with_backoff_then_forgotten():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        attempts = []
        loop = asyncio.get_running_loop()

        async def reconcile(key):
            attempts.append(loop.time())
            if len(attempts) < 4:
                raise RuntimeError("transient")

        ctrl = mgr.add(Controller("flaky", reconcile))
        ctrl.watch(mgr.informer(Widget))
        await mgr.start()
        await c.create(widget("a"))
        await mgr.wait_idle(until=loop.time() + 10)
        gaps = [round(b - a, 3) for a, b in zip(attempts, attempts[1:])]
        assert gaps == [0.005, 0.01, 0.02]  # per-key exponential backoff
        assert ctrl.errors == 3 and ctrl.queue.num_requeues("default/a") == 0
        await mgr.stop()
    run_virtual(main)


def test_requeue_after_and_wait_idle_horizon():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        loop = asyncio.get_running_loop()
        runs = []

        async def reconcile(key):
            runs.append(loop.time())
            return Result(requeue_after=30) if len(runs) < 3 else None

        ctrl = mgr.add(Controller("periodic", reconcile))
        ctrl.watch(mgr.informer(Widget))
        await mgr.start()
        t0 = loop.time()
        await c.create(widget("a"))
        await mgr.wait_idle()  # the requeue in 30s is not due now
        assert runs == [t0]
        await mgr.wait_idle(until=loop.time() + 100)  # now wait through the requeues
        assert runs == [t0, t0 + 30, t0 + 60]
        await mgr.stop()
    run_virtual(main)


def test_wait_idle_waits_for_slow_reconciles_and_chained_events():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        widgets = mgr.informer(Widget)
        notes = mgr.informer(Note)

        async def make_note(key):
            ns, name = split_key(key)
            await asyncio.sleep(5)  # a slow API call
            if widgets.get(key) and notes.get(key) is None:
                await c.create(Note.model_validate({"metadata": {"name": name, "namespace": ns},
                                                    "data": {"from": "widget"}}))

        async def stamp(key):
            ns, name = split_key(key)
            note = notes.get(key)
            if note is not None and "stamped" not in note.data:
                await c.patch(Note, name, {"data": {"stamped": "yes"}}, ns)

        mgr.add(Controller("notes", make_note)).watch(widgets)
        mgr.add(Controller("stamps", stamp)).watch(notes)
        await mgr.start()
        for i in range(5):
            await c.create(widget(f"w{i}"))
        await mgr.wait_idle(timeout=100)
        assert sorted(n.data.get("stamped") for n in notes.list()) == ["yes"] * 5
        await mgr.stop()
    run_virtual(main)


def test_wait_idle_reports_a_stall():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        never = asyncio.get_running_loop().create_future()

        async def stuck(key):
            await never

        mgr.add(Controller("stuck", stuck)).watch(mgr.informer(Widget))
        await mgr.start()
        await c.create(widget("a"))
        with pytest.raises(RuntimeError, match="nothing can make progress"):
            await mgr.wait_idle()
        await mgr.stop()
    run_virtual(main)


def test_predicates_and_label_mapping():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        seen = []

        async def record(key):
            seen.append(key)

        ctrl = mgr.add(Controller("gen", record))
        ctrl.watch(mgr.informer(Widget), predicate=generation_changed)
        by_label = mgr.add(Controller("bylabel", record))
        by_label.watch(mgr.informer(Note), map_from_label("app"))
        await mgr.start()
        await c.create(widget("a"))
        await mgr.wait_idle()
        await c.patch(Widget, "a", {"metadata": {"labels": {"x": "y"}}})  # no generation bump
        await mgr.wait_idle()
        await c.patch(Widget, "a", {"spec": {"replicas": 4}})
        await c.create(Note.model_validate({"metadata": {"name": "n", "labels": {"app": "web"}}}))
        await mgr.wait_idle()
        assert seen == ["default/a", "default/a", "default/web"]
        await mgr.stop()
    run_virtual(main)


def test_a_key_is_not_reconciled_concurrently():
    async def main():
        c = MemoryCluster()
        mgr = Manager(c)
        active, overlaps = set(), []

        async def slow(key):
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(1)
            active.discard(key)

        mgr.add(Controller("slow", slow, workers=4)).watch(mgr.informer(Widget))
        await mgr.start()
        await c.create(widget("a"))
        for i in range(10):
            await c.patch(Widget, "a", {"spec": {"replicas": i + 2}})
            await asyncio.sleep(0.3)
        await mgr.wait_idle(timeout=100)
        assert overlaps == []
        await mgr.stop()
    run_virtual(main)


def test_owner_mapping_for_namespaced_and_cluster_scoped_owners():
    from .kinds import Gadget

    w = widget("w", ns="team")
    w.metadata.owner_references = [
        OwnerReference(api_version=Widget.API_VERSION, kind="Widget", name="parent", uid="1",
                       controller=True),
        OwnerReference(api_version=Gadget.API_VERSION, kind="Gadget", name="g", uid="2"),
    ]
    assert map_to_owner(Widget)(w) == ["team/parent"]
    assert map_to_owner(Gadget)(w) == []  # not the controller
    assert map_to_owner(Gadget, controller_only=False)(w) == ["g"]
