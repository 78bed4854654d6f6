"""`phalanx get KIND[,KIND...] [NAME...]`: objects of a saved run, as `kubectl get` prints them.

The saved run keeps every object's versions through the run (its history), so `at` rebuilds
the objects at any virtual time; runs saved without a history fall back to their snapshots
(before each scenario step and every `snapshotEvery`). Kinds are named as kubectl takes them
(plural, singular, short name, `kind.group`), several at once (`pods,podgangs`), or `all`
(the workload's own kinds). As kubectl: only the `default` namespace unless `namespace` or
`all_namespaces`; tables per kind (names as `kind.group/name` when several kinds are shown);
`yaml` / `json` print the object, or a `List`; `name` prints `kind.group/name` lines.
Rows: phalanx/report/tables.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.cluster.selectors import SelectorError, parse_label_selector
from phalanx.sim.record import EventRecord, NoStateAt, RunRecord

from .format import fmt_duration
from .kubeyaml import kubectl_json, kubectl_yaml
from .tables import TableOptions, event_rows, kind_prefix, object_rows, render_table

OUTPUTS = ("table", "wide", "yaml", "json", "name")
_EVENT_NAMES = ("events", "event", "ev")
# `get all`: the kinds a workload is made of, in the order kubectl users read them.
ALL_KINDS = ("podcliquesets", "podcliquescalinggroups", "podcliques", "podgangs", "pods",
             "services")
DEFAULT_NAMESPACE = "default"


class GetError(ValueError):
    """A request the saved run cannot answer (unknown kind, no such object, bad --at)."""


@dataclass(slots=True)
class Found:
    kind: str  # the kind as stored ("Pod", "PodGroup.scheduling.run.ai"), or "Event"
    cls: type[Resource] | None
    items: list[dict[str, Any]]


@dataclass(slots=True)
class Result:
    t: float  # the virtual time of the objects shown
    label: str  # "at 2m19s", "end of the run", "snapshot before step 2 (uncordon)"
    namespace: str | None  # None: every namespace (-A)
    found: list[Found] = field(default_factory=list)
    several: bool = False  # several kinds asked for: prefix names with their kind


def _stored_kind(record_objects: dict[str, list[Any]], cls: type[Resource]) -> str:
    qualified = f"{cls.KIND}.{cls.API_VERSION.rpartition('/')[0]}"
    return qualified if qualified in record_objects else cls.KIND


def _kinds(text: str) -> tuple[list[str], bool]:
    """The kinds asked for, and whether several were (`pods,podgangs`, `all`)."""
    wanted = [k.strip() for k in text.split(",") if k.strip()]
    if not wanted:
        raise GetError("name a kind, e.g. pods or podgangs (or all)")
    several = len(wanted) > 1 or "all" in (k.lower() for k in wanted)
    out: list[str] = []
    for k in wanted:
        out += list(ALL_KINDS) if k.lower() == "all" else [k]
    return list(dict.fromkeys(out)), several


def _state_label(record: RunRecord, t: float, label: str) -> str:
    if label in ("end of the run", "history"):
        return f"at {fmt_duration(t)}" + (" (end of the run)" if label != "history" else "")
    return f"at {fmt_duration(t)} (snapshot {label})"


def find(record: RunRecord, kinds: str, names: list[str] | None = None, *,
         at: float | None = None, namespace: str | None = DEFAULT_NAMESPACE,
         selector: str | None = None) -> Result:
    """The matching objects (or events) in force at `at`. `namespace` None: every one."""
    try:
        sel = parse_label_selector(selector) if selector else None
    except SelectorError as e:
        raise GetError(f"--selector: {e}") from None
    wanted, several = _kinds(kinds)
    try:
        t, label, objects = record.objects_at(at)
    except NoStateAt as e:
        raise GetError(_no_state_message(e)) from None
    result = Result(t, _state_label(record, t, label), namespace, several=several)
    names = list(names or [])
    missing = list(names)
    for kind in wanted:
        if kind.lower() in _EVENT_NAMES:
            found = _events(record, t, namespace, names)
        else:
            try:
                cls = registry.resolve(kind)
            except LookupError as e:
                if kind in ALL_KINDS:
                    continue
                raise GetError(str(e)) from None
            stored = _stored_kind(objects, cls)
            items = [o for o in objects.get(stored, [])
                     if (namespace is None or not cls.NAMESPACED
                         or o.get("metadata", {}).get("namespace", "default") == namespace)
                     and (sel is None or sel.matches(o.get("metadata", {}).get("labels") or {}))]
            if names:
                items = [o for o in items if o.get("metadata", {}).get("name") in names]
                for o in items:
                    if o.get("metadata", {}).get("name") in missing:
                        missing.remove(o["metadata"]["name"])
                if not items and not several:
                    raise GetError(f'{cls.PLURAL or cls.KIND.lower()} "{names[0]}" not found '
                                   f"{result.label}")
            found = Found(stored, cls, _sorted(items))
        if found.items or not several:
            result.found.append(found)
    if names and several and missing:
        raise GetError(f'{", ".join(repr(n) for n in missing)} not found {result.label}')
    return result


def _sorted(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda o: (o.get("metadata", {}).get("namespace", ""),
                                        o.get("metadata", {}).get("name", "")))


def _events(record: RunRecord, t: float, namespace: str | None, names: list[str]) -> Found:
    events = [e for e in record.events if e.t <= t + 1e-9
              and (namespace is None or (e.namespace or DEFAULT_NAMESPACE) == namespace)
              and (not names or e.name in names)]
    return Found("Event", None, [_event_dict(e) for e in events])


def _no_state_message(e: NoStateAt) -> str:
    times = ", ".join(fmt_duration(s) for s in e.snapshot_times[:10]) or "none"
    return (f"--at: this saved run has no state at or before {fmt_duration(e.t)}: it was saved "
            f"without its history, and its snapshots are at {times} (the final state is at "
            f"{fmt_duration(e.end)}). Re-run it with this Phalanx to keep the whole history, "
            "or add a Scenario with snapshotEvery (e.g. 30s) to take more snapshots.")


def _event_dict(e: EventRecord) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "t": e.t, "type": e.type, "reason": e.reason,
            "involvedObject": {"kind": e.kind, "name": e.name, "namespace": e.namespace},
            "message": e.message, "count": e.count, "source": {"component": e.source}}


# --- rendering --------------------------------------------------------------------------


def render(record: RunRecord, result: Result, output: str, *, single: bool = False,
           show_labels: bool = False, label_columns: list[str] | None = None) -> str:
    items = [o for f in result.found for o in f.items]
    if output in ("json", "yaml"):
        doc: Any = items[0] if single and len(items) == 1 and not result.several else {
            "apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}
        return kubectl_json(doc) if output == "json" else kubectl_yaml(doc)
    if not items:
        where = (f" in {result.namespace} namespace" if result.namespace else "")
        return f"No resources found{where} {result.label}.\n"
    if output == "name":
        return "".join(f"{_prefix(f)}/{o.get('metadata', {}).get('name', '')}\n"
                       for f in result.found for o in f.items)
    now = _instant(record, result.t)
    opts = TableOptions(wide=output == "wide", with_namespace=result.namespace is None,
                        with_kind=result.several, show_labels=show_labels,
                        label_columns=list(label_columns or []))
    tables = []
    for f in result.found:
        if not f.items:
            continue
        if f.kind == "Event":
            tables.append(render_table(*event_rows(f.items, opts)))
        else:
            tables.append(render_table(*object_rows(f.kind, f.cls, f.items, now, opts,
                                                    _prefix(f))))
    return "\n".join(tables)


def _prefix(f: Found) -> str:
    if f.cls is None:
        return "event"
    return kind_prefix(f.cls.KIND, f.cls.API_VERSION.rpartition("/")[0])


def _instant(record: RunRecord, t: float) -> datetime | None:
    try:
        return datetime.fromisoformat(record.meta.started_at) + timedelta(seconds=t)
    except ValueError:
        return None
