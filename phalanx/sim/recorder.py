"""Watches a running cluster and writes down what happened: the `RunRecord`.

It follows Pods, PodGangs, Nodes and Events through `Client.watch` (so it works on the
embedded cluster and a real one alike) and keeps, per gang, a small state machine derived
from its pods: Created -> Initialized -> Queued (gates lifted) -> Scheduled (minMember
bound) -> Running (minMember ready). A gang that falls back from Scheduled is marked
disrupted; at the end that becomes "Preempted" when the scheduler said so (an Event or a
DisruptionTarget condition), else "Queued" (e.g. its node went down).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from phalanx.api import labels
from phalanx.api.base import Resource
from phalanx.api.core import Event, Node, Pod
from phalanx.api.grove import PodCliqueSet
from phalanx.api.gangphase import PodState, podgang_phase
from phalanx.api.podgang import PodGang
from phalanx.cluster.client import Client, Gone

from .record import (
    EventRecord,
    GangRecord,
    GangTransition,
    NodeInfo,
    PodRecord,
    RunRecord,
    TopologyLevel,
    UpdateWindow,
)
from .usage import Usage, node_info

GPU = "nvidia.com/gpu"
PODS_PER_NOTE = 500
_DISRUPTED = "Disrupted"  # placeholder, classified in finish()
_MILESTONES = {"Created": "created", "Initialized": "initialized", "Queued": "gates_lifted",
               "Scheduled": "scheduled", "Running": "running", "Finished": "finished",
               "Deleted": "deleted"}
_HOST_DOMAINS = ("host", "hostname", "node")
# The phase of a gang whose PodGang was never seen (its groups unknown), by lifecycle state;
# otherwise it is api/gangphase.py's, the operator's rule for PodGang status.phase.
_PHASE_OF_STATE = {"Created": "Pending", "Initialized": "Pending", "Queued": "Pending",
                   _DISRUPTED: "Pending", "Scheduled": "Starting", "Running": "Running",
                   "Degraded": "Degraded",
                   "Finished": "Succeeded", "Deleted": "Deleted"}


@dataclass(slots=True)
class _Gang:
    rec: GangRecord
    groups: dict[str, int] | None = None  # PodGang group (PodClique) name -> minReplicas
    initialized: bool = False
    state: str = ""
    disrupted: bool = False
    uid: str = ""  # of the PodGang's current incarnation


class RunRecorder:
    """Start before the workload is applied; `finish()` returns the record."""

    def __init__(self, client: Client, topology: list[TopologyLevel]) -> None:
        self.client = client
        self.topology = topology
        self.pods: dict[str, PodRecord] = {}  # by namespace/name: the current incarnation
        self._uids: dict[str, str] = {}  # namespace/name -> uid of that incarnation
        # Earlier pods of the same name (a replaced pod keeps its name, not its uid).
        self.retired: list[PodRecord] = []
        self.gangs: dict[str, _Gang] = {}  # by namespace/name
        # (namespace, PodCliqueSet) -> its gangs' keys: a PodCliqueSet event visits those only.
        self._gangs_of_pcs: dict[tuple[str, str], dict[str, None]] = {}
        self.nodes: dict[str, NodeInfo] = {}
        self.events: dict[str, EventRecord] = {}  # by Event uid (repeats fold into count)
        self.usage = Usage()
        self.last_change = 0.0  # last time a pod, gang or node changed (for "settled")
        self._preempted_pods: dict[str, float] = {}  # pod key -> when marked a preemption victim
        self._gated: dict[str, bool] = {}  # pod key -> still has scheduling gates
        self._ready: dict[str, bool] = {}  # pod key -> condition Ready=True now
        self._tasks: list[asyncio.Task[None]] = []
        self._t0 = 0.0
        self.listeners: list[Callable[[str, GangRecord], None]] = []
        # Called every PODS_PER_NOTE pod changes: progress while a burst of pods is created
        # within one virtual instant (the run's clock does not move meanwhile).
        self.on_pods: Callable[[], None] | None = None
        self._pod_changes = 0

    def progress_note(self) -> str:
        """"1,200 pods: 800 running, 400 pending" for a progress line."""
        n = len(self.pods)
        if not n:
            return ""
        counts = self.usage.counts
        return f"{n:,} pods: {counts['running']:,} running, {counts['pending']:,} pending"

    # ------------------------------------------------------------------ lifecycle

    def now(self) -> float:
        return self.client.clock.monotonic() - self._t0

    async def start(self) -> None:
        self._t0 = self.client.clock.monotonic()
        for kind, handler in ((Node, self._on_node), (PodGang, self._on_gang),
                              (Pod, self._on_pod), (Event, self._on_event),
                              (PodCliqueSet, self._on_pcs)):
            self._tasks.append(asyncio.create_task(self._follow(kind, handler),
                                                   name=f"recorder-{kind.KIND}"))
        await asyncio.sleep(0)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _follow(self, kind: type[Resource], handler: Callable[[str, Any], None]) -> None:
        rv = "0"  # replay what exists, then follow
        while True:
            try:
                async for ev in self.client.watch(kind, resource_version=rv):
                    rv = ev.object.metadata.resource_version or rv
                    if ev.type != "BOOKMARK":
                        handler(ev.type, ev.object)
            except Gone:
                listed = await self.client.list(kind)
                for obj in listed.items:
                    handler("MODIFIED", obj)
                rv = listed.resource_version
            await asyncio.sleep(0)  # the stream ended: resume from the last version seen

    # ------------------------------------------------------------------ handlers

    def _on_node(self, type_: str, node: Node) -> None:
        if type_ == "DELETED":
            self.nodes.pop(node.name, None)
        else:
            self.nodes[node.name] = node_info(node)
        self.last_change = self.now()

    def _gang(self, namespace: str, name: str) -> _Gang:
        key = f"{namespace}/{name}"
        g = self.gangs.get(key)
        if g is None:
            g = self.gangs[key] = _Gang(GangRecord(name=name, namespace=namespace))
        return g

    def _on_pcs(self, type_: str, pcs: PodCliqueSet) -> None:
        """RollingRecreate progress: the replica in `currentlyUpdating` gets an update
        window on its base gang (`<pcs>-<i>`), closed when it is done or another replica
        is selected."""
        t = self.now()
        up = pcs.status.update_progress
        cur = (up.currently_updating or [None])[0] if up is not None else None
        active = None if cur is None or cur.update_ended_at is not None or type_ == "DELETED" \
            else f"{pcs.namespace or 'default'}/{pcs.name}-{cur.replica_index}"
        ns = pcs.namespace or "default"
        prefix = f"{ns}/{pcs.name}-"
        for key in self._gangs_of_pcs.get((ns, pcs.name), ()):
            g = self.gangs[key]
            if not key.startswith(prefix) or g.rec.podcliqueset != pcs.name:
                continue
            windows = g.rec.updates
            if key == active:
                if not windows or windows[-1].end is not None:
                    windows.append(UpdateWindow(start=t))
            elif windows and windows[-1].end is None:
                windows[-1].end = t

    def _on_gang(self, type_: str, pg: PodGang) -> None:
        t = self.now()
        g = self._gang(pg.namespace or "default", pg.name)
        rec = g.rec
        if rec.created is None:
            rec.created = t
        uid = pg.metadata.uid or ""
        if type_ != "DELETED" and uid != g.uid:
            if rec.deleted is not None:
                # The same PodGang made again (Grove's gang termination recreates the replica
                # under its name): one gang, disrupted and back, not a deleted one.
                rec.deleted, g.initialized = None, False
            g.uid = uid
        pcs = pg.metadata.labels.get(labels.LABEL_PART_OF, rec.podcliqueset)
        if pcs != rec.podcliqueset:
            key = f"{rec.namespace}/{rec.name}"
            self._gangs_of_pcs.get((rec.namespace, rec.podcliqueset), {}).pop(key, None)
            self._gangs_of_pcs.setdefault((rec.namespace, pcs), {})[key] = None
            rec.podcliqueset = pcs
        rec.scheduler = rec.scheduler or pg.metadata.labels.get(labels.LABEL_SCHEDULER_NAME, "")
        rec.priority_class = pg.spec.priority_class_name or rec.priority_class
        rec.min_member = pg.min_member()
        g.groups = {grp.name: grp.min_replicas for grp in pg.spec.pod_groups}
        rec.pack_constraint = self._pack_constraint(pg)
        if pg.status.phase:
            rec.phase = pg.status.phase
        g.initialized = pg.is_initialized or g.initialized
        if type_ == "DELETED":
            rec.deleted = t
        self._update_gang(g, t)

    def _pack_constraint(self, pg: PodGang) -> str:
        tc = pg.spec.topology_constraint
        pack = tc.pack_constraint if tc else None
        if pack is None:
            return ""
        by_key = {lvl.key: lvl.domain for lvl in self.topology}
        if pack.required:
            return f"required {by_key.get(pack.required, pack.required)}"
        if pack.preferred:
            return f"preferred {by_key.get(pack.preferred, pack.preferred)}"
        return ""

    def _on_pod(self, type_: str, pod: Pod) -> None:
        t = self.now()
        key = pod.key
        rec = self.pods.get(key)
        uid = pod.metadata.uid or ""
        if rec is not None and self._uids.get(key, uid) != uid:
            if rec.deleted is None:
                rec.deleted = t
            self.retired.append(rec)
            self.usage.release(key)
            rec = None
        self._uids[key] = uid
        if rec is None:
            reqs = pod.resource_requests()
            rec = self.pods[key] = PodRecord(
                name=pod.name, namespace=pod.namespace or "default",
                hostname=pod.spec.hostname or "",
                gang=pod.metadata.labels.get(labels.LABEL_PODGANG, ""),
                clique=pod.metadata.labels.get(labels.LABEL_PODCLIQUE, ""),
                gpu=int(reqs.get(GPU, 0)), cpu=reqs.get("cpu", 0.0),
                memory=reqs.get("memory", 0.0), created=t,
            )
        if pod.spec.node_name and not rec.node:
            rec.node, rec.bound = pod.spec.node_name, t
        rec.phase = pod.status.phase
        self._ready[key] = pod.is_ready
        if rec.running is None and pod.status.phase == "Running" and pod.is_ready:
            rec.running = t
        if pod.is_terminal and rec.finished is None:
            rec.finished = t
        cond = pod.get_condition("PodScheduled")
        if cond is not None and cond.status == "False" and cond.message:
            rec.message = cond.message
        elif pod.status.message and pod.is_terminal:
            rec.message = pod.status.message
        disruption = pod.get_condition("DisruptionTarget")
        if disruption is not None and "preempt" in (disruption.reason or "").lower():
            self._preempted_pods.setdefault(key, t)
        if type_ == "DELETED":
            rec.deleted = t
        live = type_ != "DELETED" and not pod.is_terminal and not pod.is_deleting
        self.usage.pod(t, key, rec, live and bool(pod.spec.node_name))
        if rec.gang:
            g = self._gang(rec.namespace, rec.gang)
            if rec.name not in g.rec.pods:
                g.rec.pods.append(rec.name)
            if pod.spec.priority is not None:
                g.rec.priority = pod.spec.priority
            if pod.spec.scheduler_name:  # what users write, not the backend's name
                g.rec.scheduler = pod.spec.scheduler_name
            self._gated[key] = pod.is_gated
            self._update_gang(g, t)
        self.last_change = t
        self._pod_changes += 1
        if self.on_pods is not None and self._pod_changes % PODS_PER_NOTE == 0:
            self.on_pods()

    def _on_event(self, type_: str, ev: Event) -> None:
        if type_ == "DELETED" or not ev.metadata.uid:
            return
        obj = ev.involved_object
        existing = self.events.get(ev.metadata.uid)
        count = ev.occurrences
        if existing is not None:
            existing.count, existing.t, existing.message = count, self.now(), ev.message or ""
            return
        self.events[ev.metadata.uid] = EventRecord(
            t=self.now(), type=ev.type or "Normal", reason=ev.reason or "",
            kind=obj.kind or "", name=obj.name or "", namespace=obj.namespace or "",
            message=ev.message or "", count=count, source=ev.reporter,
        )

    # ------------------------------------------------------------------ derived state

    def _live_pods(self, g: _Gang) -> list[PodRecord]:
        out = []
        for name in g.rec.pods:
            p = self.pods.get(f"{g.rec.namespace}/{name}")
            if p is not None and p.deleted is None:
                out.append(p)
        return out

    def _derive(self, g: _Gang) -> str:
        if g.rec.deleted is not None:
            return "Deleted"
        live = self._live_pods(g)
        need = max(g.rec.min_member, 1)
        if len(live) >= need and all(p.phase == "Succeeded" for p in live):
            return "Finished"
        active = [p for p in live if p.phase not in ("Succeeded", "Failed")]
        if sum(1 for p in active if p.running is not None and p.phase == "Running") >= need:
            return "Running"
        bound = sum(1 for p in active if p.node)
        if bound >= need:
            return "Scheduled"
        if bound and g.state in ("Scheduled", "Running", "Degraded"):
            # Below minMember with pods still running (e.g. one failed): not waiting to be
            # scheduled; the operator decides whether to replace pods or end the gang.
            return "Degraded"
        if not g.initialized:
            return "Created"
        gated = [self._gated.get(f"{p.namespace}/{p.name}", True) for p in active]
        if active and not any(gated):
            return "Queued"
        return "Initialized"

    def _update_gang(self, g: _Gang, t: float) -> None:
        new = self._derive(g)
        if new == g.state:
            return
        rec, was_up = g.rec, g.state in ("Scheduled", "Running", "Degraded")
        g.state = new
        waiting = new in ("Created", "Initialized", "Queued")
        if was_up and waiting:
            g.disrupted = True
            self._transition(rec, t, _DISRUPTED)
            return
        if g.disrupted and waiting:
            return  # pods being recreated after a disruption: one stretch until rescheduled
        if new in ("Scheduled", "Running"):
            g.disrupted = False
        self._transition(rec, t, new)
        attr = _MILESTONES.get(new)
        if attr and getattr(rec, attr) is None:
            setattr(rec, attr, t)
        for listener in self.listeners:
            listener(new, rec)

    @staticmethod
    def _transition(rec: GangRecord, t: float, state: str) -> None:
        # Several changes at one instant (pods evicted together) are one transition.
        if rec.history and rec.history[-1].t == t:
            rec.history[-1] = GangTransition(t=t, state=state)
        else:
            rec.history.append(GangTransition(t=t, state=state))

    # ------------------------------------------------------------------ the record

    def _classify_disruptions(self, g: _Gang) -> None:
        if not any(tr.state == _DISRUPTED for tr in g.rec.history):
            return  # nothing to classify: no walk over every Event for this gang
        pod_keys = {f"{g.rec.namespace}/{n}" for n in g.rec.pods}
        preempt_events = [e.t for e in self.events.values()
                          if "preempt" in e.reason.lower()
                          and ((e.kind == "PodGang" and e.name == g.rec.name)
                               or (e.kind == "Pod" and f"{e.namespace or g.rec.namespace}/"
                                   f"{e.name}" in pod_keys))]
        victim_times = [t for k, t in self._preempted_pods.items() if k in pod_keys]
        for tr in g.rec.history:
            if tr.state != _DISRUPTED:
                continue
            evidence = [x for x in preempt_events + victim_times if abs(x - tr.t) <= 30.0]
            if evidence:
                tr.state = "Preempted"
                g.rec.preempted.append(tr.t)
            else:
                tr.state = "Queued"

    def _phase(self, g: _Gang) -> str:
        if g.rec.deleted is not None or g.state == "Deleted":
            return "Deleted"
        if not g.groups:
            return _PHASE_OF_STATE.get(g.state, g.rec.phase)
        live = self._live_pods(g)
        return podgang_phase([
            (want, [PodState(p.phase, bool(p.node), self._ready.get(f"{p.namespace}/{p.name}",
                                                                     False))
                    for p in live if p.clique == name])
            for name, want in g.groups.items()])

    def _domain(self, nodes: list[str]) -> str:
        """The narrowest topology domain that holds all these nodes, e.g. "rack=rack-3"."""
        if not nodes:
            return ""
        for level in reversed(self.topology):
            values = {self.nodes[n].labels.get(level.key, "") for n in nodes if n in self.nodes}
            if len(values) == 1 and "" not in values:
                if level.domain in _HOST_DOMAINS and len(set(nodes)) > 1:
                    continue
                return f"{level.domain}={values.pop()}"
        return ""

    def finish(self) -> RunRecord:
        """The record so far (call after `stop()` for a final one)."""
        for g in self.gangs.values():
            self._classify_disruptions(g)
            live = [p for p in self._live_pods(g) if p.node and p.phase != "Failed"]
            g.rec.nodes = sorted({p.node for p in live})
            g.rec.domain = self._domain(g.rec.nodes) if g.rec.scheduled is not None else ""
            g.rec.phase = self._phase(g)
        return RunRecord(
            topology=list(self.topology),
            nodes=sorted(self.nodes.values(), key=lambda n: n.name),
            gangs=sorted((g.rec for g in self.gangs.values()),
                         key=lambda r: (r.created if r.created is not None else 0.0, r.name)),
            pods=sorted([*self.retired, *self.pods.values()],
                        key=lambda p: (p.gang, p.name, p.created or 0.0)),
            samples=list(self.usage.samples),
            events=sorted(self.events.values(), key=lambda e: e.t),
        )
