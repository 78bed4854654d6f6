"""What a simulated run leaves behind: the saved run that reports, `get` and `describe` read.

A `RunRecord` is plain data (no live cluster objects): the nodes, every gang's lifecycle, every
pod's placement, a utilisation time series, the Events, the steps of the scenario and the
final state of every object. Times are virtual seconds since the run started, so two runs of
the same inputs give byte-identical records.

It is written atomically (temporary file + rename) so a crash or a Ctrl-C never leaves a
half-written file that a later `phalanx describe` would choke on.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

RECORD_VERSION = 1
DEFAULT_SAVE_PATH = Path(".phalanx") / "last-run.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeInfo(_Record):
    name: str
    pool: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    gpu: int = 0
    cpu: float = 0.0  # cores
    memory: float = 0.0  # bytes
    taints: list[str] = Field(default_factory=list)  # "key=value:Effect"
    ready: bool = True


class TopologyLevel(_Record):
    domain: str  # e.g. "rack"
    key: str  # the node label, e.g. "topology.kubernetes.io/rack"


# A gang's lifecycle states, in the order a healthy gang passes through them.
GANG_STATES = ("Created", "Initialized", "Queued", "Scheduled", "Running")
# States that end a stretch of the timeline without starting a new bar.
GANG_END_STATES = ("Finished", "Deleted")


class GangTransition(_Record):
    t: float
    state: str  # one of GANG_STATES, "Degraded", "Preempted", or one of GANG_END_STATES


class UpdateWindow(_Record):
    """A rolling update of the gang's PodCliqueSet replica: when the operator selected it and
    when it was done (None: still updating when the run ended)."""

    start: float
    end: float | None = None


class GangRecord(_Record):
    """One PodGang's life. Milestone times are the *first* time each was reached (None until
    then); `history` keeps every transition, so a gang preempted and rescheduled shows both."""

    name: str
    namespace: str = "default"
    podcliqueset: str = ""
    scheduler: str = ""
    priority_class: str = ""
    priority: int = 0
    min_member: int = 0
    pods: list[str] = Field(default_factory=list)
    created: float | None = None
    initialized: float | None = None
    gates_lifted: float | None = None
    scheduled: float | None = None
    running: float | None = None
    finished: float | None = None
    deleted: float | None = None
    preempted: list[float] = Field(default_factory=list)
    # RollingRecreate updates of this (base) gang's PodCliqueSet replica.
    updates: list[UpdateWindow] = Field(default_factory=list)
    history: list[GangTransition] = Field(default_factory=list)
    phase: str = "Pending"
    nodes: list[str] = Field(default_factory=list)
    domain: str = ""  # the tightest topology domain holding every pod, e.g. "rack=rack-3"
    pack_constraint: str = ""  # e.g. "required rack"
    explanation: str = ""  # why it waits, in one reason (pending gangs only)
    reasons: list[str] = Field(default_factory=list)  # the other findings, for `describe`

    def transitions(self) -> list[GangTransition]:
        """`history`, or (for hand-built records) the milestones in order."""
        if self.history:
            return sorted(self.history, key=lambda tr: tr.t)
        marks = [
            (self.created, "Created"),
            (self.initialized, "Initialized"),
            (self.gates_lifted, "Queued"),
            (self.scheduled, "Scheduled"),
            (self.running, "Running"),
            *((t, "Preempted") for t in self.preempted),
            (self.finished, "Finished"),
            (self.deleted, "Deleted"),
        ]
        return sorted(
            (GangTransition(t=t, state=s) for t, s in marks if t is not None),
            key=lambda tr: tr.t,
        )

    def segments(self, end: float) -> list[tuple[str, float, float]]:
        """(state, start, stop) stretches up to `end`, for timelines."""
        out: list[tuple[str, float, float]] = []
        trs = self.transitions()
        for cur, nxt in zip(trs, trs[1:] + [None]):
            if cur.state in GANG_END_STATES:
                continue
            stop = end if nxt is None else nxt.t
            if stop > cur.t:
                out.append((cur.state, cur.t, stop))
        return out

    @property
    def wait_seconds(self) -> float | None:
        """Time to schedule: creation until the whole gang was bound."""
        if self.created is None or self.scheduled is None:
            return None
        return self.scheduled - self.created


class PodRecord(_Record):
    name: str
    namespace: str = "default"
    hostname: str = ""  # `<podclique>-<index>`: the operator's pods have generated names
    gang: str = ""
    clique: str = ""
    node: str = ""
    phase: str = "Pending"
    gpu: int = 0
    cpu: float = 0.0
    memory: float = 0.0
    created: float | None = None
    bound: float | None = None
    running: float | None = None
    finished: float | None = None
    deleted: float | None = None
    message: str = ""  # why it is not scheduled / why it ended


class Sample(_Record):
    """Cluster usage from time t until the next sample (a step function)."""

    t: float
    gpu_used: float = 0
    cpu_used: float = 0
    memory_used: float = 0
    pods_running: int = 0
    pods_pending: int = 0


class EventRecord(_Record):
    t: float
    type: str = "Normal"
    reason: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    message: str = ""
    count: int = 1
    source: str = ""


class StepRecord(_Record):
    t: float
    action: str
    description: str
    ok: bool = True
    error: str = ""


class Snapshot(_Record):
    """Every object (but Events and Leases), by kind, at virtual time `t`: taken just before
    each scenario step and every `snapshotEvery`, for `phalanx get --at`."""

    t: float
    label: str = ""  # why it was taken: "before step 3 (cordon)", "every 30s"
    objects: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)


class ObjectChange(_Record):
    """One object's new version (or its deletion) at virtual time `t`: the run's history,
    from which `phalanx get --at` rebuilds the objects at any time."""

    t: float
    kind: str  # as in RunRecord.objects ("Pod", "PodGroup.scheduling.run.ai")
    key: str  # namespace/name, or name for cluster-scoped kinds
    object: dict[str, Any] | None = None  # None: deleted


class NoStateAt(LookupError):
    """The saved run holds no state at or before the time asked (a run saved without its
    history, and the time precedes every snapshot)."""

    def __init__(self, t: float, snapshot_times: list[float], end: float) -> None:
        super().__init__(f"no snapshot at or before {t:g}s")
        self.t, self.snapshot_times, self.end = t, snapshot_times, end


class RunMeta(_Record):
    inputs: list[str] = Field(default_factory=list)
    cluster: str = ""
    config: str = ""
    scheduler_config: str = ""  # the KubeSchedulerConfiguration's file ("": the defaults)
    until: str = "settled"
    duration: float = 0.0  # virtual seconds the run lasted
    settled: bool = False
    started_at: str = ""  # virtual wall-clock instant of t=0 (ISO 8601)
    wall_seconds: float = 0.0  # real seconds the simulation took
    phalanx_version: str = ""


class RunRecord(_Record):
    version: int = RECORD_VERSION
    meta: RunMeta = Field(default_factory=RunMeta)
    topology: list[TopologyLevel] = Field(default_factory=list)  # broadest first
    nodes: list[NodeInfo] = Field(default_factory=list)
    gangs: list[GangRecord] = Field(default_factory=list)
    pods: list[PodRecord] = Field(default_factory=list)
    samples: list[Sample] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    # Final state of every object, by kind, as kubectl would print it (camelCase dicts).
    objects: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    # Earlier states (by time): before each scenario step and every `snapshotEvery`.
    snapshots: list[Snapshot] = Field(default_factory=list)
    # Every object's versions through the run, by time (empty when not recorded).
    history: list[ObjectChange] = Field(default_factory=list)

    # --- look-ups used by reports and `phalanx describe` --------------------------------

    def gang(self, name: str, namespace: str | None = None) -> GangRecord | None:
        """The gang of that name (in `namespace`, when given: names repeat across them)."""
        return next((g for g in self.gangs if g.name == name
                     and (namespace is None or g.namespace == namespace)), None)

    def pod(self, name: str, namespace: str | None = None) -> PodRecord | None:
        """The latest pod of that name or, failing that, hostname (`<podclique>-<index>`,
        which a replacement keeps while its generated name is new); in `namespace`, when
        given."""
        pods = [p for p in self.pods if namespace is None or p.namespace == namespace]
        found = [p for p in pods if p.name == name] or [p for p in pods if p.hostname == name]
        return max(found, key=lambda p: p.created or 0.0) if found else None

    def node(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)

    def object(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object of that name (in `namespace`, when given)."""
        for obj in self.objects.get(kind, []):
            meta = obj.get("metadata", {})
            if meta.get("name") == name and (
                    namespace is None or meta.get("namespace", "default") == namespace):
                return obj
        return None

    def objects_at(self, t: float | None) -> tuple[float, str, dict[str, list[dict[str, Any]]]]:
        """(time, label, objects) in force at `t` (None or past the end: the final state):
        rebuilt from the history when the run kept one, else the latest snapshot at or
        before `t`. Raises NoStateAt when neither can answer."""
        if t is None or t >= self.meta.duration:
            return self.meta.duration, "end of the run", self.objects
        if self.history:
            return t, "history", self._rebuild(t)
        earlier = [s for s in self.snapshots if s.t <= t + 1e-9]
        if not earlier:
            raise NoStateAt(t, [s.t for s in self.snapshots], self.meta.duration)
        latest = max(s.t for s in earlier)
        snap = [s for s in earlier if s.t == latest][-1]  # of equal times, the last taken
        return snap.t, snap.label, snap.objects

    def _rebuild(self, t: float) -> dict[str, list[dict[str, Any]]]:
        state: dict[str, dict[str, dict[str, Any]]] = {}
        for change in self.history:
            if change.t > t + 1e-9:
                break
            objs = state.setdefault(change.kind, {})
            if change.object is None:
                objs.pop(change.key, None)
            else:
                objs[change.key] = change.object
        return {kind: [objs[k] for k in sorted(objs)] for kind, objs in state.items() if objs}

    def events_for(self, kind: str, name: str) -> list[EventRecord]:
        return [e for e in self.events if e.kind == kind and e.name == name]

    @property
    def gpu_total(self) -> int:
        return sum(n.gpu for n in self.nodes)

    @property
    def cpu_total(self) -> float:
        return sum(n.cpu for n in self.nodes)

    def topology_domain_of(self, node: str, level: str) -> str:
        """The value of topology `level` (e.g. "rack") for `node`, or "" when unlabelled."""
        info = self.node(node)
        key = next((t.key for t in self.topology if t.domain == level), None)
        if info is None or key is None:
            return ""
        return info.labels.get(key, "")


