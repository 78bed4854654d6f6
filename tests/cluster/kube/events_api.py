"""events.k8s.io/v1 Events for the REST facade, served as kube-apiserver serves them.

One storage with core/v1 Events (the MemoryCluster's `Event` store), converted on every
request, and the API server's events.k8s.io/v1 rules (pkg/apis/core/validation/events.go):
on create eventTime, reportingController (a qualified name), reportingInstance, action and
reason are required, the deprecated core fields must be unset, `series` needs count >= 2
and a lastObservedTime; afterwards every field but `series` (and metadata) is immutable.
MicroTime fields must carry exactly six fractional digits (metav1.MicroTime's parse layout).
Create, get, merge patch and delete are served; list and watch go through core/v1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from phalanx.api.core import Event
from phalanx.api.events import EventsV1Event, from_core, to_core
from phalanx.cluster.client import ApiError, Invalid
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import merge_patch

GROUP_VERSION = "events.k8s.io/v1"
_MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_IMMUTABLE = ("regarding", "reason", "note", "deprecatedSource", "deprecatedFirstTimestamp",
              "deprecatedLastTimestamp", "deprecatedCount", "action", "type", "eventTime",
              "related", "reportingController", "reportingInstance")


def _series_errors(ev: dict[str, Any]) -> list[tuple[str, str]]:
    series = ev.get("series")
    if series is None:
        return []
    errors = []
    if (series.get("count") or 0) < 2:
        errors.append(("series.count", "should be at least 2"))
    last = series.get("lastObservedTime")
    if not last:
        errors.append(("series.lastObservedTime", "Required value"))
    elif not _MICRO.match(str(last)):
        errors.append(("series.lastObservedTime", f"{last!r} is not RFC3339 with microseconds"))
    return errors


def _common_errors(ev: dict[str, Any], namespace: str) -> list[tuple[str, str]]:
    errors = []
    regarding_ns = (ev.get("regarding") or {}).get("namespace") or ""
    if not regarding_ns and namespace not in ("default", "kube-system"):
        errors.append(("regarding.namespace", "does not match event.namespace"))
    controller = ev.get("reportingController") or ""
    if not controller:
        errors.append(("reportingController", "Required value"))
    elif not _QUALIFIED.match(controller):
        errors.append(("reportingController", f"{controller!r} is not a qualified name"))
    for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = ev.get(field) or ""
        if not value:
            errors.append((field, "Required value"))
        elif len(value) > limit:
            errors.append((field, f"can have at most {limit} characters"))
    if len((ev.get("note") or "").encode()) > 1024:
        errors.append(("note", "can have at most 1024 characters"))
    if ev.get("type") not in ("Normal", "Warning"):
        errors.append(("type", f"has invalid value: {ev.get('type')}"))
    return errors


def create_errors(ev: dict[str, Any], namespace: str) -> list[tuple[str, str]]:
    errors = _common_errors(ev, namespace) + _series_errors(ev)
    event_time = ev.get("eventTime")
    if not event_time:
        errors.append(("eventTime", "Required value"))
    elif not _MICRO.match(str(event_time)):
        errors.append(("eventTime", f"{event_time!r} is not RFC3339 with microseconds"))
    for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount",
                  "deprecatedSource"):
        if ev.get(field):
            errors.append((field, "needs to be unset"))
    return errors


def update_errors(new: dict[str, Any], old: dict[str, Any], namespace: str
                  ) -> list[tuple[str, str]]:
    errors = _common_errors(new, namespace)
    if new.get("series") != old.get("series"):
        errors += _series_errors(new)
    errors += [(f, "field is immutable") for f in _IMMUTABLE if new.get(f) != old.get(f)]
    return errors


def _refuse(errors: list[tuple[str, str]], name: str) -> None:
    if errors:
        detail = "; ".join(f"{f}: {m}" for f, m in errors)
        raise Invalid(f'Event.events.k8s.io "{name}" is invalid: {detail}', kind="Event",
                      name=name, field=errors[0][0])


async def handle(cluster: MemoryCluster, request: web.Request, namespace: str | None,
                 name: str | None) -> web.Response:
    """One request to /apis/events.k8s.io/v1/[namespaces/NS/]events[/NAME]."""
    ns = namespace or "default"
    raw = await request.read()
    body: Any = json.loads(raw) if raw else None
    method = request.method
    if name is None and method == "POST":
        body.setdefault("metadata", {}).setdefault("namespace", ns)
        event_name = body["metadata"].get("name") or ""
        _refuse(create_errors(body, ns), event_name)
        created = await cluster.create(to_core(EventsV1Event.model_validate(body)))
        return web.json_response(from_core(created).to_dict(), status=201)
    if name is None:
        raise ApiError(f"the facade serves {GROUP_VERSION} list and watch through core/v1")
    if method == "GET":
        return web.json_response(from_core(await cluster.get(Event, name, ns)).to_dict())
    if method == "PATCH" and request.content_type == "application/merge-patch+json":
        current = await cluster.get(Event, name, ns)
        old = from_core(current).to_dict()
        new = merge_patch(old, body)
        _refuse(update_errors(new, old, ns), name)
        event = to_core(EventsV1Event.model_validate(new))
        event.metadata.resource_version = (new.get("metadata") or {}).get("resourceVersion") \
            or current.metadata.resource_version
        return web.json_response(from_core(await cluster.update(event)).to_dict())
    if method == "DELETE":
        await cluster.delete(Event, name, ns)
        return web.json_response({"kind": "Status", "status": "Success", "code": 200})
    raise ApiError(f"method {method} ({request.content_type}) not served for {GROUP_VERSION}")
