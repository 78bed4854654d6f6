"""Events on a real API server: core/v1 `Event`s written as events.k8s.io/v1 Events.

The recorders (`phalanx.cluster.events`, the scheduler's) build core/v1 Events, which is what
MemoryCluster stores. On a real server `KubeCluster` sends them through the events.k8s.io/v1
API instead, as current Kubernetes components do:

- create: `regarding`, `note`, `reason`, `type`, `eventTime` (the first occurrence),
  `series {count, lastObservedTime}` once it happened twice, `action` (the Event's, else its
  reason: the recorders name only a reason), `reportingController` (reportingComponent,
  else source.component, else the client's field manager) and `reportingInstance`
  (reportingInstance, else source.host, else `<controller>-<host name>`, as client-go
  names it). The deprecated core fields (count, first/lastTimestamp, source) stay unset, as
  that API requires; the note is cut to its 1024-byte limit.
- the recorders' count bump (a merge patch of `count`, `lastTimestamp` and the `message`):
  a patch of `series` only, the one field events.k8s.io/v1 lets change, when the message is
  the note this client last wrote for that Event. A new message cannot go through that API
  (the note is immutable there), yet the recorders promise the Event shows the latest one:
  that patch goes to the same object through core/v1 (which allows it), still as `series`.

Reads (`get`, `list`, `watch` of `Event`) stay core/v1: the server shows every Event there,
whichever API wrote it; see `Event.occurrences` / `first_seen` / `last_seen` / `reporter`.
"""

from __future__ import annotations

import os
import socket
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from phalanx.api.base import micro_time
from phalanx.api.core import Event, EventSeries
from phalanx.api.events import EventsV1Event, to_core

from .convert import prune
from .paths import MERGE_PATCH, collection_path, object_path

if TYPE_CHECKING:
    from .cluster import KubeCluster

NOTE_LIMIT = 1024  # bytes
NAME_LIMIT = 128   # reportingInstance, action, reason
_BUMP_FIELDS = frozenset({"count", "lastTimestamp", "message"})
_NOTES_KEPT = 4096


def host_name() -> str:
    """The pod name in a Deployment (POD_NAME), else the host name."""
    return os.environ.get("POD_NAME") or socket.gethostname()


def _cut(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, without splitting a character."""
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode(errors="ignore")


def for_create(event: Event, *, default_controller: str, host: str,
               now: datetime) -> dict[str, Any]:
    """The events.k8s.io/v1 Event to create for a core/v1 `event` (see the module doc), as
    the request body. Built from the core Event's fields directly: every value comes from a
    valid core Event, so the v1 model would only validate it again (the body took three
    times as long that way)."""
    source = event.source
    controller = event.reporting_component or (source.component if source else None) \
        or default_controller
    instance = event.reporting_instance or (source.host if source else None) \
        or f"{controller}-{host}"
    event_time = event.event_time or event.first_timestamp or now
    body: dict[str, Any] = {"apiVersion": EventsV1Event.API_VERSION, "kind": EventsV1Event.KIND,
                            "metadata": event.metadata.to_dict(warnings=False),
                            "eventTime": micro_time(event_time)}
    count = event.count or 1
    if event.series is not None:
        body["series"] = event.series.to_dict(warnings=False)
    elif count >= 2:
        body["series"] = {"count": count,
                          "lastObservedTime": micro_time(event.last_timestamp or event_time)}
    body["reportingController"] = controller
    body["reportingInstance"] = _cut(instance, NAME_LIMIT)
    body["action"] = _cut(event.action or event.reason or "", NAME_LIMIT)
    if event.reason is not None:
        body["reason"] = event.reason
    body["regarding"] = event.involved_object.to_dict(warnings=False)
    if event.related is not None:
        body["related"] = event.related.to_dict(warnings=False)
    if event.message is not None:
        body["note"] = _cut(event.message, NOTE_LIMIT)
    if event.type is not None:
        body["type"] = event.type
    return body


def as_series(patch: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A core/v1 merge patch with its `count` / `lastTimestamp` turned into `series`, which
    is what a count bump is on an Event created through events.k8s.io/v1."""
    out = {k: v for k, v in patch.items() if k not in ("count", "lastTimestamp")}
    count = patch.get("count")
    if isinstance(count, int) and count >= 2:
        series = EventSeries.model_validate(
            {"count": count, "lastObservedTime": patch.get("lastTimestamp") or now})
        out["series"] = series.to_dict()
    return out


class EventWriter:
    """The Event part of `KubeCluster` (create and patch of core/v1 `Event`)."""

    def __init__(self, cluster: KubeCluster, host: str | None = None) -> None:
        self.cluster = cluster
        self.host = host or host_name()
        # (namespace, name) -> the note last written, to tell a count bump from a new message.
        self._notes: OrderedDict[tuple[str, str], str] = OrderedDict()

    def _remember(self, event: Event) -> Event:
        self._note(event.metadata.namespace or "", event.name, event.message)
        return event

    def _note(self, namespace: str, name: str, note: str | None) -> None:
        key = (namespace, name)
        self._notes[key] = note or ""
        self._notes.move_to_end(key)
        if len(self._notes) > _NOTES_KEPT:
            self._notes.popitem(last=False)

    async def create(self, event: Event, *, returning: bool = True) -> Event | None:
        c = self.cluster
        ns = event.metadata.namespace or c.default_namespace
        body = for_create(event, default_controller=c.field_manager, host=self.host,
                          now=c.clock.now_dt())
        body["metadata"]["namespace"] = ns
        raw = await c.transport.request_bytes(
            "POST", collection_path(EventsV1Event, ns), query=c._write_query(),
            body=body, kind=Event.KIND, name=event.name)
        if not returning:
            # The note the server stored is the one sent; the answer is parsed only for a
            # name the server generated.
            sent = body["metadata"].get("name")
            created = {} if sent or not raw else from_json(raw)
            name = sent or (created.get("metadata") or {}).get("name") or ""
            self._note(ns, name, body.get("note"))
            return None
        return self._remember(_decode(from_json(raw) if raw else {}))

    async def patch(self, name: str, patch: Mapping[str, Any], namespace: str | None) -> Event:
        c = self.cluster
        ns = namespace or c.default_namespace
        body = as_series(patch, c.clock.now_dt())
        bump = set(patch) <= _BUMP_FIELDS and "series" in body
        new_note = "message" in body and body["message"] != self._notes.get((ns, name))
        if bump and not new_note:
            body.pop("message", None)
            data = await c.transport.request(
                "PATCH", object_path(EventsV1Event, name, ns), query=c._write_query(),
                body=body, content_type=MERGE_PATCH, kind=Event.KIND, name=name)
            return self._remember(_decode(data))
        return self._remember(await c._merge_patch(Event, name, body, ns, None))


def _decode(data: dict[str, Any]) -> Event:
    """The core/v1 view of the server's events.k8s.io/v1 answer. Not cached as a merge-patch
    base: a later core/v1 update of the Event reads its core form afresh."""
    return to_core(EventsV1Event.model_validate(prune(EventsV1Event, data)))
