"""Events: metav1.MicroTime's wire form, the events.k8s.io/v1 kind and its conversion."""

from datetime import UTC, datetime, timedelta, timezone

from phalanx.api import registry
from phalanx.api.core import Event, Lease
from phalanx.api.events import EventsV1Event, from_core, to_core

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_micro_time_always_has_six_fractional_digits():
    # The API server parses MicroTime with exactly this layout; ":00Z" is refused.
    lease = Lease.model_validate({"spec": {"renewTime": T0, "acquireTime": T0 + timedelta(
        microseconds=5)}})
    assert lease.to_dict()["spec"] == {"renewTime": "2025-01-01T00:00:00.000000Z",
                                       "acquireTime": "2025-01-01T00:00:00.000005Z"}
    other_zone = datetime(2025, 1, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    ev = Event.model_validate({"involvedObject": {}, "eventTime": other_zone,
                               "series": {"count": 2, "lastObservedTime": T0}})
    out = ev.to_dict()
    assert out["eventTime"] == out["series"]["lastObservedTime"] == "2025-01-01T00:00:00.000000Z"
    assert Event.model_validate(out) == ev
    assert ev.copy_deep() == ev  # python-mode copies keep the datetime as it is


def test_conversion_renames_fields_as_the_api_server_does():
    core = Event.model_validate({
        "metadata": {"name": "p.1", "namespace": "ns"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "R", "message": "m", "type": "Warning", "count": 3,
        "firstTimestamp": T0, "lastTimestamp": T0 + timedelta(seconds=9),
        "source": {"component": "c", "host": "h"}, "reportingComponent": "c",
        "reportingInstance": "c-h", "action": "A", "eventTime": T0,
        "series": {"count": 3, "lastObservedTime": T0}})
    v1 = from_core(core)
    assert isinstance(v1, EventsV1Event) and v1.api_version == "events.k8s.io/v1"
    assert (v1.regarding, v1.note, v1.reporting_controller) == (core.involved_object, "m", "c")
    assert (v1.deprecated_count, v1.deprecated_source, v1.deprecated_first_timestamp) == (
        3, core.source, T0)
    assert (v1.event_time, v1.series, v1.action, v1.reason) == (T0, core.series, "A", "R")
    assert to_core(v1) == core
    v1.regarding.name = "changed"
    assert core.involved_object.name == "p"  # a private copy


def test_event_readers_see_either_form():
    legacy = Event.model_validate({"involvedObject": {}, "count": 4, "firstTimestamp": T0,
                                   "lastTimestamp": T0 + timedelta(seconds=5),
                                   "source": {"component": "legacy"}})
    assert (legacy.occurrences, legacy.first_seen, legacy.last_seen, legacy.reporter) == (
        4, T0, T0 + timedelta(seconds=5), "legacy")
    new = to_core(EventsV1Event.model_validate({
        "eventTime": T0, "reportingController": "new",
        "series": {"count": 2, "lastObservedTime": T0 + timedelta(seconds=7)}}))
    assert (new.occurrences, new.first_seen, new.last_seen, new.reporter) == (
        2, T0, T0 + timedelta(seconds=7), "new")
    once = to_core(EventsV1Event(event_time=T0))
    assert (once.occurrences, once.first_seen, once.last_seen, once.reporter) == (1, T0, T0, "")


def test_events_v1_is_not_registered_so_events_names_the_core_kind():
    assert registry.resolve("events") is Event and registry.get("v1", "Event") is Event
