"""`phalanx explain podgang|pod NAME`: why it is where it is, or why it still waits.

Reads only the saved run (`RunRecord`): the gang's lifecycle, where its pods went and in
which topology domains, the conditions the operator and scheduler wrote, and the Events.
"""

from __future__ import annotations

import difflib
from typing import Any

from phalanx.sim.record import GangRecord, PodRecord, RunRecord

from .format import fmt_bytes, fmt_cores, fmt_duration, hostlist


class NotInRun(LookupError):
    """The name is not in the saved run; the message suggests close matches."""

    exit_code = 1

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        listing = ", ".join(known[:8]) + (" ..." if len(known) > 8 else "")
        super().__init__(
            f"no {kind} named {name!r} in this run{hint} "
            f"({len(known)} {kind}s: {listing or 'none'})"
        )


def _conditions(obj: dict[str, Any] | None) -> list[str]:
    if not obj:
        return []
    out = []
    for c in obj.get("status", {}).get("conditions", []):
        line = f"{c.get('type')}={c.get('status')}"
        if c.get("reason"):
            line += f" ({c['reason']})"
        if c.get("message"):
            line += f": {c['message']}"
        out.append(line)
    return out


def _lifecycle(g: GangRecord) -> str:
    marks = [("created", g.created), ("initialized", g.initialized),
             ("gates lifted", g.gates_lifted), ("scheduled", g.scheduled),
             ("running", g.running), ("finished", g.finished), ("deleted", g.deleted)]
    parts = [f"{label} at {fmt_duration(t)}" for label, t in marks if t is not None]
    for t in g.preempted:
        parts.append(f"preempted at {fmt_duration(t)}")
    return ", ".join(parts) if parts else "no lifecycle recorded"


def _domains(record: RunRecord, nodes: list[str]) -> list[str]:
    """Per topology level (broadest first): the domains these nodes span."""
    out = []
    for level in record.topology:
        if level.domain in ("host", "hostname", "node"):
            continue
        values = sorted({record.topology_domain_of(n, level.domain) for n in nodes} - {""})
        if values:
            word = "one" if len(values) == 1 else f"{len(values)}"
            out.append(f"{level.domain}: {', '.join(values)} ({word} {level.domain}"
                       f"{'s' if len(values) != 1 else ''})")
    return out


def _pack_verdict(record: RunRecord, g: GangRecord, nodes: list[str]) -> str:
    """Whether the gang's pack constraint ("required rack") holds for where its pods are."""
    strength, _, level = g.pack_constraint.partition(" ")
    values = sorted({record.topology_domain_of(n, level) for n in nodes} - {""})
    if len(values) == 1:
        return f"The {g.pack_constraint} constraint holds: every pod is in {level} {values[0]}."
    if not values:
        return f"The {g.pack_constraint} constraint cannot be checked: no node has a {level}."
    if strength == "required":
        return (f"The {g.pack_constraint} constraint is VIOLATED: the pods span {len(values)} "
                f"{level}s ({', '.join(values)}).")
    return (f"The preference to pack into one {level} could not be met: the pods span "
            f"{len(values)} {level}s ({', '.join(values)}).")


def _events(record: RunRecord, kind: str, names: list[str], limit: int = 12) -> list[str]:
    """The latest events on these objects; the same event on several objects is one line."""
    wanted = set(names)
    folded: dict[tuple[str, str, str], list[Any]] = {}
    for e in record.events:
        if e.kind == kind and e.name in wanted:
            entry = folded.setdefault((e.type, e.reason, e.message), [e.t, [], 0])
            entry[0] = max(entry[0], e.t)
            entry[1].append(e.name)
            entry[2] += e.count
    rows = sorted(folded.items(), key=lambda kv: kv[1][0])[-limit:]
    lines = []
    for (type_, reason, message), (t, objs, count) in rows:
        who = f"{kind}/{objs[0]}" + (f" (+{len(objs) - 1} more)" if len(objs) > 1 else "")
        times = f" (x{count})" if count > 1 else ""
        lines.append(f"{fmt_duration(t):>7}  {type_:<7}  {reason}  {who}: {message}{times}")
    return lines


