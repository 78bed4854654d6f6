"""The outcome of a run as rows: one source for the terminal tables, JSON/YAML and HTML.

Everything here is derived from a `RunRecord` alone, so a saved run prints exactly as the
live one did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from phalanx.sim.record import EventRecord, GangRecord, PodRecord, RunRecord

from .format import fmt_duration, hostlist, percentile

# Normal events worth a user's attention in the run summary; every Warning is shown.
NOTABLE_NORMAL_REASONS = frozenset(
    {
        "Preempted",
        "GangPreempted",
        "Evicted",
        "Killing",
        "NodeNotReady",
        "ScaledUp",
        "ScaledDown",
        "GangScheduled",
        "GangTerminated",
        "SuccessfulDelete",
        "Completed",
    }
)


@dataclass(slots=True)
class PodCliqueSetRow:
    name: str
    namespace: str
    scheduler: str
    replicas: int
    gangs_scheduled: int
    gangs_total: int
    pods_running: int
    pods_total: int
    status: str
    conditions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class GangRow:
    name: str
    namespace: str
    podcliqueset: str
    phase: str
    pods_bound: int
    pods_total: int
    placement: str
    domain: str
    wait: float | None
    priority: int
    priority_class: str
    preemptions: int
    updates: str = ""  # its PodCliqueSet replica's rolling updates: "1m0s-1m10s"


@dataclass(slots=True)
class PendingRow:
    name: str
    namespace: str
    waiting_for: float
    explanation: str  # one reason, as kube-scheduler gives one
    details: list[str] = field(default_factory=list)  # the other findings (describe)


@dataclass(slots=True)
class EventRow:
    t: float
    type: str
    reason: str
    object: str
    message: str
    count: int


@dataclass(slots=True)
class Totals:
    gangs: int = 0
    gangs_scheduled: int = 0
    gangs_pending: int = 0
    pods: int = 0
    pods_running: int = 0
    preemptions: int = 0
    wait_p50: float | None = None
    wait_p95: float | None = None
    wait_max: float | None = None
    peak_gpu_used: float = 0
    gpu_total: int = 0
    mean_gpu_utilisation: float | None = None  # 0..1, time-weighted over the run


@dataclass(slots=True)
class Summary:
    totals: Totals
    podcliquesets: list[PodCliqueSetRow]
    gangs: list[GangRow]
    pending: list[PendingRow]
    events: list[EventRow]
    events_hidden: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def spans_namespaces(self) -> bool:
        """More than one namespace: names alone no longer tell objects apart."""
        return len({r.namespace for r in self.podcliquesets}
                   | {g.namespace for g in self.gangs}) > 1

    def display_names(self) -> Callable[[str, str], str]:
        """(namespace, name) -> `namespace/name` when the run spans namespaces, else the name
        (the spread is looked at once, not for every row)."""
        if self.spans_namespaces:
            return lambda namespace, name: f"{namespace}/{name}"
        return lambda namespace, name: name


def gang_is_live(g: GangRecord) -> bool:
    return g.deleted is None


def gang_is_placed(g: GangRecord) -> bool:
    """Bound now (or ran to completion); a preempted gang waiting again is not."""
    if g.deleted is not None:
        return g.scheduled is not None
    return g.scheduled is not None and g.phase in ("Starting", "Running", "Succeeded",
                                                   "Degraded")


def gang_is_pending(g: GangRecord) -> bool:
    return g.deleted is None and not gang_is_placed(g)


def pending_since(g: GangRecord) -> float:
    """When the gang's current wait began: its creation, or the last time it lost its
    placement (preempted, its node went down)."""
    since: float | None = g.created or 0.0
    for tr in g.transitions():
        if tr.state in ("Scheduled", "Running", "Degraded", "Finished"):
            since = None
        elif since is None:
            since = tr.t
    return since if since is not None else (g.created or 0.0)


def gang_wait(g: GangRecord) -> float | None:
    """Time to schedule of a gang that is placed (or was, until it finished or was deleted);
    None for a gang waiting now, whatever an earlier placement took."""
    return None if gang_is_pending(g) else g.wait_seconds


PodIndex = dict[tuple[str, str], PodRecord]  # (namespace, name) -> pod


def pod_index(record: RunRecord) -> PodIndex:
    """The run's pods by namespace and name (names repeat across namespaces)."""
    return {(p.namespace, p.name): p for p in record.pods}


