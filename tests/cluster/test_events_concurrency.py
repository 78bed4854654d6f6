"""EventRecorder's concurrent writers: a burst of Events drains `concurrency` writes at a
time, and one Event is never written by two writers at once."""

import asyncio

import pytest

from phalanx.cluster.clock import run_virtual
from phalanx.cluster.events import EventRecorder
from phalanx.cluster.memory import MemoryCluster

from .kinds import Event, make_pod


class SlowWrites:
    """A client whose Event writes each take `seconds` (virtual time), counting how many are
    in flight at once, in total and per Event name."""

    def __init__(self, inner, seconds):
        self.inner = inner
        self.seconds = seconds
        self.in_flight = 0
        self.most_in_flight = 0
        self.names_in_flight = set()
        self.same_event_at_once = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def _slow(self, name, call):
        if name in self.names_in_flight:
            self.same_event_at_once += 1
        self.names_in_flight.add(name)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.seconds)
            return await call()
        finally:
            self.in_flight -= 1
            self.names_in_flight.discard(name)

    async def create(self, obj, **kw):
        return await self._slow(obj.metadata.name, lambda: self.inner.create(obj, **kw))

    async def patch(self, kind, name, patch, namespace=None, **kw):
        return await self._slow(name, lambda: self.inner.patch(kind, name, patch, namespace, **kw))


def _recorder(client, concurrency):
    return EventRecorder(client, "test-scheduler", event_kind=Event, per_reason=True,
                         burst=None, concurrency=concurrency)


def test_a_burst_drains_concurrency_writes_at_a_time():
    async def main():
        inner = MemoryCluster()
        pods = [await inner.create(make_pod(f"p{i}")) for i in range(40)]
        client = SlowWrites(inner, 0.1)
        rec = _recorder(client, 8)
        loop = asyncio.get_running_loop()
        started = loop.time()
        for p in pods:
            rec.record(p, "Normal", "Scheduled", f"assigned {p.name}")
        await rec.flush()
        took = loop.time() - started
        assert client.most_in_flight == 8
        assert rec.written == 40 and len((await inner.list(Event)).items) == 40
        assert took == pytest.approx(40 / 8 * 0.1, abs=1e-6)  # 5 rounds of 8, not 40 writes
        assert rec.idle
    run_virtual(main)


def test_one_writer_writes_one_at_a_time():
    async def main():
        inner = MemoryCluster()
        pods = [await inner.create(make_pod(f"p{i}")) for i in range(5)]
        client = SlowWrites(inner, 0.1)
        rec = _recorder(client, 1)
        for p in pods:
            rec.record(p, "Normal", "Scheduled", "assigned")
        await rec.flush()
        assert client.most_in_flight == 1 and rec.written == 5
    run_virtual(main)


def test_an_update_during_its_write_is_written_after_it_not_beside_it():
    async def main():
        inner = MemoryCluster()
        pod = await inner.create(make_pod("p"))
        others = [await inner.create(make_pod(f"o{i}")) for i in range(3)]
        client = SlowWrites(inner, 0.1)
        rec = _recorder(client, 4)
        rec.record(pod, "Warning", "FailedScheduling", "first")
        await asyncio.sleep(0.05)  # its create is in flight
        rec.record(pod, "Warning", "FailedScheduling", "second")  # queued again
        for o in others:  # idle writers that could take the queued update
            rec.record(o, "Normal", "Scheduled", "assigned")
        await rec.flush()
        assert client.same_event_at_once == 0
        evs = [e for e in (await inner.list(Event)).items if e.involved_object.name == "p"]
        assert len(evs) == 1
        assert (evs[0].message, evs[0].count) == ("second", 2)
        assert rec.written == 2 + 3  # the create, then the patch; and the others' creates
    run_virtual(main)


def test_stop_cancels_writers_and_concurrency_must_be_positive():
    async def main():
        inner = MemoryCluster()
        pods = [await inner.create(make_pod(f"p{i}")) for i in range(10)]
        rec = _recorder(SlowWrites(inner, 1.0), 4)
        for p in pods:
            rec.record(p, "Normal", "Scheduled", "assigned")
        await asyncio.sleep(0)
        await rec.stop(flush=False)
        assert rec.idle and rec.written == 0
    run_virtual(main)
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        _recorder(MemoryCluster(), 0)
