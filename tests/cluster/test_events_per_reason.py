"""EventRecorder's scheduler mode: one Event per object + reason with the latest message,
min_interval with a trailing write, max_pending, enabled, forget(), stop()."""

import asyncio

import pytest

from phalanx.cluster.clock import run_virtual
from phalanx.cluster.events import EventRecorder
from phalanx.cluster.memory import MemoryCluster

from .kinds import Event, make_pod


def per_reason(c, **kw) -> EventRecorder:
    return EventRecorder(c, "test-scheduler", event_kind=Event, per_reason=True, burst=None, **kw)


@pytest.mark.embedded_only("paced by the recorder's 10 s min_interval on virtual time")
def test_one_event_per_reason_ends_with_the_latest_message(client_factory):
    async def main():
        c = client_factory()
        pod = await c.create(make_pod("p", "team"))
        rec = per_reason(c, min_interval=10.0)
        rec.record(pod, "Warning", "FailedScheduling", "0/3 nodes are available")
        await rec.flush()
        await asyncio.sleep(1)
        rec.record(pod, "Warning", "FailedScheduling", "0/4 nodes are available")
        rec.record(pod, "Warning", "FailedScheduling", "0/5 nodes are available")
        await rec.flush()
        # Held back by min_interval: the Event still shows the first write.
        [ev] = (await c.list(Event, "team")).items
        assert (ev.message, ev.occurrences) == ("0/3 nodes are available", 1)
        assert (rec.written, rec.suppressed) == (1, 2)
        await asyncio.sleep(9.5)  # the interval ends 10 s after the first write
        await rec.flush()
        [ev] = (await c.list(Event, "team")).items
        assert (ev.message, ev.occurrences, ev.type) == ("0/5 nodes are available", 3, "Warning")
        assert rec.written == 2
        # Another reason is another Event; any type other than Warning is Normal.
        rec.record(pod, "Info", "Scheduled", "Successfully assigned team/p to n1")
        await rec.flush()
        evs = {e.reason: e for e in (await c.list(Event, "team")).items}
        assert set(evs) == {"FailedScheduling", "Scheduled"} and evs["Scheduled"].type == "Normal"
    client_factory.run(main)


def test_forget_drops_held_writes_and_state():
    async def main():
        c = MemoryCluster()
        pod = await c.create(make_pod("p"))
        rec = per_reason(c, min_interval=10.0)
        rec.record(pod, "Warning", "FailedScheduling", "first")
        rec.record(pod, "Warning", "FailedScheduling", "first")  # coalesced into the queued write
        await rec.flush()
        rec.record(pod, "Warning", "FailedScheduling", "held")
        rec.forget(pod.metadata.uid)
        await asyncio.sleep(20)
        await rec.flush()
        [ev] = (await c.list(Event)).items
        assert (ev.message, ev.count, rec.written) == ("first", 2, 1)  # no trailing write
        rec.record(pod, "Warning", "FailedScheduling", "again")  # a fresh Event
        await rec.flush()
        assert sorted(e.message for e in (await c.list(Event)).items) == ["again", "first"]
    run_virtual(main)


def test_forget_resets_the_spam_filter_of_the_default_mode():
    async def main():
        c = MemoryCluster()
        pod = await c.create(make_pod("p"))
        rec = EventRecorder(c, "test", event_kind=Event, burst=1)
        rec.normal(pod, "A", "one")
        rec.normal(pod, "B", "two")
        assert rec.dropped == 1
        rec.forget(pod.metadata.uid)
        rec.normal(pod, "B", "two")
        assert (rec.recorded, rec.dropped) == (2, 1)
        await rec.flush()
        assert len((await c.list(Event)).items) == 2
    run_virtual(main)


def test_max_pending_disabled_and_stop():
    async def main():
        c = MemoryCluster()
        pods = [await c.create(make_pod(f"p{i}")) for i in range(3)]
        rec = per_reason(c, min_interval=10.0, max_pending=2)
        for p in pods:
            rec.record(p, "Warning", "FailedScheduling", "no fit")
        rec.record(pods[0], "Warning", "FailedScheduling", "still no fit")  # queued already: kept
        assert (rec.dropped, rec.idle) == (1, False)
        await rec.flush()
        assert rec.idle and rec.written == 2
        assert sorted(e.message for e in (await c.list(Event)).items) == ["no fit", "still no fit"]
        rec.enabled = False
        rec.record(pods[2], "Warning", "FailedScheduling", "off")
        rec.enabled = True
        rec.record(pods[0], "Warning", "FailedScheduling", "held")
        assert rec.suppressed == 1
        await rec.stop(flush=True)  # held trailing writes are discarded
        await asyncio.sleep(20)
        assert rec.written == 2 and len((await c.list(Event)).items) == 2
    run_virtual(main)
