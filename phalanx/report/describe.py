"""`phalanx describe KIND NAME`: one object of a saved run, as `kubectl describe` shows it.

Every kind gets kubectl's header (Name, Namespace, Labels, Annotations, Created), its
Conditions, the objects related to it (owner, children, pods, node) and its Events, none
left out. PodGangs and pods add why they are where they are, or why they wait
(phalanx/report/explain.py); nodes what runs on them; other kinds their spec and status.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import registry
from phalanx.api.base import Resource
from phalanx.sim.record import RunRecord

from .explain import (
    Ambiguous,
    NotInRun,
    aligned,
    conditions_table,
    events_table,
    explain_pod,
    explain_podgang,
)
from .format import fmt_bytes, fmt_cores, fmt_duration, hostlist
from .kubeyaml import kubectl_yaml
from .queues import shares_section
from .summary import summarize

_LABEL_OWNERS = {  # kind -> the label its dependants carry with its name
    "PodCliqueSet": "app.kubernetes.io/part-of",
    "PodClique": "grove.io/podclique",
    "PodGang": "grove.io/podgang",
    "PodCliqueScalingGroup": "grove.io/podcliquescalinggroup",
}


def _stored(record: RunRecord, cls: type[Resource]) -> str:
    qualified = f"{cls.KIND}.{cls.API_VERSION.rpartition('/')[0]}"
    return qualified if qualified in record.objects else cls.KIND


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


def _namespace_of(o: dict[str, Any]) -> str:
    return str(_meta(o).get("namespace") or "default")


def _one_namespace(cls: type[Resource], name: str, namespaces: set[str]) -> None:
    """Refuse to pick one of several namespaces holding `name` (the caller names none)."""
    if len(namespaces) > 1:
        raise Ambiguous(f"{cls.KIND.lower()} {name!r} is in {len(namespaces)} namespaces "
                        f"({', '.join(sorted(namespaces))}): say which with --namespace")


def _lookup(record: RunRecord, kind: str, name: str,
            namespace: str | None = None) -> tuple[type[Resource], dict[str, Any]]:
    cls = registry.resolve(kind)
    items = record.objects.get(_stored(record, cls), [])
    if namespace is not None and cls.NAMESPACED:
        items = [o for o in items if _namespace_of(o) == namespace]
    found = [o for o in items if _meta(o).get("name") == name]
    if not found and cls.KIND == "Pod":  # by hostname `<podclique>-<index>` (generated names)
        found = [o for o in items if (o.get("spec") or {}).get("hostname") == name]
    if found:
        if cls.NAMESPACED:
            _one_namespace(cls, name, {_namespace_of(o) for o in found})
        return cls, found[0]
    # Not stored (deleted): its record stays.
    if cls.KIND in ("PodGang", "Pod") and namespace is None:
        recorded = record.gangs if cls.KIND == "PodGang" else record.pods
        _one_namespace(cls, name, {r.namespace for r in recorded if r.name == name})
    gang = record.gang(name, namespace) if cls.KIND == "PodGang" else None
    if gang is not None:
        return cls, {"metadata": {"name": name, "namespace": gang.namespace}}
    if cls.KIND == "Pod" and (pod := record.pod(name, namespace)) is not None:
        return cls, {"metadata": {"name": pod.name, "namespace": pod.namespace}}
    known = [str(_meta(o).get("name")) for o in items]
    if cls.KIND == "PodGang":
        known += [g.name for g in record.gangs if g.name not in known]
    elif cls.KIND == "Pod":
        known += [p.name for p in record.pods if p.name not in known]
    raise NotInRun(cls.KIND.lower(), name, known)


def _block(title: str, mapping: dict[str, Any] | None) -> list[str]:
    if not mapping:
        return [f"{title:<15}<none>"]
    lines = []
    for i, (k, v) in enumerate(sorted(mapping.items())):
        sep = "=" if title == "Labels:" else ": "
        lines.append(f"{title if i == 0 else '':<15}{k}{sep}{v}")
    return lines


def _header(record: RunRecord, cls: type[Resource], o: dict[str, Any]) -> list[str]:
    m = _meta(o)
    lines = [f"{'Name:':<15}{m.get('name', '')}"]
    if cls.NAMESPACED:
        lines.append(f"{'Namespace:':<15}{m.get('namespace', 'default')}")
    lines.append(f"{'Kind:':<15}{cls.KIND} ({cls.API_VERSION})")
    lines += _block("Labels:", m.get("labels"))
    lines += _block("Annotations:", m.get("annotations"))
    owners = m.get("ownerReferences") or []
    if owners:
        lines.append(f"{'Controlled By:':<15}" + ", ".join(
            f"{r.get('kind')}/{r.get('name')}" for r in owners))
    if m.get("deletionTimestamp"):
        lines.append(f"{'Deleting:':<15}since {m['deletionTimestamp']}")
    return lines


def _dependants(record: RunRecord, kind: str, name: str, o: dict[str, Any]) -> list[str]:
    """Related objects: by owner reference and by Grove's labels, as "Kind  names"."""
    found: dict[str, list[str]] = {}
    label = _LABEL_OWNERS.get(kind)
    # Owner references and Grove's labels name objects of the owner's namespace.
    own_ns = _namespace_of(o) if _meta(o).get("namespace") else None
    for stored, items in record.objects.items():
        for x in items:
            m = _meta(x)
            if own_ns is not None and m.get("namespace") and _namespace_of(x) != own_ns:
                continue
            owned = any(r.get("kind") == kind and r.get("name") == name
                        for r in m.get("ownerReferences") or ())
            labelled = label is not None and (m.get("labels") or {}).get(label) == name
            if (owned or labelled) and not (stored == kind and m.get("name") == name):
                found.setdefault(stored.partition(".")[0], []).append(str(m.get("name")))
    meta = _meta(o)
    for ref in meta.get("ownerReferences") or ():
        found.setdefault(f"{ref.get('kind')} (owner)", []).append(str(ref.get("name")))
    for key, target in (("grove.io/podgang", "PodGang"), ("grove.io/podclique", "PodClique")):
        value = (meta.get("labels") or {}).get(key)
        if value and kind != target and value not in found.get(f"{target} (owner)", []):
            found.setdefault(target, []).append(value)
    node = (o.get("spec") or {}).get("nodeName")
    if node:
        found.setdefault("Node", []).append(node)
    rows = [[k, f"{len(v)}: {_names(v)}" if len(v) > 1 else v[0]]
            for k, v in sorted(found.items())]
    return aligned(["Kind", "Name"], rows)[2:] if rows else []