def live_pods(g: GangRecord, pods: PodIndex) -> list[PodRecord]:
    """The gang's pods that exist now (scaled-in and replaced ones left out); all of them
    for a deleted gang."""
    found = [p for n in g.pods if (p := pods.get((g.namespace, n))) is not None]
    return found if g.deleted is not None else [p for p in found if p.deleted is None]


# Conditions whose healthy state is False (the rest are healthy when True).
_HEALTHY = {"TopologyLevelsUnavailable": "False", "MinAvailableBreached": "False"}


def _pcs_rows(record: RunRecord, pod_by_key: PodIndex) -> list[PodCliqueSetRow]:
    rows: list[PodCliqueSetRow] = []
    gangs_of: dict[tuple[str, str], list[GangRecord]] = {}
    for g in record.gangs:
        if gang_is_live(g):
            gangs_of.setdefault((g.namespace, g.podcliqueset), []).append(g)
    for obj in record.objects.get("PodCliqueSet", []):
        meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
        name, ns = meta.get("name", ""), meta.get("namespace", "default")
        gangs = gangs_of.get((ns, name), [])
        pods = [p for g in gangs for p in live_pods(g, pod_by_key)]
        running = sum(1 for p in pods if p.phase == "Running")
        scheduled = sum(1 for g in gangs if gang_is_placed(g))
        conditions = [
            f"{c.get('type')}={c.get('status')} ({c.get('reason', '')})"
            # What the scheduler ignores is the point of the condition: say it.
            + (f": {c.get('message')}" if c.get("type") == "SchedulerCompatible"
               and c.get("status") == "False" and c.get("message") else "")
            for c in status.get("conditions", [])
            if c.get("status") != _HEALTHY.get(c.get("type", ""), "True")
            or c.get("type") == "SchedulerCompatible"
        ]
        if meta.get("deletionTimestamp"):
            state = "Terminating"
        elif not gangs and not int(spec.get("replicas", 0)):
            state = "Idle"  # scaled to zero replicas
        elif gangs and scheduled == len(gangs) and running == len(pods) and pods:
            state = "Running"
        elif pods and all(p.phase == "Succeeded" for p in pods):
            state = "Completed"
        elif scheduled:
            state = "Progressing"
        else:
            state = "Pending"
        rows.append(
            PodCliqueSetRow(
                name=name,
                namespace=ns,
                scheduler=next((g.scheduler for g in gangs if g.scheduler), ""),
                replicas=int(spec.get("replicas", 0)),  # 0 is left out of stored objects
                gangs_scheduled=scheduled,
                gangs_total=len(gangs),
                pods_running=running,
                pods_total=len(pods),
                status=state,
                conditions=conditions,
            )
        )
    return rows


def _gang_row(g: GangRecord, pod_by_key: PodIndex) -> GangRow:
    pods = live_pods(g, pod_by_key)
    bound = sum(1 for p in pods if p.node and p.deleted is None and p.phase != "Failed")
    return GangRow(
        name=g.name,
        namespace=g.namespace,
        podcliqueset=g.podcliqueset,
        phase="Deleted" if g.deleted is not None else g.phase,
        pods_bound=bound,
        pods_total=len(pods),
        placement=hostlist(n for n in g.nodes if n),
        domain=g.domain,
        wait=gang_wait(g),
        priority=g.priority,
        priority_class=g.priority_class,
        preemptions=len(g.preempted),
        updates=update_text(g),
    )


def update_text(g: GangRecord) -> str:
    """The rolling updates of the gang's replica, start-end ("...": still updating)."""
    return ", ".join(
        f"{fmt_duration(u.start)}-{fmt_duration(u.end) if u.end is not None else '...'}"
        for u in g.updates)


