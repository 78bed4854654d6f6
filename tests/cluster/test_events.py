"""EventRecorder: aggregation, spam filter, background writes, flush."""

import asyncio

import pytest
from datetime import timedelta

from phalanx.cluster.client import Invalid, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.events import COMBINED_PREFIX, EventRecorder
from phalanx.cluster.memory import MemoryCluster

from .kinds import Event, make_pod


async def events_of(c):
    return sorted((await c.list(Event)).items, key=lambda e: e.metadata.name)


def assert_occurred(c, ev, count, first, last, component, *, real=False):
    """What the recorder wrote, exactly, in the form each client stores: core/v1 fields on
    MemoryCluster; on a server (KubeCluster) an events.k8s.io/v1 Event, read back through
    core/v1 with eventTime, series and reportingComponent instead. On a real server the
    times are the wall clock's when the recorder wrote, shortly before `first`/`last`."""
    if real:
        for seen, expected in ((ev.first_seen, first), (ev.last_seen, last)):
            assert abs((seen - expected).total_seconds()) < 5, (seen, expected)
        first, last = ev.first_seen, ev.last_seen
    if isinstance(c, MemoryCluster):
        assert ev.count == count and ev.series is None and ev.event_time is None
        assert ev.first_timestamp == first and ev.last_timestamp == last
        assert ev.source.component == component
    else:  # a real server reads back an empty source object
        assert ev.count is None and (ev.source is None or ev.source.component is None)
        assert ev.first_timestamp is None and ev.last_timestamp is None
        assert ev.event_time == first and ev.reporting_component == component
        assert ev.action == ev.reason and ev.reporting_instance.startswith(f"{component}-")
        if count == 1:
            assert ev.series is None
        else:
            assert (ev.series.count, ev.series.last_observed_time) == (count, last)
    assert (ev.occurrences, ev.first_seen, ev.last_seen, ev.reporter) == (
        count, first, last, component)


def test_event_written_in_the_background(client_factory):
    async def main():
        c = client_factory()
        pod = await c.create(make_pod("p", "team"))
        rec = EventRecorder(c, "test-scheduler", event_kind=Event)
        rec.event(pod, "Warning", "GangIncomplete", "3/8 members created; waiting for 5")
        assert (await c.list(Event, "team")).items == []  # not written yet: never blocks
        await rec.flush()
        [ev] = (await c.list(Event, "team")).items
        assert ev.reason == "GangIncomplete" and ev.type == "Warning"
        assert ev.message == "3/8 members created; waiting for 5"
        assert ev.involved_object.kind == "Pod" and ev.involved_object.name == "p"
        assert ev.involved_object.uid == pod.metadata.uid
        now = c.clock.now_dt()
        assert_occurred(c, ev, 1, now, now, "test-scheduler", real=client_factory.real)
    client_factory.run(main)


@pytest.mark.embedded_only("paced by 40 s of virtual time; the real server's series "
                            "writes: tests/cluster/kube/test_real_server.py")
def test_repeats_bump_count_and_last_timestamp(client_factory):
    async def main():
        c = client_factory()
        pod = await c.create(make_pod("p"))
        rec = EventRecorder(c, "test", event_kind=Event)
        first = c.clock.now_dt()
        for _ in range(5):
            rec.warning(pod, "FailedScheduling", "0/3 nodes are available")
            await rec.flush()
            await asyncio.sleep(10)
        rec.warning(pod, "FailedScheduling", "0/4 nodes are available")  # another message
        await rec.flush()
        evs = await events_of(c)
        assert sorted((e.message, e.occurrences) for e in evs) == [
            ("0/3 nodes are available", 5), ("0/4 nodes are available", 1)]
        same = next(e for e in evs if e.occurrences == 5)
        assert_occurred(c, same, 5, first, first + timedelta(seconds=40), "test")
    client_factory.run(main)


def test_similar_events_are_combined():
    async def main():
        c = MemoryCluster()
        pod = await c.create(make_pod("p"))
        rec = EventRecorder(c, "test", event_kind=Event, max_similar=10)
        for i in range(15):
            rec.normal(pod, "Waiting", f"{i}/20 members created")
        await rec.flush()
        evs = await events_of(c)
        assert len(evs) == 11  # ten distinct messages, then one combined Event
        combined = [e for e in evs if e.message.startswith(COMBINED_PREFIX)]
        assert len(combined) == 1
        assert combined[0].count == 5
        assert combined[0].message == COMBINED_PREFIX + "14/20 members created"
    run_virtual(main)


def test_spam_filter_is_a_token_bucket_per_object_on_virtual_time():
    async def main():
        c = MemoryCluster()
        a = await c.create(make_pod("a"))
        b = await c.create(make_pod("b"))
        rec = EventRecorder(c, "test", event_kind=Event, burst=25, refill_per_second=1 / 300)
        for i in range(100):
            rec.normal(a, f"Reason{i}", "storm")
        rec.normal(b, "Other", "not affected by a's storm")
        assert rec.recorded == 26 and rec.dropped == 75
        await asyncio.sleep(299)
        rec.normal(a, "Late", "still no token")
        await asyncio.sleep(1)
        rec.normal(a, "Later", "a token refilled after 300s")
        assert rec.recorded == 27 and rec.dropped == 76
        await rec.flush()
        assert len((await c.list(Event)).items) == 27
    run_virtual(main)


def test_ten_thousand_pods_one_write_each():
    async def main():
        c = MemoryCluster()
        pods = [make_pod(f"p{i}") for i in range(10_000)]  # the recorder only reads metadata
        for i, p in enumerate(pods):
            p.metadata.uid = f"uid-{i}"
        rec = EventRecorder(c, "test", event_kind=Event)
        for _ in range(3):  # the same event three times per pod, before any write happens
            for p in pods:
                rec.warning(p, "GangIncomplete", "3/8 members created; waiting for 5")
        await rec.flush()
        assert rec.writes == 10_000  # coalesced: count=3 in the first write
        assert c.stats.total_writes("Event") == 10_000
        assert c.count(Event) == 10_000
        [sample] = (await c.list(Event, field_selector="involvedObject.name=p4321")).items
        assert sample.count == 3 and sample.involved_object.uid == "uid-4321"
    run_virtual(main)


def test_failed_writes_are_retried():
    async def main():
        c = MemoryCluster()
        pod = await c.create(make_pod("p"))
        c.faults.fail_writes(1.0, kinds={Event}, error=ServerError, times=3)
        rec = EventRecorder(c, "test", event_kind=Event)
        rec.warning(pod, "Boom", "retry me")
        await rec.flush()
        assert rec.writes == 1 and rec.failed == 0
        assert [e.reason for e in (await c.list(Event)).items] == ["Boom"]
        assert c.faults.total == 3
    run_virtual(main)


def test_a_refused_event_is_dropped_at_once_and_holds_up_nothing():
    async def main():
        c = MemoryCluster()
        pod = await c.create(make_pod("p"))
        attempts = []

        def refuse(ev, old):
            attempts.append(ev.reason)
            if ev.reason == "Bad":
                raise Invalid("note too long", kind="Event", field="message")

        c.register_admission(Event, validate=refuse)
        rec = EventRecorder(c, "test", event_kind=Event)
        rec.warning(pod, "Bad", "refused by validation")
        rec.warning(pod, "Good", "written")
        await rec.flush()
        assert attempts == ["Bad", "Good"]  # one attempt each: no retry of a refusal
        assert (rec.writes, rec.failed) == (1, 1)
        assert [e.reason for e in (await c.list(Event)).items] == ["Good"]
    run_virtual(main)
