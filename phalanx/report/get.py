"""`phalanx get KIND [NAME]`: objects of a saved run, as `kubectl get` prints them.

The saved run holds every object's final state and snapshots taken before each scenario
step and every `snapshotEvery`; `at` picks the latest snapshot at or before a virtual time.
Tables follow kubectl: pods show NAME READY STATUS RESTARTS AGE (`wide` adds NODE), nodes
NAME STATUS AGE, Grove kinds their CRD printer columns, anything else NAME AGE; events come
from the run's event log (LAST SEEN TYPE REASON OBJECT MESSAGE). `yaml` and `json` print the
object, or a `List` of them, as kubectl does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import yaml

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.cluster.selectors import SelectorError, parse_label_selector
from phalanx.sim.record import EventRecord, RunRecord

from .format import fmt_duration

OUTPUTS = ("table", "wide", "yaml", "json")
_EVENT_NAMES = ("events", "event", "ev")


class GetError(ValueError):
    """A request the saved run cannot answer (unknown kind, no such object, bad --at)."""


@dataclass(slots=True)
class Found:
    kind: str  # the kind as stored ("Pod", "PodGroup.scheduling.run.ai")
    cls: type[Resource] | None
    t: float  # the snapshot's virtual time
    label: str  # which snapshot ("before step 2 (uncordon)", "end of the run")
    items: list[dict[str, Any]]


def _stored_kind(record_objects: dict[str, list[Any]], cls: type[Resource]) -> str:
    group = cls.API_VERSION.rpartition("/")[0]
    qualified = f"{cls.KIND}.{group}"
    if qualified in record_objects:
        return qualified
    return cls.KIND


def find(record: RunRecord, kind: str, name: str | None = None, *, at: float | None = None,
         namespace: str | None = None, selector: str | None = None) -> Found:
    """The matching objects (or events) of the snapshot in force at `at`."""
    try:
        sel = parse_label_selector(selector) if selector else None
    except SelectorError as e:
        raise GetError(f"--selector: {e}") from None
    if kind.lower() in _EVENT_NAMES:
        t = record.meta.duration if at is None else min(at, record.meta.duration)
        events = [e for e in record.events if e.t <= t + 1e-9
                  and (namespace is None or e.namespace == namespace)
                  and (name is None or e.name == name)]
        return Found("Event", None, t, f"events up to {fmt_duration(t)}",
                     [_event_dict(e) for e in events])
    try:
        cls = registry.resolve(kind)
    except LookupError as e:
        raise GetError(str(e)) from None
    try:
        t, label, objects = record.objects_at(at)
    except LookupError as e:
        raise GetError(f"--at: {e}") from None
    stored = _stored_kind(objects, cls)
    items = [o for o in objects.get(stored, [])
             if (namespace is None or not cls.NAMESPACED
                 or o.get("metadata", {}).get("namespace", "default") == namespace)
             and (sel is None or sel.matches(o.get("metadata", {}).get("labels") or {}))]
    if name is not None:
        items = [o for o in items if o.get("metadata", {}).get("name") == name]
        if not items:
            raise GetError(f'{cls.PLURAL or cls.KIND.lower()} "{name}" not found at '
                           f"{fmt_duration(t)} ({label})")
    return Found(stored, cls, t, label, items)


def _event_dict(e: EventRecord) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "t": e.t, "type": e.type, "reason": e.reason,
            "involvedObject": {"kind": e.kind, "name": e.name, "namespace": e.namespace},
            "message": e.message, "count": e.count, "source": {"component": e.source}}


# --- rendering --------------------------------------------------------------------------


def render(record: RunRecord, found: Found, output: str, *, single: bool = False) -> str:
    if output == "json":
        return json.dumps(_document(found, single), indent=2) + "\n"
    if output == "yaml":
        return yaml.safe_dump(_document(found, single), sort_keys=False)
    if not found.items:
        what = "events" if found.kind == "Event" else "resources"
        return f"No {what} found at {fmt_duration(found.t)} ({found.label}).\n"
    if found.kind == "Event":
        return _table(*_event_rows(found))
    now = _instant(record, found.t)
    return _table(*_rows(found, now, wide=output == "wide"))


def _document(found: Found, single: bool) -> Any:
    if single and len(found.items) == 1:
        return found.items[0]
    return {"apiVersion": "v1", "kind": "List", "items": found.items}


def _instant(record: RunRecord, t: float) -> datetime | None:
    try:
        return datetime.fromisoformat(record.meta.started_at) + timedelta(seconds=t)
    except ValueError:
        return None


def _age(obj: dict[str, Any], now: datetime | None) -> str:
    raw = obj.get("metadata", {}).get("creationTimestamp")
    if not raw or now is None:
        return "<unknown>"
    try:
        created = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if created.tzinfo is None and now.tzinfo is not None:
        created = created.replace(tzinfo=now.tzinfo)
    return fmt_duration(max((now - created).total_seconds(), 0.0))


def _rows(found: Found, now: datetime | None, *, wide: bool) -> tuple[list[str], list[list[str]]]:
    kind = found.kind.partition(".")[0]
    items = sorted(found.items, key=lambda o: (o.get("metadata", {}).get("namespace", ""),
                                               o.get("metadata", {}).get("name", "")))
    if kind == "Pod":
        head = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] + (["NODE"] if wide else [])
        return head, [[_name(o), _pod_ready(o), _pod_status(o), _restarts(o), _age(o, now)]
                      + ([o.get("spec", {}).get("nodeName") or "<none>"] if wide else [])
                      for o in items]
    if kind == "Node":
        return ["NAME", "STATUS", "AGE"], [[_name(o), _node_status(o), _age(o, now)]
                                           for o in items]
    columns = [c for c in getattr(found.cls, "PRINTER_COLUMNS", ()) if c.get("jsonPath")]
    head = ["NAME"] + [str(c["name"]).upper() for c in columns]
    if not any(c["jsonPath"] == ".metadata.creationTimestamp" for c in columns):
        head.append("AGE")
    rows = []
    for o in items:
        row = [_name(o)]
        for c in columns:
            if c["jsonPath"] == ".metadata.creationTimestamp":
                row.append(_age(o, now))
            else:
                value = _json_path(o, str(c["jsonPath"]))
                # Zero counters are left out of stored objects; kubectl would show 0.
                row.append(value if value is not None
                           else ("0" if c.get("type") == "integer" else ""))
        if len(row) < len(head):
            row.append(_age(o, now))
        rows.append(row)
    return head, rows


def _event_rows(found: Found) -> tuple[list[str], list[list[str]]]:
    head = ["T", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    rows = [[fmt_duration(e["t"]), e["type"], e["reason"],
             f"{e['involvedObject']['kind'].lower()}/{e['involvedObject']['name']}",
             e["message"] + (f" (x{e['count']})" if e["count"] > 1 else "")]
            for e in found.items]
    return head, rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(r[:-1], widths[:-1])] + [str(r[-1])]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _name(o: dict[str, Any]) -> str:
    return str(o.get("metadata", {}).get("name", ""))


def _conditions(o: dict[str, Any]) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in o.get("status", {}).get(
        "conditions") or ()}


def _pod_ready(o: dict[str, Any]) -> str:
    total = len(o.get("spec", {}).get("containers") or ()) or 1
    statuses = o.get("status", {}).get("containerStatuses") or ()
    if statuses:
        return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"
    return f"{total if _conditions(o).get('Ready') == 'True' else 0}/{total}"


def _pod_status(o: dict[str, Any]) -> str:
    if o.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    status = o.get("status", {})
    phase = status.get("phase") or "Pending"
    if phase == "Pending" and o.get("spec", {}).get("schedulingGates"):
        return "SchedulingGated"
    return str(status.get("reason") or phase)


def _restarts(o: dict[str, Any]) -> str:
    return str(sum(int(s.get("restartCount", 0))
                   for s in o.get("status", {}).get("containerStatuses") or ()))


def _node_status(o: dict[str, Any]) -> str:
    ready = _conditions(o).get("Ready")
    text = "Ready" if ready == "True" else ("NotReady" if ready else "Unknown")
    if o.get("spec", {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


_FILTER = re.compile(r'^(\w+)\[\?\(@\.(\w+)=="([^"]*)"\)\]$')


def _json_path(o: Any, path: str) -> str | None:
    """The subset of JSONPath CRD printer columns use: `.a.b` and `.a[?(@.k=="v")].b`;
    None when the field is absent."""
    value: Any = o
    for part in path.lstrip(".").split("."):
        m = _FILTER.match(part)
        if m:
            field, key, want = m.groups()
            seq = value.get(field) if isinstance(value, dict) else None
            value = next((x for x in seq or () if isinstance(x, dict) and x.get(key) == want),
                         None)
        else:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return None
    return str(value)
