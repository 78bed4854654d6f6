"""Rows of `phalanx get` tables, one builder per kind, as `kubectl get` prints them.

Pods: NAME READY STATUS RESTARTS AGE (wide: IP NODE NOMINATED NODE READINESS GATES). Nodes:
NAME STATUS ROLES AGE VERSION (wide: the addresses and node info kubectl shows, then the
allocatable cpu, memory and GPUs of the simulated node). Grove and scheduler kinds: their
CRD printer columns. Anything else: NAME AGE. Events: the run's event log.

kubectl's decorations apply to every kind: `-A` puts NAMESPACE first, `-L key` adds a column
per label key, `--show-labels` a LABELS column last, and when several kinds are printed
each name is prefixed with `kind.group/`. Tables are never cut: a long cell makes a long
line, as kubectl prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from phalanx.api.quantity import format_quantity, parse_quantity

from .format import fmt_duration
from .queues import queue_rows

GPU = "nvidia.com/gpu"


@dataclass(slots=True)
class TableOptions:
    wide: bool = False
    with_namespace: bool = False  # -A: a NAMESPACE column first
    with_kind: bool = False  # several kinds: names as kind.group/name
    show_labels: bool = False
    label_columns: list[str] = field(default_factory=list)


def kind_prefix(kind: str, group: str) -> str:
    """`pod`, `podgang.scheduler.grove.io`: what kubectl puts before the name."""
    return kind.lower() + (f".{group}" if group else "")


def format_labels(labels: dict[str, str] | None) -> str:
    """`a=1,b=2` sorted by key, `<none>` when there are none (apimachinery's FormatLabels)."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def label_headers(keys: list[str]) -> list[str]:
    """-L app.kubernetes.io/part-of -> PART-OF (the last path segment, upper-cased)."""
    return [k.rsplit("/", 1)[-1].upper() for k in keys]


def render_table(head: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns, three spaces apart, nothing cut or wrapped."""
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(r[:-1], widths[:-1])] + [str(r[-1])]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def object_rows(kind: str, cls: Any, items: list[dict[str, Any]], now: datetime | None,
                opts: TableOptions, prefix: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows for objects of one kind, decorated as kubectl decorates them."""
    base = kind.partition(".")[0]
    if base == "Pod":
        head, rows = _pod_rows(items, now, opts.wide)
    elif base == "Node":
        head, rows = _node_rows(items, now, opts.wide)
    elif base == "Queue":  # queues.py: allocated, deserved, fair share, limit
        head, rows = queue_rows(items, [age(o, now) for o in items], opts.wide)
    else:
        head, rows = _printer_column_rows(cls, items, now, opts.wide)
    if opts.with_kind:
        for r in rows:
            r[0] = f"{prefix}/{r[0]}"
    head = head + label_headers(opts.label_columns) + (["LABELS"] if opts.show_labels else [])
    for r, o in zip(rows, items):
        labels = o.get("metadata", {}).get("labels") or {}
        r += [labels.get(k, "") for k in opts.label_columns]
        if opts.show_labels:
            r.append(format_labels(labels))
    namespaced = bool(getattr(cls, "NAMESPACED", True))
    if opts.with_namespace and namespaced:
        head = ["NAMESPACE", *head]
        rows = [[o.get("metadata", {}).get("namespace", "default"), *r]
                for r, o in zip(rows, items)]
    return head, rows


def event_rows(items: list[dict[str, Any]],
               opts: TableOptions) -> tuple[list[str], list[list[str]]]:
    head = ["TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    rows = [[fmt_duration(e["t"]), e["type"], e["reason"],
             f"{e['involvedObject']['kind'].lower()}/{e['involvedObject']['name']}",
             e["message"] + (f" (x{e['count']})" if e["count"] > 1 else "")]
            for e in items]
    if opts.with_namespace:
        head = ["NAMESPACE", *head]
        rows = [[e["involvedObject"].get("namespace") or "", *r] for r, e in zip(rows, items)]
    return head, rows


# --- per kind ---------------------------------------------------------------------------


def age(obj: dict[str, Any], now: datetime | None) -> str:
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


def _name(o: dict[str, Any]) -> str:
    return str(o.get("metadata", {}).get("name", ""))


def _conditions(o: dict[str, Any]) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in o.get("status", {}).get(
        "conditions") or ()}


def _pod_rows(items: list[dict[str, Any]], now: datetime | None,
              wide: bool) -> tuple[list[str], list[list[str]]]:
    head = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        head += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    rows = []
    for o in items:
        row = [_name(o), pod_ready(o), pod_status(o), _restarts(o), age(o, now)]
        if wide:
            spec, status = o.get("spec", {}), o.get("status", {})
            gates = spec.get("readinessGates") or ()
            row += [status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
                    status.get("nominatedNodeName") or "<none>",
                    f"0/{len(gates)}" if gates else "<none>"]
        rows.append(row)
    return head, rows


def pod_ready(o: dict[str, Any]) -> str:
    total = len(o.get("spec", {}).get("containers") or ()) or 1
    statuses = o.get("status", {}).get("containerStatuses") or ()
    if statuses:
        return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"
    return f"{total if _conditions(o).get('Ready') == 'True' else 0}/{total}"