class RecordError(Exception):
    """A saved run that cannot be read (missing, not JSON, or from another version)."""

    exit_code = 2


def save_record(record: RunRecord, path: str | os.PathLike[str]) -> Path:
    """Write atomically: a temporary file in the same directory, fsync, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = record.model_dump_json(indent=None, exclude_defaults=False)
    write_atomic(target, data)
    return target


def write_atomic(target: Path, text: str) -> None:
    """Replace `target` with `text` so readers see the old file or the new one, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (umask applies).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def load_record(path: str | os.PathLike[str]) -> RunRecord:
    p = Path(path)
    if not p.exists():
        raise RecordError(
            f"no saved run at {p}; run `phalanx run WORKLOAD.yaml` first (it saves to "
            f"{DEFAULT_SAVE_PATH}) or pass --run FILE"
        )
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise RecordError(f"{p} is not a saved run: {e}") from None
    if not isinstance(raw, dict) or raw.get("version") != RECORD_VERSION:
        got = raw.get("version") if isinstance(raw, dict) else None
        raise RecordError(
            f"{p} is a saved run of format version {got!r}; this Phalanx reads version "
            f"{RECORD_VERSION}. Re-run the workload to refresh it."
        )
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise RecordError(f"{p} is not a valid saved run: {loc}: {first['msg']}") from None
