"""KAI Queues in `phalanx get queues` and `phalanx describe queue X`: what each queue holds
against what it deserves, its fair share (written by phalanx-scheduler in the
`phalanx.dev/fair-share` annotation) and its limit, per resource."""

from __future__ import annotations

from typing import Any

from phalanx.api.quantity import format_quantity, parse_quantity
from phalanx.scheduler.queues.status import parse_fair_share

# (name in status / annotation ResourceLists, name in spec.resources, spec unit -> quantity)
RESOURCES = (("nvidia.com/gpu", "gpu"), ("cpu", "cpu"), ("memory", "memory"))
GPU = "nvidia.com/gpu"


def _spec_amount(o: dict[str, Any], res: str, field: str) -> str:
    """A spec number as a quantity: -1 "unlimited"; cpu is in millicores, memory in
    megabytes (KAI's units); unset is 0 (as KAI reads it)."""
    raw = (((o.get("spec") or {}).get("resources") or {}).get(res) or {}).get(field)
    value = float(raw) if isinstance(raw, int | float) else 0.0
    if value == -1:
        return "unlimited"
    if field == "overQuotaWeight" or res == "gpu":
        return f"{value:g}"
    if res == "cpu":
        return format_quantity(value / 1000.0, "cpu")
    return format_quantity(value * 1e6, "memory")


def _listed(values: dict[str, Any] | None, name: str, default: str = "0") -> str:
    raw = (values or {}).get(name)
    if raw is None:
        return default
    try:
        return format_quantity(parse_quantity(str(raw)), name if name != GPU else "")
    except ValueError:
        return str(raw)  # "unlimited"


def shares(o: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """Per resource: allocated, requested, deserved, fair share, limit, over-quota weight."""
    status = o.get("status") or {}
    fair = parse_fair_share(o)
    out = []
    for name, res in RESOURCES:
        out.append((name, {
            "allocated": _listed(status.get("allocated"), name),
            "requested": _listed(status.get("requested"), name),
            "deserved": _listed(fair.get("deserved"), name, "?") if fair else "?",
            "fairShare": _listed(fair.get("fairShare"), name) if fair else "?",
            "limit": _spec_amount(o, res, "limit"),
            "overQuotaWeight": _spec_amount(o, res, "overQuotaWeight"),
        }))
    return out


def queue_rows(items: list[dict[str, Any]], ages: list[str],
               wide: bool) -> tuple[list[str], list[list[str]]]:
    """GPUs by default (what multi-tenant clusters share out); -o wide adds cpu and memory.
    "?" where the scheduler has not written a fair share (no phalanx-scheduler ran)."""
    head = ["NAME", "PARENT", "PRIORITY", "GPU-ALLOCATED", "GPU-DESERVED", "GPU-FAIR-SHARE",
            "GPU-LIMIT"]
    if wide:
        head += ["CPU-ALLOCATED", "CPU-FAIR-SHARE", "MEMORY-ALLOCATED", "MEMORY-FAIR-SHARE"]
    head.append("AGE")
    rows = []
    for o, when in zip(items, ages, strict=True):
        spec = o.get("spec") or {}
        by = dict(shares(o))
        g = by[GPU]
        row = [str(o.get("metadata", {}).get("name", "")), str(spec.get("parentQueue") or ""),
               str(spec.get("priority") if spec.get("priority") is not None else ""),
               g["allocated"], g["deserved"], g["fairShare"], g["limit"]]
        if wide:
            row += [by["cpu"]["allocated"], by["cpu"]["fairShare"],
                    by["memory"]["allocated"], by["memory"]["fairShare"]]
        row.append(when)
        rows.append(row)
    return head, rows


def shares_section(o: dict[str, Any]) -> list[str]:
    """describe's table of a queue's shares."""
    head = ["RESOURCE", "ALLOCATED", "REQUESTED", "DESERVED", "FAIR SHARE", "LIMIT",
            "OVER-QUOTA WEIGHT"]
    keys = ["allocated", "requested", "deserved", "fairShare", "limit", "overQuotaWeight"]
    rows = [[name, *(s[k] for k in keys)] for name, s in shares(o)]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = ["Shares:"] + [f"  {fmt.format(*r).rstrip()}" for r in [head, *rows]]
    children = (o.get("status") or {}).get("childQueues")
    if children:
        lines.append(f"Child queues:  {', '.join(children)}")
    return lines
