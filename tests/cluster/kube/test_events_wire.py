"""KubeCluster writes Events through events.k8s.io/v1 (the REST facade serves that API over
the core/v1 Event store with kube-apiserver's rules: tests/cluster/kube/events_api.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.core import Event, EventSeries, Node
from phalanx.api.events import EventsV1Event, from_core
from phalanx.cluster.client import Invalid
from phalanx.cluster.events import COMBINED_PREFIX, EventRecorder
from phalanx.cluster.kube import KubeCluster
from phalanx.cluster.kube.events import NAME_LIMIT, NOTE_LIMIT, _cut, for_create
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler.events import new_event_recorder

from ..kinds import make_pod
from .facade import Facade, run_over_facade

V1_EVENTS = "/apis/events.k8s.io/v1/namespaces/team/events"


def run(test: Callable[[KubeCluster, MemoryCluster, Facade], Awaitable[None]]) -> None:
    run_over_facade(test, shared_clock=True)  # timestamps compare with the server's


async def raw_v1(kube: KubeCluster, name: str, ns: str = "team") -> dict[str, Any]:
    return await kube.transport.request(
        "GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}")


def test_recorder_events_are_created_and_counted_through_events_k8s_io() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        pod = await kube.create(make_pod("p", "team"))
        rec = EventRecorder(kube, "phalanx-scheduler", host="replica-0")
        start = kube.clock.now_dt()
        assert start.microsecond == 0  # the case a plain datetime dump gets wrong
        rec.warning(pod, "GangIncomplete", "3/8 members created; waiting for 5")
        await rec.flush()
        assert rec.writes == 1 and rec.failed == 0
        [stored] = (await mem.list(Event, "team")).items
        assert ("POST", V1_EVENTS) in facade.requests
        v1 = await raw_v1(kube, stored.name)
        assert v1["regarding"] == {"apiVersion": "v1", "kind": "Pod", "name": "p",
                                   "namespace": "team", "uid": pod.metadata.uid}
        assert (v1["note"], v1["reason"], v1["type"], v1["action"]) == (
            "3/8 members created; waiting for 5", "GangIncomplete", "Warning", "GangIncomplete")
        assert (v1["reportingController"], v1["reportingInstance"]) == (
            "phalanx-scheduler", "replica-0")
        assert v1["eventTime"].endswith(".000000Z") and "series" not in v1
        assert not any(k.startswith("deprecated") for k in v1)

        for _ in range(2):  # the same message again: the series counts it
            await kube.clock.sleep(30)
            rec.warning(pod, "GangIncomplete", "3/8 members created; waiting for 5")
            await rec.flush()
        assert ("PATCH", f"{V1_EVENTS}/{stored.name}") in facade.requests
        v1 = await raw_v1(kube, stored.name)
        last = start + timedelta(seconds=60)
        assert v1["series"] == {"count": 3,
                                "lastObservedTime": last.strftime("%Y-%m-%dT%H:%M:%S.000000Z")}
        assert v1["note"] == "3/8 members created; waiting for 5"
        assert (rec.writes, rec.failed) == (3, 0)
        # Read through core/v1, as every reader does.
        [ev] = (await kube.list(Event, "team")).items
        assert (ev.occurrences, ev.first_seen, ev.last_seen, ev.reporter) == (
            3, start, last, "phalanx-scheduler")

    run(body)


def test_a_new_message_reaches_the_event_through_core_v1() -> None:
    # The note is immutable through events.k8s.io/v1; the recorders promise the latest one.
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        pod = await kube.create(make_pod("p", "team"))
        rec = EventRecorder(kube, "test", max_similar=1)
        rec.normal(pod, "Waiting", "3/8 members created")
        rec.normal(pod, "Waiting", "4/8 members created")  # combined: same Event, new note
        await rec.flush()
        rec.normal(pod, "Waiting", "5/8 members created")
        await rec.flush()
        assert rec.failed == 0
        events = sorted((await kube.list(Event, "team")).items, key=lambda e: e.name)
        combined = events[-1]
        assert combined.message == COMBINED_PREFIX + "5/8 members created"
        assert combined.occurrences == 2 and combined.series is not None
        assert ("PATCH", f"/api/v1/namespaces/team/events/{combined.name}") in facade.requests
        # Still an events.k8s.io Event: no deprecated count written on the way.
        assert "deprecatedCount" not in await raw_v1(kube, combined.name)

    run(body)


def test_scheduler_recorder_updates_its_event_on_a_real_server() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        pod = await kube.create(make_pod("p", "team"))
        rec = new_event_recorder(kube, min_interval=1.0)
        rec.record(pod, "Warning", "FailedScheduling", "0/3 nodes are available")
        await rec.flush()
        await kube.clock.sleep(2)
        rec.record(pod, "Warning", "FailedScheduling", "0/4 nodes are available")
        await rec.flush()
        await kube.clock.sleep(2)
        rec.record(pod, "Warning", "FailedScheduling", "0/4 nodes are available")
        await rec.flush()
        assert rec.written == 3
        [ev] = (await kube.list(Event, "team")).items
        assert (ev.message, ev.occurrences, ev.reporter) == (
            "0/4 nodes are available", 3, "phalanx-scheduler")
        assert ev.action == "FailedScheduling" and ev.event_time is not None

    run(body)


def test_required_fields_and_limits_are_met_for_any_event() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        node = await kube.create(Node.model_validate({"metadata": {"name": "n1"}}))
        rec = EventRecorder(kube, "phalanx-operator")
        rec.normal(node, "NodeLost", "é" * 700)  # 1400 bytes; cluster-scoped object
        await rec.flush()
        assert (rec.writes, rec.failed) == (1, 0)
        [ev] = (await kube.list(Event, "default")).items
        assert len(ev.message.encode()) <= 1024 and ev.message == "é" * 512
        assert ev.reporting_instance.startswith("phalanx-operator-")
        # A bare core Event, as other callers may build one: defaults fill what is required.
        bare = Event.model_validate({"metadata": {"name": "bare", "namespace": "team"},
                                     "involvedObject": {"kind": "Pod", "name": "p",
                                                        "namespace": "team"},
                                     "reason": "Tested", "type": "Normal", "count": 2})
        created = await kube.create(bare)
        assert (created.reporting_component, created.action) == (kube.field_manager, "Tested")
        assert created.series is not None and created.series.count == 2

    run(body)


def test_the_facade_enforces_the_events_api_rules() -> None:
    # So the tests above would fail if KubeCluster sent what a real server refuses.
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        good = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "e", "namespace": "team"},
                "eventTime": "2025-01-01T00:00:00.000000Z", "reason": "R", "action": "A",
                "type": "Normal", "note": "n", "reportingController": "c",
                "reportingInstance": "c-1", "regarding": {"kind": "Pod", "name": "p",
                                                          "namespace": "team"}}
        for bad, field in (({"eventTime": "2025-01-01T00:00:00Z"}, "eventTime"),
                           ({"deprecatedCount": 2}, "deprecatedCount"),
                           ({"action": None}, "action"),
                           ({"series": {"count": 1,
                                        "lastObservedTime": "2025-01-01T00:00:00.000000Z"}},
                            "series.count")):
            with pytest.raises(Invalid) as err:
                await kube.transport.request("POST", V1_EVENTS, body={**good, **bad})
            assert err.value.field == field
        await kube.transport.request("POST", V1_EVENTS, body=good)
        with pytest.raises(Invalid) as err:
            await kube.transport.request("PATCH", f"{V1_EVENTS}/e", body={"note": "changed"},
                                         content_type="application/merge-patch+json")
        assert err.value.field == "note"

    run(body)


def test_an_event_created_without_its_answer_is_remembered_under_its_name() -> None:
    """`create(returning=False)` does not decode the created Event; the note it remembers
    (for a later count bump) is under the name sent, or the one the server generated."""
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        from phalanx.api.base import ObjectMeta
        from phalanx.api.core import ObjectReference

        ref = ObjectReference(api_version="v1", kind="Pod", name="p", namespace="team")
        named = Event(metadata=ObjectMeta(name="p.1", namespace="team"), involved_object=ref,
                      reason="Scheduled", message="bound", type="Normal")
        assert await kube.create(named, returning=False) is None
        generated = Event(metadata=ObjectMeta(generate_name="p.", namespace="team"),
                          involved_object=ref, reason="Pulled", message="pulled", type="Normal")
        assert await kube.create(generated, returning=False) is None
        names = {e.reason: e.name for e in (await mem.list(Event, "team")).items}
        assert names["Scheduled"] == "p.1" and names["Pulled"].startswith("p.")
        notes = kube._events._notes
        assert notes[("team", "p.1")] == "bound"
        assert notes[("team", names["Pulled"])] == "pulled"

    run(body)


_TIMES = st.none() | st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1),
                                   timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))]))
_TEXT = st.none() | st.text(max_size=30) | st.just("é" * 600)


@st.composite
def _core_events(draw: st.DrawFn) -> Event:
    return Event.model_validate({
        "metadata": {"name": draw(st.none() | st.just("p.1")),
                     "generateName": draw(st.none() | st.just("p.")), "namespace": "team"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "team",
                           "uid": draw(st.none() | st.just("u-1"))},
        "related": draw(st.none() | st.just({"kind": "Node", "name": "n1"})),
        "reason": draw(_TEXT), "message": draw(_TEXT), "type": draw(st.none() | st.just("Normal")),
        "count": draw(st.none() | st.integers(0, 5)),
        "firstTimestamp": draw(_TIMES), "lastTimestamp": draw(_TIMES), "eventTime": draw(_TIMES),
        "series": draw(st.none() | st.builds(lambda n, t: {"count": n, "lastObservedTime": t},
                                             st.integers(2, 9), _TIMES)),
        "source": draw(st.none() | st.builds(lambda c, h: {"component": c, "host": h},
                                             _TEXT, _TEXT)),
        "reportingComponent": draw(_TEXT), "reportingInstance": draw(_TEXT),
        "action": draw(_TEXT)})


def _through_the_v1_model(event: Event, now: datetime) -> dict[str, Any]:
    """The body as the events.k8s.io/v1 model gives it: the core Event converted
    (`from_core`), then the create rules of the module doc applied to the model."""
    out = from_core(event)
    source = event.source
    controller = out.reporting_controller or (source.component if source else None) or "mgr"
    out.reporting_controller = controller
    instance = event.reporting_instance or (source.host if source else None) or f"{controller}-h"
    out.reporting_instance = _cut(instance, NAME_LIMIT)
    out.action = _cut(event.action or event.reason or "", NAME_LIMIT)
    out.event_time = event.event_time or event.first_timestamp or now
    count = event.count or 1
    if out.series is None and count >= 2:
        out.series = EventSeries(count=count,
                                 last_observed_time=event.last_timestamp or out.event_time)
    if out.note is not None:
        out.note = _cut(out.note, NOTE_LIMIT)
    out.deprecated_source = out.deprecated_count = None
    out.deprecated_first_timestamp = out.deprecated_last_timestamp = None
    return out.to_dict()


@settings(max_examples=300, deadline=None)
@given(_core_events())
def test_the_create_body_is_the_v1_models_for_any_core_event(event: Event) -> None:
    """`for_create` writes the body from the core Event's fields without the v1 model; it
    must be exactly what that model gives, and valid for it."""
    now = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    body = for_create(event, default_controller="mgr", host="h", now=now)
    assert body == _through_the_v1_model(event, now)
    assert EventsV1Event.model_validate(body).to_dict() == body
