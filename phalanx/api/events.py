"""events.k8s.io/v1 Event, the Events API newer Kubernetes components write through.

It is the same object as a core/v1 `Event` (one storage; kube-apiserver converts between
the two on every request), with renamed fields:

    core/v1             events.k8s.io/v1
    involvedObject      regarding
    message             note
    reportingComponent  reportingController
    source              deprecatedSource
    firstTimestamp      deprecatedFirstTimestamp
    lastTimestamp       deprecatedLastTimestamp
    count               deprecatedCount
    (the rest: eventTime, series, reportingInstance, action, reason, related, type, as is)

`from_core` / `to_core` convert field for field, as the API server does. What the server
asks of an Event *created* through events.k8s.io/v1 (eventTime, action and both reporting
fields set; the deprecated fields unset; note at most 1024 bytes; only `series` may change
afterwards) is up to the writer: see `phalanx.cluster.kube.events`.

Not in `phalanx.api.registry`: there `events` names the core kind, which every reader uses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .base import MicroTime, Resource, copy_data
from .core import Event, EventSeries, EventSource, ObjectReference

# (core/v1 field, events.k8s.io/v1 field), python names.
RENAMED_FIELDS: tuple[tuple[str, str], ...] = (
    ("involved_object", "regarding"),
    ("message", "note"),
    ("reporting_component", "reporting_controller"),
    ("source", "deprecated_source"),
    ("first_timestamp", "deprecated_first_timestamp"),
    ("last_timestamp", "deprecated_last_timestamp"),
    ("count", "deprecated_count"),
)
SHARED_FIELDS = ("event_time", "series", "reporting_instance", "action", "reason", "related",
                 "type")


class EventsV1Event(Resource):
    """events.k8s.io/v1 Event. Top-level fields, no spec or status, as in Kubernetes."""

    API_VERSION = "events.k8s.io/v1"
    KIND = "Event"
    PLURAL = "events"
    SHORT_NAMES = ("ev",)
    NAMESPACED = True

    event_time: MicroTime | None = None  # required on create
    series: EventSeries | None = None
    reporting_controller: str | None = None
    reporting_instance: str | None = None
    action: str | None = None
    reason: str | None = None
    regarding: ObjectReference | None = None
    related: ObjectReference | None = None
    note: str | None = None
    type: str | None = None
    deprecated_source: EventSource | None = None
    deprecated_first_timestamp: datetime | None = None
    deprecated_last_timestamp: datetime | None = None
    deprecated_count: int | None = None


def _renamed(data: dict[str, Any], pairs: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    out = {"metadata": data["metadata"]}
    for old, new in pairs:
        if data.get(old) is not None:
            out[new] = data[old]
    for name in SHARED_FIELDS:
        if data.get(name) is not None:
            out[name] = data[name]
    return out


def from_core(event: Event) -> EventsV1Event:
    """The events.k8s.io/v1 view of a core/v1 Event (a private copy)."""
    return EventsV1Event.model_validate(_renamed(copy_data(event), RENAMED_FIELDS))


def to_core(event: EventsV1Event) -> Event:
    """The core/v1 view of an events.k8s.io/v1 Event (a private copy)."""
    back = tuple((new, old) for old, new in RENAMED_FIELDS)
    data = _renamed(copy_data(event), back)
    data.setdefault("involved_object", {})  # required in core/v1
    return Event.model_validate(data)
