"""Why a PodGang or a pod is where it is, or why it still waits: the heart of
`phalanx describe podgang|pod NAME` (phalanx/report/describe.py adds kubectl's sections).

Reads only the saved run (`RunRecord`): the gang's lifecycle, where its pods went and in
which topology domains, the conditions the operator and scheduler wrote, and every Event
(none left out: the one that explains a wait is often an early one).
"""

from __future__ import annotations

import difflib
from typing import Any

from phalanx.sim.record import GangRecord, PodRecord, RunRecord

from .format import fmt_bytes, fmt_cores, fmt_duration, hostlist
from .summary import pending_since


class Ambiguous(LookupError):
    """The name is in several namespaces of the saved run and none was given."""

    exit_code = 1


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


def conditions_table(obj: dict[str, Any] | None) -> list[str]:
    """TYPE STATUS REASON MESSAGE, aligned (kubectl describe's Conditions)."""
    conds = (obj or {}).get("status", {}).get("conditions") or []
    if not conds:
        return []
    rows = [[str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason") or ""),
             str(c.get("message") or "")] for c in conds]
    return aligned(["Type", "Status", "Reason", "Message"], rows)


def aligned(head: list[str], rows: list[list[str]]) -> list[str]:
    """Columns two spaces apart, with kubectl describe's dashes under the header; the last
    column is never padded (nor cut)."""
    rule = ["-" * len(h) for h in head]
    table = [head, rule, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    return ["  ".join([c.ljust(w) for c, w in zip(r[:-1], widths[:-1])] + [r[-1]]).rstrip()
            for r in table]


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


def events_table(record: RunRecord, objects: list[tuple[str, str]],
                 namespace: str | None = None) -> list[str]:
    """Every event on these (kind, name) objects (of `namespace`, when given), oldest first,
    as an aligned table; the same event on several objects (a gang's pods) is one line
    naming the first and a count."""
    wanted = set(objects)
    folded: dict[tuple[str, str, str, str], list[Any]] = {}
    for e in record.events:
        if (e.kind, e.name) in wanted and (namespace is None or e.namespace in ("", namespace)):
            entry = folded.setdefault((e.kind, e.type, e.reason, e.message), [e.t, [], 0])
            entry[0] = max(entry[0], e.t)
            if e.name not in entry[1]:
                entry[1].append(e.name)
            entry[2] += e.count
    rows = []
    for (kind, type_, reason, message), (t, names, count) in sorted(
            folded.items(), key=lambda kv: (kv[1][0], kv[0][0], kv[1][1][0])):
        who = f"{kind.lower()}/{names[0]}" + (f" (+{len(names) - 1} more)"
                                              if len(names) > 1 else "")
        rows.append([fmt_duration(t), type_, reason, who,
                     message + (f" (x{count})" if count > 1 else "")])
    return aligned(["Time", "Type", "Reason", "Object", "Message"], rows) if rows else []


def explain_podgang(record: RunRecord, name: str, namespace: str | None = None) -> str:
    g = record.gang(name, namespace)
    if g is None:
        raise NotInRun("podgang", name, [x.name for x in record.gangs])
    pods = [p for n in g.pods if (p := record.pod(n, g.namespace)) is not None]
    bound = [p for p in pods if p.node and p.deleted is None]
    lines = [
        f"PodGang {g.namespace}/{g.name}"
        + (f" of PodCliqueSet {g.podcliqueset}" if g.podcliqueset else ""),
        f"  {'Scheduler:':<15}{g.scheduler or '-'}",
        f"  {'Priority:':<15}"
        + (f"{g.priority_class} ({g.priority})" if g.priority_class else str(g.priority)),
        f"  {'Phase:':<15}{g.phase}",
        f"  {'Lifecycle:':<15}{_lifecycle(g)}",
    ]
    if g.pack_constraint:
        lines.append(f"  {'Topology:':<15}{g.pack_constraint}")
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
        since = pending_since(g)
        waited = record.meta.duration - since
        lines.append(f"Why it waits ({fmt_duration(waited)} so far, since "
                     + (f"it was preempted at {fmt_duration(since)}" if g.preempted
                        and since >= g.preempted[-1] else
                        f"it lost its placement at {fmt_duration(since)}"
                        if since > (g.created or 0.0) else "it was created") + "):")
        lines.append("  " + (g.explanation or "the scheduler recorded no reason"))
        if g.reasons:
            lines.append("  Details:")
            lines += [f"  - {r}" for r in g.reasons]
    conds = conditions_table(record.object("PodGang", g.name, g.namespace))
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
    evs = events_table(record, [("PodGang", g.name), *(("Pod", n) for n in g.pods)],
                       g.namespace)
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


def explain_pod(record: RunRecord, name: str, namespace: str | None = None) -> str:
    p = record.pod(name, namespace)
    if p is None:
        raise NotInRun("pod", name, list(dict.fromkeys(x.name for x in record.pods)))
    lines = [
        f"Pod {p.namespace}/{p.name}" + (f" (gang {p.gang}, clique {p.clique})" if p.gang else ""),
        f"  {'Phase:':<15}{'Deleted' if p.deleted is not None else p.phase}",
        f"  {'Requests:':<15}{_requests(p)}",
    ]
    marks = [("created", p.created), ("bound", p.bound), ("running", p.running),
             ("finished", p.finished), ("deleted", p.deleted)]
    lines.append(f"  {'Lifecycle:':<15}" + (", ".join(f"{k} at {fmt_duration(t)}" for k, t in marks
                                              if t is not None) or "-"))
    lines.append("")
    g = record.gang(p.gang, p.namespace) if p.gang else None
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
        if g is not None and g.scheduled is not None:
            lines.append(f"  bound with its gang {g.name} (all {len(g.pods)} pods together"
                         + (f", in {g.domain}" if g.domain else "") + ")")
    else:
        lines.append("Why it is not scheduled:")
        lines.append("  " + (p.message or "no reason recorded for the pod"))
        if g is not None and g.explanation and g.explanation != p.message:
            lines.append(f"  its gang {g.name}: {g.explanation}")
    conds = conditions_table(record.object("Pod", p.name, p.namespace))
    if conds:
        lines += ["", "Conditions:"] + [f"  {c}" for c in conds]
    evs = events_table(record, [("Pod", p.name)], p.namespace)
    if evs:
        lines += ["", "Events:"] + [f"  {e}" for e in evs]
    if p.gang:
        # The gang's name alone is refused where it repeats across namespaces: say which.
        repeated = len({x.namespace for x in record.gangs if x.name == p.gang}) > 1
        where = f" -n {p.namespace}" if repeated else ""
        lines += ["", f"See the whole gang: phalanx describe podgang {p.gang}{where}"]
    return "\n".join(lines)
