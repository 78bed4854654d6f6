"""Each scheduler's own API writes, Events included, from the API server's audit log.

    offset = log_size(plane.audit_log)        # before the scheduler starts
    ...                                       # it runs, as its own service account
    writes = writes_since(plane.audit_log, offset, user)
    summary = summarize_writes(writes, t0_wall, last_bind_wall)

The harness's audit policy (phalanx/envtest/audit.py) records every write of a service
account, so the bench runs each scheduler with a service-account token of its own: the log
then tells when that scheduler's last write (bind, Event, gang status) finished, to the
microsecond, which the API server's request counters (scraped once a second) cannot. The
honest end of a run is the later of the last bind seen and that last write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from phalanx.envtest import audit


@dataclass(frozen=True, slots=True)
class Write:
    verb: str
    call: str  # "create events.k8s.io/events", "create pods/binding", ...
    code: int
    received: float  # wall-clock seconds (epoch)
    done: float  # when the response was complete (stageTimestamp)
    name: str = ""  # the object's (objectRef.name)


def log_size(path: Path | None) -> int:
    """Where the next run's records start (0 for no log yet)."""
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def epoch(stamp: str) -> float:
    """An audit timestamp (RFC 3339, microseconds) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def resource_of(ref: dict[str, Any]) -> str:
    """An audit objectRef as "group/resource/subresource" ("pods/binding", "events.k8s.io/events")."""
    resource = ref.get("resource", "")
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    if ref.get("apiGroup"):
        resource = f"{ref['apiGroup']}/{resource}"
    return resource


def completed_records(path: Path | None, offset: int = 0) -> list[dict[str, Any]]:
    """The audit records of completed requests after byte `offset` that say when they were
    received (what every timing here is measured from)."""
    return [raw for raw in audit.completed_records(path, offset)
            if raw.get("requestReceivedTimestamp")]


def done_of(raw: dict[str, Any]) -> float:
    """When the request's response was complete (its receipt when the log has no stage time)."""
    return epoch(raw.get("stageTimestamp") or raw["requestReceivedTimestamp"])


def code_of(raw: dict[str, Any]) -> int:
    return int((raw.get("responseStatus") or {}).get("code", 0))


def writes_since(path: Path | None, offset: int, user: str) -> list[Write]:
    """The completed writes `user` made, recorded after byte `offset` of the log."""
    return [Write(raw.get("verb", ""), f"{raw.get('verb', '')} {resource_of(raw.get('objectRef') or {})}",
                  code_of(raw), epoch(raw["requestReceivedTimestamp"]), done_of(raw),
                  (raw.get("objectRef") or {}).get("name", ""))
            for raw in completed_records(path, offset)
            if (raw.get("user") or {}).get("username") == user]


def last_status_write(writes: list[Write]) -> dict[str, float]:
    """Per object name, when its last status write (a `.../status` call) ended: for a gang
    object, when the scheduler last told its users where the gang stands."""
    out: dict[str, float] = {}
    for w in writes:
        if w.call.endswith("/status") and 200 <= w.code < 300 and w.name:
            out[w.name] = max(out.get(w.name, w.done), w.done)
    return out


def summarize_writes(writes: list[Write], t0: float, last_bind: float) -> dict[str, Any]:
    """Times relative to t0 (all wall clock): the last write's end (overall and by call),
    and what came after the last bind (the writes that trail the binds: Events, gang
    status)."""
    last = max((w.done for w in writes), default=t0)
    after = [w for w in writes if w.received > last_bind]
    trailing: dict[str, int] = {}
    for w in after:
        trailing[w.call] = trailing.get(w.call, 0) + 1
    calls: dict[str, int] = {}
    ends: dict[str, float] = {}
    for w in writes:
        calls[w.call] = calls.get(w.call, 0) + 1
        ends[w.call] = max(ends.get(w.call, w.done), w.done)
    return {
        "writes": len(writes),
        "writes_by_call": dict(sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))),
        "last_write_seconds": round(last - t0, 3),
        # Which kind of write ends the run (Events, binds, gang status).
        "last_write_seconds_by_call": {call: round(end - t0, 3) for call, end in
                                       sorted(ends.items(), key=lambda kv: -kv[1])},
        "writes_after_last_bind": len(after),
        "writes_after_last_bind_by_call": dict(sorted(trailing.items(),
                                                      key=lambda kv: (-kv[1], kv[0]))),
        "writes_trail_last_bind_seconds": round(max(last - last_bind, 0.0), 3),
    }
