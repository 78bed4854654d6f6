"""What the live cluster says about a gang, gathered at the end of a run for `explain`.

A pending gang gets one reason, as kube-scheduler gives one per pod, chosen in this order:
its PodGang is missing; its pods are not all created, or still gated (nothing else can
happen before); the scheduler's diagnosis of a member (per-filter node counts, "0/64 nodes
are available: 64 Insufficient nvidia.com/gpu. preemption: ..."), preferring one that counts
nodes; else a condition. Every other distinct finding (the PodGang's conditions, the other
members' diagnoses) is kept as a detail, for `phalanx describe`.
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
    # By the names the PodGang references (a list by label would scan every pod of the
    # namespace, for each gang of the run).
    pods: dict[str, Pod] = {}
    for group in pg.spec.pod_groups:
        for ref in group.pod_references:
            if ref.name in pods:
                continue
            try:
                pod = await client.get(Pod, ref.name, namespace)
            except NotFound:
                continue
            if pod.metadata.labels.get(labels.LABEL_PODGANG) == name:
                pods[ref.name] = pod
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
    """Drop empty parts and parts already said (verbatim, inside another part, or holding
    another part whole: the longer, more specific one is kept)."""
    kept: list[str] = []
    for p in parts:
        p = p.strip()
        bare = p.rstrip(".")
        if not bare or any(bare in k for k in kept):
            continue
        kept = [k for k in kept if k.rstrip(".") not in p]
        kept.append(p)
    return kept


def choose_reason(structural: list[str], diagnoses: list[str], conditions: list[str]) -> str:
    """The one reason to show (see the module docstring)."""
    if structural:
        return structural[0]
    counted = [d for d in diagnoses if d.startswith("0/")]
    if counted or diagnoses:
        return (counted or diagnoses)[0]
    return conditions[0] if conditions else "the scheduler has not reported a reason yet"


async def pending_explanations(client: Client, scheduler: Any,
                               recorder: RunRecorder) -> dict[str, Any]:
    """{"gangs": {(namespace, name): (reason, [details])}, "pods": {(namespace, name): text}}
    for everything still unscheduled (names repeat across namespaces)."""
    gangs: dict[tuple[str, str], tuple[str, list[str]]] = {}
    pods_out: dict[tuple[str, str], str] = {}
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
        structural: list[str] = []
        conditions: list[str] = []
        diagnoses: list[str] = []
        if pg is None:
            structural.append("the PodGang object does not exist (the operator has not "
                              "created it)")
        for cond in pg.status.conditions if pg is not None else ():
            # Ready=False only restates that pods are not running yet.
            if cond.status != "True" and cond.message and cond.type != "Ready":
                conditions.append(f"{cond.type}: {cond.message}")
        expected = (len(pg.pod_names()) if pg is not None else 0) or rec.min_member
        if len(live) < expected:
            structural.append(f"{len(live)}/{expected} pods exist")
        gated = [p for p in live if p.is_gated]
        if gated:
            gates = sorted({gate.name for p in gated for gate in p.spec.scheduling_gates})
            structural.append(f"{len(gated)} pod(s) still gated by {', '.join(gates)}")
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
                pods_out[(ns, p.name)] = text
                diagnoses.append(text)
        reason = choose_reason(structural, _dedupe(diagnoses), conditions)
        details = [d for d in _dedupe([*structural, *diagnoses, *conditions]) if d != reason]
        gangs[(ns, rec.name)] = (reason, details)
    return {"gangs": gangs, "pods": pods_out}


def apply_explanations(record: RunRecord, found: dict[str, Any]) -> None:
    for (ns, name), (reason, details) in found.get("gangs", {}).items():
        g = record.gang(name, ns)
        if g is not None:
            g.explanation, g.reasons = reason, list(details)
    for (ns, name), text in found.get("pods", {}).items():
        p = record.pod(name, ns)
        if p is not None:
            p.message = text