def pod_status(o: dict[str, Any]) -> str:
    if o.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    status = o.get("status", {})
    phase = status.get("phase") or "Pending"
    if phase == "Pending" and o.get("spec", {}).get("schedulingGates"):
        return "SchedulingGated"
    if phase == "Succeeded":
        return str(status.get("reason") or "Completed")  # kubectl shows the container's
    return str(status.get("reason") or phase)


def _restarts(o: dict[str, Any]) -> str:
    return str(sum(int(s.get("restartCount", 0))
                   for s in o.get("status", {}).get("containerStatuses") or ()))


def node_status(o: dict[str, Any]) -> str:
    ready = _conditions(o).get("Ready")
    text = "Ready" if ready == "True" else ("NotReady" if ready else "Unknown")
    if o.get("spec", {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _roles(o: dict[str, Any]) -> str:
    labels = o.get("metadata", {}).get("labels") or {}
    roles = sorted({k.partition("/")[2] for k in labels
                    if k.startswith("node-role.kubernetes.io/") and k.partition("/")[2]})
    if labels.get("kubernetes.io/role"):
        roles = sorted({*roles, labels["kubernetes.io/role"]})
    return ",".join(roles) or "<none>"


def _address(o: dict[str, Any], kind: str) -> str:
    for a in o.get("status", {}).get("addresses") or ():
        if isinstance(a, dict) and a.get("type") == kind:
            return str(a.get("address", ""))
    return "<none>"


def _allocatable(o: dict[str, Any], resource: str) -> str:
    raw = (o.get("status", {}).get("allocatable") or {}).get(resource)
    if raw is None:
        return "0"
    try:
        return format_quantity(parse_quantity(str(raw)), resource)
    except ValueError:
        return str(raw)


def _node_rows(items: list[dict[str, Any]], now: datetime | None,
               wide: bool) -> tuple[list[str], list[list[str]]]:
    head = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    if wide:
        head += ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                 "CONTAINER-RUNTIME", "CPU", "MEMORY", "GPU"]
    rows = []
    for o in items:
        info = o.get("status", {}).get("nodeInfo") or {}
        row = [_name(o), node_status(o), _roles(o), age(o, now),
               str(info.get("kubeletVersion") or "<none>")]
        if wide:
            row += [_address(o, "InternalIP"), _address(o, "ExternalIP"),
                    str(info.get("osImage") or "<unknown>"),
                    str(info.get("kernelVersion") or "<unknown>"),
                    str(info.get("containerRuntimeVersion") or "<unknown>"),
                    _allocatable(o, "cpu"), _allocatable(o, "memory"), _allocatable(o, GPU)]
        rows.append(row)
    return head, rows


def _printer_column_rows(cls: Any, items: list[dict[str, Any]], now: datetime | None,
                         wide: bool = False) -> tuple[list[str], list[list[str]]]:
    # As kubectl: a column of priority above 0 only in the wide output.
    columns = [c for c in getattr(cls, "PRINTER_COLUMNS", ())
               if c.get("jsonPath") and (wide or not c.get("priority"))]
    head = ["NAME"] + [str(c["name"]).upper() for c in columns]
    if not any(c["jsonPath"] == ".metadata.creationTimestamp" for c in columns):
        head.append("AGE")
    rows = []
    for o in items:
        row = [_name(o)]
        for c in columns:
            if c["jsonPath"] == ".metadata.creationTimestamp":
                row.append(age(o, now))
            else:
                path = str(c["jsonPath"])
                value = json_path(o, path)
                if value is None:
                    # Zero counters are left out of stored objects (Go's omitempty) and the
                    # CRDs default them to 0 where their parent exists (status,
                    # status.updateProgress); a field without its parent is a blank cell in
                    # kubectl's output.
                    parent = path.rpartition(".")[0]
                    value = "0" if c.get("type") == "integer" and (
                        not parent or json_path(o, parent) is not None) else ""
                row.append(value)
        if len(row) < len(head):
            row.append(age(o, now))
        rows.append(row)
    return head, rows


_FILTER = re.compile(r'^(\w+)\[\?\(@\.(\w+)=="([^"]*)"\)\]$')
# A path step: a name, optionally followed by a filter whose quoted value may hold dots.
_STEP = re.compile(r'\w+(?:\[\?\(@\.\w+=="[^"]*"\)\])?')


def json_path(o: Any, path: str) -> str | None:
    """The subset of JSONPath CRD printer columns use: `.a.b` and `.a[?(@.k=="v")].b`;
    None when the field is absent."""
    steps = _STEP.findall(path)
    if "".join(f".{s}" for s in steps) != path:
        raise ValueError(f"unsupported JSONPath {path!r}")
    value: Any = o
    for part in steps:
        m = _FILTER.match(part)
        if m:
            name, key, want = m.groups()
            seq = value.get(name) if isinstance(value, dict) else None
            value = next((x for x in seq or () if isinstance(x, dict) and x.get(key) == want),
                         None)
        else:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return None
    return str(value)