def explain_podgang(record: RunRecord, name: str) -> str:
    g = record.gang(name)
    if g is None:
        raise NotInRun("podgang", name, [x.name for x in record.gangs])
    pods = [p for n in g.pods if (p := record.pod(n)) is not None]
    bound = [p for p in pods if p.node and p.deleted is None]
    lines = [
        f"PodGang {g.namespace}/{g.name}"
        + (f" of PodCliqueSet {g.podcliqueset}" if g.podcliqueset else ""),
        f"  scheduler:  {g.scheduler or '-'}",
        f"  priority:   "
        + (f"{g.priority_class} ({g.priority})" if g.priority_class else str(g.priority)),
        f"  phase:      {'Deleted' if g.deleted is not None else g.phase}",
        f"  lifecycle:  {_lifecycle(g)}",
    ]
    if g.pack_constraint:
        lines.append(f"  topology:   {g.pack_constraint}")
    lines.append("")
    if g.scheduled is not None and bound and g.phase != "Pending":
        lines.append(
            f"Why it is where it is: all {len(bound)} pods were bound together "
            f"{fmt_duration(g.wait_seconds)} after the gang was created"
            + (f", inside {g.domain}" if g.domain else "") + "."
        )
        lines.append(f"  nodes: {hostlist(p.node for p in bound)}")
        lines += [f"  {d}" for d in _domains(record, [p.node for p in bound])]
        if g.pack_constraint:
            lines.append("  " + _pack_verdict(record, g, [p.node for p in bound]))
        if g.preempted:
            lines.append(f"  It was preempted {len(g.preempted)} time(s) and rescheduled.")
    elif g.deleted is not None:
        lines.append(f"It was deleted at {fmt_duration(g.deleted)}.")
    else:
        waited = record.meta.duration - (g.created or 0.0)
        lines.append(f"Why it waits ({fmt_duration(waited)} so far):")
        lines.append("  " + (g.explanation or "the scheduler recorded no reason"))
        if g.preempted:
            lines.append(f"  It was preempted at {fmt_duration(g.preempted[-1])} and re-queued.")
    conds = _conditions(record.object("PodGang", g.name))
    if conds:
        lines += ["", "Conditions:"] + [f"  {c}" for c in conds]
    if pods:
        lines += ["", "Pods:"]
        width = max(len(p.name) for p in pods)
        for p in pods:
            where = p.node or "-"
            rack = ""
            if p.node and record.topology:
                levels = [t.domain for t in record.topology if t.domain not in ("host",)]
                if levels:
                    rack = f"{levels[-1]} {record.topology_domain_of(p.node, levels[-1])}"
            lines.append(f"  {p.name:<{width}}  {p.phase:<9}  {where:<12}  {rack}".rstrip())
    evs = _events(record, "PodGang", [g.name]) + _events(record, "Pod", g.pods, limit=6)
    if evs:
        lines += ["", "Events:"] + [f"  {e}" for e in evs]
    return "\n".join(lines)


def _requests(p: PodRecord) -> str:
    parts = []
    if p.gpu:
        parts.append(f"{p.gpu} GPU{'s' if p.gpu != 1 else ''}")
    if p.cpu:
        parts.append(f"{fmt_cores(p.cpu)} cpu")
    if p.memory:
        parts.append(f"{fmt_bytes(p.memory)} memory")
    return ", ".join(parts) or "nothing"


def explain_pod(record: RunRecord, name: str) -> str:
    p = record.pod(name)
    if p is None:
        raise NotInRun("pod", name, list(dict.fromkeys(x.name for x in record.pods)))
    lines = [
        f"Pod {p.namespace}/{p.name}" + (f" (gang {p.gang}, clique {p.clique})" if p.gang else ""),
        f"  phase:     {'Deleted' if p.deleted is not None else p.phase}",
        f"  requests:  {_requests(p)}",
    ]
    marks = [("created", p.created), ("bound", p.bound), ("running", p.running),
             ("finished", p.finished), ("deleted", p.deleted)]
    lines.append("  lifecycle: " + (", ".join(f"{k} at {fmt_duration(t)}" for k, t in marks
                                              if t is not None) or "-"))
    lines.append("")
    if p.node:
        lines.append(f"Where: node {p.node}")
        node = record.node(p.node)
        for level in record.topology:
            if level.domain in ("host",):
                continue
            value = record.topology_domain_of(p.node, level.domain)
            if value:
                lines.append(f"  {level.domain}: {value}")
        if node is not None:
            mates = [x.name for x in record.pods if x.node == p.node and x.name != p.name
                     and x.deleted is None and x.phase not in ("Succeeded", "Failed")]
            lines.append(f"  node has {node.gpu} GPUs, {fmt_cores(node.cpu)} cpu; "
                         f"{len(mates)} other pod(s) on it")
        g = record.gang(p.gang) if p.gang else None
        if g is not None and g.scheduled is not None:
            lines.append(f"  bound with its gang {g.name} (all {len(g.pods)} pods together"
                         + (f", in {g.domain}" if g.domain else "") + ")")
    else:
        lines.append("Why it is not scheduled:")
        lines.append("  " + (p.message or "no reason recorded for the pod"))
        g = record.gang(p.gang) if p.gang else None
        if g is not None and g.explanation and g.explanation != p.message:
            lines.append(f"  its gang {g.name}: {g.explanation}")
    conds = _conditions(record.object("Pod", p.name))
    if conds:
        lines += ["", "Conditions:"] + [f"  {c}" for c in conds]
    evs = _events(record, "Pod", [p.name])
    if evs:
        lines += ["", "Events:"] + [f"  {e}" for e in evs]
    if p.gang:
        lines += ["", f"See the whole gang: phalanx explain podgang {p.gang}"]
    return "\n".join(lines)
