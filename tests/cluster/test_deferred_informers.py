"""Informers of kinds not served yet (InformerFactory.informer_when_served): not started, not
waited for, until discovery says the kind is served; then started, synced, and their
handlers see what exists (a CRD installed after the scheduler started)."""

import asyncio

from phalanx.cluster.clock import run_virtual
from phalanx.cluster.deferred_informers import RECHECK_SECONDS
from phalanx.cluster.informer_factory import InformerFactory
from phalanx.cluster.memory import MemoryCluster

from .kinds import Widget, widget


def test_a_kind_not_served_is_read_once_discovery_says_it_is():
    async def main():
        c = MemoryCluster()
        await c.create(widget("a"))
        served = {"now": False}
        asked = []

        async def serves():
            asked.append(asyncio.get_running_loop().time())
            return served["now"]

        factory = InformerFactory(c)
        inf = factory.informer_when_served(Widget, serves)
        added = []
        inf.add_handler(on_add=lambda w: added.append(w.key))
        assert factory.informer(Widget) is inf  # one informer of the kind, still deferred
        factory.start()
        # Sync and readiness do not wait for it: its list would answer 404 for ever.
        assert await factory.wait_for_cache_sync(timeout=1)
        assert factory.informers == []
        await asyncio.sleep(3.5 * RECHECK_SECONDS)
        assert len(asked) == 3 and added == [] and not inf.synced

        served["now"] = True
        await asyncio.sleep(RECHECK_SECONDS)
        assert factory.informers == [inf]
        assert await factory.wait_for_cache_sync(timeout=1)
        assert added == ["default/a"]
        await c.create(widget("b"))
        await asyncio.sleep(0.1)
        assert added == ["default/a", "default/b"]
        await asyncio.sleep(3 * RECHECK_SECONDS)
        assert len(asked) == 4  # served: no more discovery
        await factory.stop()

    run_virtual(main)


def test_a_failing_discovery_is_asked_again_and_stop_ends_the_asking():
    async def main():
        c = MemoryCluster()
        calls = []

        async def serves():
            calls.append(1)
            raise ConnectionError("discovery unreachable")

        factory = InformerFactory(c)
        inf = factory.informer_when_served(Widget, serves)
        factory.start()
        await asyncio.sleep(2.5 * RECHECK_SECONDS)
        assert len(calls) == 2 and not inf.synced
        await factory.stop()
        await asyncio.sleep(3 * RECHECK_SECONDS)
        assert len(calls) == 2

    run_virtual(main)


def test_a_deferred_informer_made_after_start_is_rechecked_too():
    async def main():
        c = MemoryCluster()
        await c.create(widget("a"))
        factory = InformerFactory(c)
        factory.start()
        inf = factory.informer_when_served(Widget, lambda: asyncio.sleep(0, result=True))
        await asyncio.sleep(RECHECK_SECONDS + 0.1)
        assert inf.synced and inf.keys() == ["default/a"]
        await factory.stop()

    run_virtual(main)


def test_on_served_is_told_once_when_the_kind_is_served_or_at_once_if_it_is():
    async def main():
        c = MemoryCluster()
        served = {"now": False}

        async def serves():
            return served["now"]

        told = []
        factory = InformerFactory(c)
        factory.informer_when_served(Widget, serves, lambda: told.append("first"))
        factory.informer_when_served(Widget, serves, lambda: told.append("second"))
        factory.start()
        await asyncio.sleep(1.5 * RECHECK_SECONDS)
        assert told == []
        served["now"] = True
        await asyncio.sleep(RECHECK_SECONDS)
        assert told == ["first", "second"]
        factory.informer_when_served(Widget, serves, lambda: told.append("late"))
        assert told == ["first", "second", "late"]
        await asyncio.sleep(2 * RECHECK_SECONDS)
        assert told == ["first", "second", "late"]
        await factory.stop()

    run_virtual(main)