def _names(names: list[str]) -> str:
    text = hostlist(names)
    return text if len(text) < 160 else ", ".join(sorted(names)[:6]) + ", ..."


def _node_section(record: RunRecord, name: str) -> list[str]:
    info = record.node(name)
    if info is None:
        return []
    lines = ["Allocatable:", f"  gpu: {info.gpu}", f"  cpu: {fmt_cores(info.cpu)}",
             f"  memory: {fmt_bytes(info.memory)}"]
    if info.taints:
        lines.append("Taints:         " + ", ".join(info.taints))
    lines.append(f"Ready:          {info.ready}")
    domains = [f"{t.domain}={record.topology_domain_of(name, t.domain)}"
               for t in record.topology if record.topology_domain_of(name, t.domain)]
    if domains:
        lines.append("Topology:       " + ", ".join(domains))
    pods = [p for p in record.pods if p.node == name and p.deleted is None
            and p.phase not in ("Succeeded", "Failed")]
    lines.append(f"Pods:           {len(pods)} running or starting "
                 f"({sum(p.gpu for p in pods)}/{info.gpu} GPUs)")
    rows = [[p.namespace, p.name, p.gang or "-", str(p.gpu), fmt_cores(p.cpu)]
            for p in sorted(pods, key=lambda p: p.name)]
    if rows:
        lines += [f"  {r}" for r in aligned(["Namespace", "Name", "Gang", "GPU", "CPU"], rows)]
    return lines


def _summary_section(record: RunRecord, kind: str, name: str, namespace: str) -> list[str]:
    if kind != "PodCliqueSet":
        return []
    summary = summarize(record, event_limit=0)
    row = next((r for r in summary.podcliquesets
                if r.name == name and r.namespace == namespace), None)
    if row is None:
        return []
    lines = [f"Status:         {row.status}",
             f"Replicas:       {row.replicas}",
             f"Gangs:          {row.gangs_scheduled}/{row.gangs_total} scheduled",
             f"Pods:           {row.pods_running}/{row.pods_total} running"]
    gangs = [[g.name, g.phase, f"{g.pods_bound}/{g.pods_total}", fmt_duration(g.wait)]
             for g in summary.gangs if g.podcliqueset == name and g.namespace == namespace]
    if gangs:
        lines += ["PodGangs:"] + [f"  {r}" for r in aligned(
            ["Name", "Phase", "Pods", "Scheduled in"], gangs)]
    return lines


def _spec_status(o: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for part in ("spec", "status"):
        if o.get(part):
            body = kubectl_yaml(o[part]).rstrip("\n").splitlines()
            lines += [f"{part.capitalize()}:"] + [f"  {line}" for line in body]
    return lines


def describe(record: RunRecord, kind: str, name: str, namespace: str | None = None) -> str:
    """kubectl describe's view of one object (NotInRun, LookupError when unknown; Ambiguous
    when the name is in several namespaces and `namespace` does not say which)."""
    cls, o = _lookup(record, kind, name, namespace)
    name = str(_meta(o).get("name") or name)  # a pod found by its hostname
    ns = _namespace_of(o) if cls.NAMESPACED else None
    k = cls.KIND
    lines = _header(record, cls, o)
    related = _related(record, k, name, o)
    if k == "PodGang" or (k == "Pod" and record.pod(name, ns) is not None):
        text = explain_podgang(record, name, ns) if k == "PodGang" \
            else explain_pod(record, name, ns)
        body = text.splitlines()[1:]
        head = body.index("") if "" in body else len(body)
        body = [line.removeprefix("  ") for line in body[:head]] + body[head:]
        events = body.index("Events:") if "Events:" in body else len(body)
        if events == len(body):
            body += ["", "Events:", "  <none>"]
        before = body[:events]
        while before and before[-1] == "":
            before.pop()
        return "\n".join(lines + [""] + before + related + [""] + body[events:])
    if k == "Node":
        lines += _node_section(record, name)
    elif k == "PodCliqueSet":
        lines += _summary_section(record, k, name, ns or "default")
    elif k == "Queue":
        lines += _spec_status(o) + shares_section(o)
    else:
        shown = dict(o)
        if isinstance(shown.get("status"), dict) and "conditions" in shown["status"]:
            shown["status"] = {key: v for key, v in shown["status"].items()
                               if key != "conditions"}  # the table below says them
        lines += _spec_status(shown)
    conds = conditions_table(o)
    if conds:
        lines += ["Conditions:"] + [f"  {c}" for c in conds]
    evs = events_table(record, [(k, name)], ns)
    lines += related + ["", "Events:"] + ([f"  {e}" for e in evs] if evs else ["  <none>"])
    return "\n".join(lines)


def _related(record: RunRecord, kind: str, name: str, o: dict[str, Any]) -> list[str]:
    rel = _dependants(record, kind, name, o)
    return (["", "Related:"] + [f"  {r}" for r in rel]) if rel else []
