"""Finalizers, deletionTimestamp and ownerReference garbage collection."""

import pytest

from phalanx.api.base import ObjectMeta, OwnerReference
from phalanx.cluster.client import Invalid, NotFound
from phalanx.cluster.clock import run_virtual, settle
from phalanx.cluster.retry import update_with_retry
from phalanx.cluster.memory import MemoryCluster

from .kinds import Gadget, Widget, widget
from .util import assert_now, eventually


def _drop_finalizers(obj):
    obj.metadata.finalizers = []


async def names(c, kind=Widget):
    return sorted(o.name for o in (await c.list(kind)).items)


async def until_names(c, expected, kind=Widget):
    """Wait for the garbage collector (in-process, or kube-controller-manager's)."""
    async def check():
        return await names(c, kind) == expected

    check.__qualname__ = f"names == {expected}"
    await eventually(check)


async def dependent(c, name, *owners, finalizers=(), block=True):
    w = widget(name)
    # At most one owner may be the controller (the API server rejects two).
    w.metadata.owner_references = [o.owner_reference(controller=i == 0, block=block)
                                   for i, o in enumerate(owners)]
    w.metadata.finalizers = list(finalizers)
    return await c.create(w)


def test_finalizers_hold_deletion_until_removed(client_factory):
    async def main():
        c = client_factory()
        w = widget("a")
        w.metadata.finalizers = ["example.com/one", "example.com/two"]
        await c.create(w)
        await c.delete(Widget, "a")
        a = await c.get(Widget, "a")
        assert_now(client_factory, c, a.metadata.deletion_timestamp)
        await c.delete(Widget, "a")  # deleting again changes nothing
        a.metadata.finalizers = ["example.com/two"]
        a = await c.update(a)
        assert a.metadata.deletion_timestamp is not None
        a.metadata.finalizers = []
        await c.update(a)
        with pytest.raises(NotFound):
            await c.get(Widget, "a")
    client_factory.run(main)


def test_delete_answers_with_the_object_while_it_is_still_there(client_factory):
    """As kube-apiserver answers a DELETE: the object, with its deletionTimestamp, while
    finalizers hold it; nothing once it is gone (no read needed to tell which)."""
    async def main():
        c = client_factory()
        await c.create(widget("gone"))
        assert await c.delete(Widget, "gone") is None
        w = widget("held")
        w.metadata.finalizers = ["example.com/hold"]
        made = await c.create(w)
        left = await c.delete(Widget, "held", uid=made.metadata.uid)
        assert left is not None and left.name == "held"
        assert left.metadata.deletion_timestamp is not None
        assert left.metadata.finalizers == ["example.com/hold"]
        again = await c.delete(Widget, "held")  # still held: the same answer
        assert again is not None and again.metadata.uid == made.metadata.uid
        left.metadata.finalizers = []
        await c.update(left)
        with pytest.raises(NotFound):
            await c.delete(Widget, "held")
    client_factory.run(main)


def test_a_deleting_object_takes_any_update_but_new_finalizers(client_factory):
    """As kube-apiserver: while finalizers hold an object, spec, labels and status may
    still change (controllers finish their work); only adding a finalizer is refused."""
    async def main():
        c = client_factory()
        w = widget("a")
        w.metadata.finalizers = ["example.com/f"]
        await c.create(w)
        await c.delete(Widget, "a")
        a = await c.get(Widget, "a")
        a.metadata.finalizers.append("example.com/new")
        with pytest.raises(Invalid) as err:
            await c.update(a)
        assert err.value.field == "metadata.finalizers"
        a = await c.get(Widget, "a")
        a.spec.replicas = 9
        a.metadata.labels["x"] = "y"
        a = await c.update(a)
        assert (a.spec.replicas, a.metadata.labels) == (9, {"x": "y"})
        assert a.metadata.deletion_timestamp is not None
        a.status.phase = "Terminating"
        assert (await c.update_status(a)).status.phase == "Terminating"
    client_factory.run(main)


@pytest.mark.garbage_collector
def test_background_deletion_collects_dependents_after_the_owner(client_factory):
    async def main():
        c = client_factory()
        owner = await c.create(widget("owner"))
        await dependent(c, "d1", owner)
        await dependent(c, "d2", owner, finalizers=["example.com/keep"])
        grandchild_owner = await dependent(c, "d3", owner)
        await dependent(c, "d3-child", grandchild_owner)
        deletions = c.watch(Widget, resource_version=(await c.list(Widget)).resource_version)
        await c.delete(Widget, "owner")

        async def collected():
            return await names(c) == ["d2"]  # dependents with finalizers are only marked

        await eventually(collected)
        d2 = await c.get(Widget, "d2")
        assert d2.metadata.deletion_timestamp is not None
        order = []
        async for ev in deletions:
            if ev.type == "DELETED":
                order.append(ev.object.name)
            if len(order) == 4:
                break
        assert order[0] == "owner"  # the owner goes first, its dependents after
        assert order.index("d3") < order.index("d3-child")
        assert sorted(order) == ["d1", "d3", "d3-child", "owner"]
    client_factory.run(main)


