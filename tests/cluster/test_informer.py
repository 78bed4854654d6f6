"""Informers: cache, handlers, indexes, and a watch loop that survives drops, Gone and errors."""

import asyncio
import random

from phalanx.cluster.client import AlreadyExists, NotFound, ServerError
from phalanx.cluster.clock import run_virtual, settle
from phalanx.cluster.informer_factory import InformerFactory
from phalanx.cluster.memory import MemoryCluster

from .kinds import Widget, widget


class Recorder:
    """Handlers that replay events into a view, asserting they make sense."""

    def __init__(self, informer):
        self.view = {}
        self.log = []
        informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def on_add(self, obj):
        assert obj.key not in self.view, f"add of known {obj.key}"
        self.view[obj.key] = obj.metadata.resource_version
        self.log.append(("add", obj.key))

    def on_update(self, old, new):
        assert self.view.get(new.key) == old.metadata.resource_version
        self.view[new.key] = new.metadata.resource_version
        self.log.append(("update", new.key))

    def on_delete(self, obj):
        assert obj.key in self.view, f"delete of unknown {obj.key}"
        del self.view[obj.key]
        self.log.append(("delete", obj.key))


async def server_view(c, kind=Widget):
    return {o.key: o.metadata.resource_version for o in (await c.list(kind)).items}


def test_sync_cache_handlers_and_indexes(client_factory):
    async def main():
        c = client_factory()
        for i in range(4):
            await c.create(widget(f"w{i}", ns="a" if i < 2 else "b", node_name=f"n{i % 2}"))
        factory = InformerFactory(c)
        inf = factory.informer(Widget)
        assert factory.informer(Widget) is inf  # shared
        rec = Recorder(inf)
        inf.add_index("node", lambda w: w.spec.node_name)
        factory.start()
        assert await factory.wait_for_cache_sync(timeout=10)
        assert inf.synced and await inf.has_synced()
        assert sorted(inf.keys()) == ["a/w0", "a/w1", "b/w2", "b/w3"]
        assert inf.get("a/w1").name == "w1" and inf.get("w1", namespace="a").name == "w1"
        assert sorted(w.name for w in inf.by_index("node", "n0")) == ["w0", "w2"]
        assert [w.name for w in inf.list("b")] == ["w2", "w3"]

        await c.patch(Widget, "w0", {"spec": {"nodeName": "n1"}}, "a")
        await c.delete(Widget, "w3", "b")
        await c.create(widget("w4", ns="b", node_name="n0"))

        async def caught_up():
            return rec.view == await server_view(c)

        from .util import eventually
        await eventually(caught_up)
        assert sorted(w.name for w in inf.by_index("node", "n0")) == ["w2", "w4"]
        assert sorted(w.name for w in inf.by_index("node", "n1")) == ["w0", "w1"]
        assert [w.name for w in inf.list("b")] == ["w2", "w4"]

        late = Recorder(inf)  # a handler added after sync is replayed the cache
        assert late.view == rec.view
        await factory.stop()
        assert not inf.running
    client_factory.run(main)


def test_relist_after_gone_delivers_the_difference():
    async def main():
        c = MemoryCluster(history_size=5)
        for i in range(5):
            await c.create(widget(f"w{i}"))
        factory = InformerFactory(c)
        inf = factory.informer(Widget)
        rec = Recorder(inf)
        factory.start()
        await factory.wait_for_cache_sync()
        await settle()
        assert inf.relists == 1
        # Cut the informer's stream, then change more than the history holds before it
        # gets to run again: its resume point is gone, so it must re-list.
        c.faults.drop_watches(1.0)
        await c.create(widget("trigger"))
        c.faults.clear()
        await c.delete(Widget, "w0")
        await c.delete(Widget, "w1")
        await c.patch(Widget, "w2", {"spec": {"replicas": 7}})
        for i in range(10):
            await c.create(widget(f"new{i}"))
        await settle()
        assert inf.relists == 2
        assert rec.view == await server_view(c)
        assert ("delete", "default/w0") in rec.log and ("delete", "default/w1") in rec.log
        assert ("update", "default/w2") in rec.log
        assert inf.get("default/w2").spec.replicas == 7
        await factory.stop()
    run_virtual(main)


def test_dropped_watches_lose_nothing():
    async def main():
        c = MemoryCluster(seed=11)
        c.faults.drop_watches(0.2)
        factory = InformerFactory(c)
        inf = factory.informer(Widget)
        rec = Recorder(inf)
        factory.start()
        await factory.wait_for_cache_sync()
        rng = random.Random(4)
        for step in range(300):
            name = f"w{rng.randrange(30)}"
            try:
                r = rng.random()
                if r < 0.4:
                    await c.create(widget(name))
                elif r < 0.8:
                    await c.patch(Widget, name, {"spec": {"replicas": step}})
                else:
                    await c.delete(Widget, name)
            except (AlreadyExists, NotFound):
                pass  # the random operation did not apply to the current state
            if step % 7 == 0:
                await asyncio.sleep(0.01)
        await settle()
        assert rec.view == await server_view(c)
        assert c.faults.injected["watch Widget: dropped"] > 10
        assert inf.rewatches > 10
        print(c.faults.summary(), f"rewatches={inf.rewatches} relists={inf.relists}")
        await factory.stop()
    run_virtual(main)


def test_transient_errors_back_off_on_virtual_time():
    async def main():
        c = MemoryCluster()
        await c.create(widget("a"))
        failures = {"left": 3}

        def flaky(verb, kind, key):
            if verb == "list" and failures["left"]:
                failures["left"] -= 1
                return ServerError("etcd is unhappy")
            return None

        c.faults.add_hook(flaky)
        factory = InformerFactory(c)
        inf = factory.informer(Widget)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        factory.start()
        assert await factory.wait_for_cache_sync(timeout=60)
        assert inf.errors == 3
        assert loop.time() - t0 == 0.5 + 1.0 + 2.0  # exponential backoff, virtual seconds
        assert inf.keys() == ["default/a"]
        await factory.stop()
    run_virtual(main)


def test_handler_errors_do_not_stop_the_informer():
    async def main():
        c = MemoryCluster()
        factory = InformerFactory(c)
        inf = factory.informer(Widget)
        inf.add_handler(on_add=lambda obj: 1 / 0)
        rec = Recorder(inf)
        factory.start()
        await factory.wait_for_cache_sync()
        await c.create(widget("a"))
        await c.create(widget("b"))
        await settle()
        assert sorted(rec.view) == ["default/a", "default/b"]
        await factory.stop()
    run_virtual(main)


def test_namespaced_and_selected_informers():
    async def main():
        c = MemoryCluster()
        for ns in ("a", "b"):
            for role in ("gpu", "cpu"):
                w = widget(f"{role}", ns=ns)
                w.metadata.labels = {"role": role}
                await c.create(w)
        factory = InformerFactory(c)
        only_a = factory.informer(Widget, "a")
        gpus = factory.informer(Widget, label_selector="role=gpu")
        factory.start()
        await factory.wait_for_cache_sync()
        assert sorted(only_a.keys()) == ["a/cpu", "a/gpu"]
        assert sorted(gpus.keys()) == ["a/gpu", "b/gpu"]
        await c.patch(Widget, "cpu", {"metadata": {"labels": {"role": "gpu"}}}, "b")
        await c.patch(Widget, "gpu", {"metadata": {"labels": {"role": "cpu"}}}, "a")
        await settle()
        assert sorted(gpus.keys()) == ["b/cpu", "b/gpu"]
        await factory.stop()
    run_virtual(main)
