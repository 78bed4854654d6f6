"""What the live cluster says about a gang, gathered at the end of a run for `explain`.

Pending gangs get one explanation assembled from, most specific first: the scheduler's
diagnosis of their pods (per-filter node counts), the pods' PodScheduled condition, the
PodGang's own conditions (e.g. the gang status controller's "3/8 members created"), and
scheduling gates still on the pods.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.podgang import PodGang
from phalanx.cluster.client import Client, NotFound

from .feasibility import GangNeed
from .record import RunRecord, TopologyLevel
from .recorder import RunRecorder


async def gang_need(client: Client, namespace: str, name: str,
                    levels: list[TopologyLevel]) -> GangNeed | None:
    """The pods a gang must place together (minReplicas of each group) and its required pack."""
    try:
        pg = await client.get(PodGang, name, namespace)
    except NotFound:
        return None
    pods = {p.name: p for p in (await client.list(
        Pod, namespace, label_selector={labels.LABEL_PODGANG: name})).items}
    chosen: list[Pod] = []
    for group in pg.spec.pod_groups:
        members = [pods[r.name] for r in group.pod_references if r.name in pods]
        if len(members) < group.min_replicas:
            return None  # not all pods exist yet; check again later
        chosen += members[: group.min_replicas]
    tc = pg.spec.topology_constraint
    key = tc.pack_constraint.required if tc and tc.pack_constraint else None
    domain = next((lv.domain for lv in levels if lv.key == key), None) if key else None
    return GangNeed(name=name, pods=chosen, pack_key=key, pack_domain=domain)


def _dedupe(parts: list[str]) -> list[str]:
    """Drop empty parts and parts already said (verbatim or inside an earlier part)."""
    kept: list[str] = []
    for p in parts:
        p = p.strip().rstrip(".")
        if p and not any(p in k for k in kept):
            kept.append(p)
    return kept


async def pending_explanations(client: Client, scheduler: Any,
                               recorder: RunRecorder) -> dict[str, Any]:
    """{"gangs": {name: text}, "pods": {name: text}} for everything still unscheduled."""
    gangs: dict[str, str] = {}
    pods_out: dict[str, str] = {}
    for key, g in recorder.gangs.items():
        rec = g.rec
        if rec.deleted is not None or g.state in ("Scheduled", "Running", "Finished"):
            continue
        ns = rec.namespace
        pg: PodGang | None
        try:
            pg = await client.get(PodGang, rec.name, ns)
        except NotFound:
            pg = None
        live = (await client.list(Pod, ns,
                                  label_selector={labels.LABEL_PODGANG: rec.name})).items
        parts: list[str] = []
        if pg is None:
            parts.append("the PodGang object does not exist (the operator has not created it)")
        for cond in pg.status.conditions if pg is not None else ():
            # Ready=False only restates that pods are not running yet.
            if cond.status != "True" and cond.message and cond.type != "Ready":
                parts.append(f"{cond.type}: {cond.message}")
        expected = (len(pg.pod_names()) if pg is not None else 0) or rec.min_member
        if len(live) < expected:
            parts.append(f"{len(live)}/{expected} pods exist")
        gated = [p for p in live if p.is_gated]
        if gated:
            gates = sorted({gate.name for p in gated for gate in p.spec.scheduling_gates})
            parts.append(f"{len(gated)} pod(s) still gated by {', '.join(gates)}")
        for p in sorted(live, key=lambda p: p.name):
            if p.spec.node_name or p.is_terminal:
                continue
            text = ""
            diag = scheduler.diagnosis(p.key) if scheduler is not None else None
            if diag is not None:
                text = diag.message()
            if not text:
                cond = p.get_condition("PodScheduled")
                if cond is not None and cond.status == "False":
                    text = cond.message
            if text:
                pods_out[p.name] = text
                parts.append(text)
        gangs[rec.name] = "; ".join(_dedupe(parts)) or (
            "the scheduler has not reported a reason yet")
    return {"gangs": gangs, "pods": pods_out}


def apply_explanations(record: RunRecord, found: dict[str, Any]) -> None:
    for name, text in found.get("gangs", {}).items():
        g = record.gang(name)
        if g is not None:
            g.explanation = text
    for name, text in found.get("pods", {}).items():
        p = record.pod(name)
        if p is not None:
            p.message = text