@pytest.mark.garbage_collector
def test_foreground_deletion_waits_for_blocking_dependents(client_factory):
    async def main():
        c = client_factory()
        owner = await c.create(widget("owner"))
        await dependent(c, "blocker", owner, finalizers=["example.com/hold"])
        await dependent(c, "free", owner, block=False, finalizers=["example.com/hold"])
        await dependent(c, "plain", owner)
        await c.delete(Widget, "owner", propagation_policy="Foreground")
        o = await c.get(Widget, "owner")
        assert o.metadata.deletion_timestamp is not None
        assert "foregroundDeletion" in o.metadata.finalizers
        await until_names(c, ["blocker", "free", "owner"])
        # kube-controller-manager's GC writes the dependents meanwhile: re-read on Conflict.
        await update_with_retry(c, Widget, "free", None, _drop_finalizers)
        await until_names(c, ["blocker", "owner"])  # not waiting for non-blocking ones

        async def blocker_deleting():
            # kube-controller-manager's GC marks dependents one by one: the blocker may be
            # marked after the free one is already gone.
            return (await c.get(Widget, "blocker")).metadata.deletion_timestamp is not None

        await eventually(blocker_deleting)
        await update_with_retry(c, Widget, "blocker", None, _drop_finalizers)
        await until_names(c, [])
    client_factory.run(main)


def test_foreground_cascades_depth_first():
    async def main():
        c = MemoryCluster()
        top = await c.create(widget("top"))
        mid = await dependent(c, "mid", top)
        await dependent(c, "leaf", mid, finalizers=["example.com/hold"])
        watch = c.watch(Widget, resource_version=c.resource_version)
        await c.delete(Widget, "top", propagation_policy="Foreground")
        await settle()
        assert await names(c) == ["leaf", "mid", "top"]  # mid waits for leaf, top for mid
        leaf = await c.get(Widget, "leaf")
        leaf.metadata.finalizers = []
        await c.update(leaf)
        await settle()
        assert await names(c) == []
        deleted = [e.object.name for e in list(watch._w.buf) if e.type == "DELETED"]
        assert deleted == ["leaf", "mid", "top"]
    run_virtual(main)


@pytest.mark.garbage_collector
def test_orphan_removes_owner_references(client_factory):
    async def main():
        c = client_factory()
        owner = await c.create(widget("owner"))
        other = await c.create(widget("other"))
        await dependent(c, "d1", owner)
        await dependent(c, "d2", owner, other)
        await c.delete(Widget, "owner", propagation_policy="Orphan")
        await until_names(c, ["d1", "d2", "other"])
        d1, d2 = (await c.get(Widget, "d1")), (await c.get(Widget, "d2"))
        assert d1.metadata.owner_references == []
        assert [r.name for r in d2.metadata.owner_references] == ["other"]
    client_factory.run(main)


@pytest.mark.garbage_collector
def test_dependent_with_a_live_owner_only_loses_the_dead_reference(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        b = await c.create(widget("b"))
        await dependent(c, "shared", a, b)
        await c.delete(Widget, "a")

        async def dead_reference_dropped():
            shared = await c.get(Widget, "shared")
            return [r.name for r in shared.metadata.owner_references] == ["b"]

        await eventually(dead_reference_dropped)
        await c.delete(Widget, "b")
        await until_names(c, [])
    client_factory.run(main)


@pytest.mark.garbage_collector
def test_objects_with_a_dangling_owner_uid_are_collected(client_factory):
    async def main():
        c = client_factory()
        w = widget("orphan")
        w.metadata.owner_references = [OwnerReference(
            api_version=Widget.API_VERSION, kind="Widget", name="ghost", uid="no-such-uid")]
        await c.create(w)
        await until_names(c, [])
    client_factory.run(main)


@pytest.mark.garbage_collector
def test_gc_across_kinds_and_scopes(client_factory):
    async def main():
        c = client_factory()
        g = await c.create(Gadget(metadata=ObjectMeta(name="cluster-owner")))
        await dependent(c, "w", g)
        await c.delete(Gadget, "cluster-owner")
        await until_names(c, [])
    client_factory.run(main)


def test_gc_writes_are_counted_apart():
    async def main():
        c = MemoryCluster()
        owner = await c.create(widget("owner"))
        for i in range(3):
            await dependent(c, f"d{i}", owner)
        await c.delete(Widget, "owner")
        await settle()
        assert c.stats.writes[("delete", "Widget")] == 1
        assert c.stats.writes[("gc_delete", "Widget")] == 3
    run_virtual(main)