def _event_rows(record: RunRecord, limit: int) -> tuple[list[EventRow], int]:
    notable: list[EventRecord] = [
        e for e in record.events if e.type != "Normal" or e.reason in NOTABLE_NORMAL_REASONS
    ]
    # Fold repeats: the same reason and message, on one object (kubectl counts them) or on
    # several (a gang's pods all saying the same thing): one line naming the first object.
    folded: dict[tuple[str, str, str], tuple[EventRow, set[str]]] = {}
    for e in notable:
        key = (e.type, e.reason, e.message)
        obj = f"{e.kind}/{e.name}"
        entry = folded.get(key)
        if entry is None:
            folded[key] = (EventRow(e.t, e.type, e.reason, obj, e.message, e.count), {obj})
        else:
            row, objects = entry
            row.count += e.count
            row.t = max(row.t, e.t)
            objects.add(obj)
    rows = []
    for row, objects in folded.values():
        if len(objects) > 1:
            row.object = f"{min(objects)} (+{len(objects) - 1} more)"
        rows.append(row)
    rows.sort(key=lambda r: (r.t, r.object, r.reason))
    if not limit:  # 0 means everything (machine output)
        return rows, 0
    return rows[-limit:], max(0, len(rows) - limit)


def _totals(record: RunRecord, gangs: list[GangRecord]) -> Totals:
    waits = [w for g in gangs if (w := gang_wait(g)) is not None]
    t = Totals(
        gangs=len(gangs),
        gangs_scheduled=sum(1 for g in gangs if gang_is_placed(g)),
        gangs_pending=sum(1 for g in gangs if gang_is_pending(g)),
        pods=sum(1 for p in record.pods if p.deleted is None),
        pods_running=sum(1 for p in record.pods if p.phase == "Running" and p.deleted is None),
        preemptions=sum(len(g.preempted) for g in record.gangs),
        wait_p50=percentile(waits, 50),
        wait_p95=percentile(waits, 95),
        wait_max=max(waits) if waits else None,
        peak_gpu_used=max((s.gpu_used for s in record.samples), default=0),
        gpu_total=record.gpu_total,
    )
    t.mean_gpu_utilisation = mean_utilisation(record)
    return t


def mean_utilisation(record: RunRecord) -> float | None:
    """Time-weighted mean of GPUs in use / GPUs in the cluster over the whole run."""
    end = record.meta.duration
    if not record.samples or record.gpu_total == 0 or end <= 0:
        return None
    area = 0.0
    for cur, nxt in zip(record.samples, record.samples[1:] + [None]):
        stop = end if nxt is None else min(nxt.t, end)
        if stop > cur.t:
            area += cur.gpu_used * (stop - cur.t)
    return area / (end * record.gpu_total)


def summarize(record: RunRecord, *, event_limit: int = 20) -> Summary:
    live = [g for g in record.gangs if gang_is_live(g)]
    end = record.meta.duration
    pending = [
        PendingRow(
            name=g.name,
            namespace=g.namespace,
            # A preempted gang has waited since its eviction, not since it was created.
            waiting_for=end - pending_since(g),
            explanation=g.explanation or "no explanation recorded",
            details=list(g.reasons),
        )
        for g in live
        if gang_is_pending(g)
    ]
    events, hidden = _event_rows(record, event_limit)
    pod_by_key = pod_index(record)
    return Summary(
        totals=_totals(record, record.gangs),
        podcliquesets=_pcs_rows(record, pod_by_key),
        gangs=[_gang_row(g, pod_by_key) for g in record.gangs],
        pending=pending,
        events=events,
        events_hidden=hidden,
    )


def wait_text(t: Totals) -> str:
    """The scheduled gangs' time to schedule, said the same way everywhere."""
    return (f"wait p50 {fmt_duration(t.wait_p50)}, p95 {fmt_duration(t.wait_p95)}, "
            f"max {fmt_duration(t.wait_max)}")


def headline(record: RunRecord, summary: Summary) -> str:
    """One line a user reads first: did everything get scheduled, and how fast."""
    t = summary.totals
    parts = [f"{t.gangs_scheduled}/{t.gangs} gangs scheduled"]
    if t.gangs_pending:
        parts.append(f"{t.gangs_pending} pending")
    if t.wait_p50 is not None:
        parts.append(wait_text(t))
    if t.preemptions:
        parts.append(f"{t.preemptions} gang preemption{'s' if t.preemptions != 1 else ''}")
    if t.gpu_total:
        parts.append(f"peak {t.peak_gpu_used:g}/{t.gpu_total} GPUs")
    how = "settled" if record.meta.settled else "stopped"
    parts.append(f"{how} at t={fmt_duration(record.meta.duration)}")
    return "; ".join(parts)
