"""A rolling update's writes, by writer, from the API server's audit log.

The stack's audit policy records every write (grovescale/stack.py, `audit_all_writes`); the
writer is told by user agent: `phalanx/<field manager>` (the operator, the bench's stand-in
kubelet, the bench itself), `kube-scheduler/...`, `kube-controller-manager/...` (its
garbage collector deletes a replaced scaling-group replica's pods).

"Each pod replaced exactly once" is read from the same log: every original pod is deleted
by someone other than the kubelet (whose delete with grace period 0 only finishes a deletion
already asked for), and no replacement is deleted at all (`replacements`). Grove's
one-at-a-time rule too: a PodCliqueSet replica's (or scaling-group replica's) first delete
comes after the previous one's replacements were all bound.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.bench.kube.writes import code_of, completed_records, done_of, epoch, resource_of

KUBELET = "phalanx/bench-kubelet"  # the field manager the bench gives its stand-in kubelet


@dataclass(frozen=True, slots=True)
class AuditWrite:
    writer: str
    verb: str
    resource: str  # "pods", "pods/binding", "grove.io/podcliques/status", ...
    namespace: str
    name: str
    code: int
    received: float  # epoch seconds
    done: float

    @property
    def call(self) -> str:
        return f"{self.verb} {self.resource}"


def writer_of(user_agent: str) -> str:
    """`phalanx/phalanx-operator` as is; a Kubernetes binary by its name
    (`kube-scheduler/v1.36.0 (linux/amd64) kubernetes/abc/scheduler` -> `kube-scheduler`)."""
    if user_agent.startswith("phalanx/"):
        return user_agent.split(" ", 1)[0]
    return user_agent.split("/", 1)[0] or "unknown"


def read_writes(path: Path, offset: int = 0) -> list[AuditWrite]:
    """The completed writes recorded after byte `offset`, oldest first."""
    out = []
    for raw in completed_records(path, offset):
        ref = raw.get("objectRef") or {}
        out.append(AuditWrite(
            writer_of(raw.get("userAgent", "")), raw.get("verb", ""), resource_of(ref),
            ref.get("namespace", ""), ref.get("name", ""), code_of(raw),
            epoch(raw["requestReceivedTimestamp"]), done_of(raw)))
    return out


def replacements(writes: list[AuditWrite], namespace: str,
                 original: set[str]) -> dict[str, Any]:
    """Which pods were deleted, and whether a replacement ever was. A pod may be recreated
    under its old name: a successful delete (the kubelet's finishing ones aside) received
    after a successful create of that name hit the replacement; earlier ones hit the original
    (the garbage collector re-issues deletes of a pod that is already terminating: those are
    `repeated_delete_calls`, not replacements)."""
    created: dict[str, float] = {}  # name -> when its latest create finished
    original_deletes: Counter[str] = Counter()
    twice: set[str] = set()
    deleters: Counter[str] = Counter()
    creates = 0
    for w in sorted(writes, key=lambda w: w.received):
        if w.namespace != namespace or w.resource != "pods" or w.code >= 400:
            continue
        if w.verb == "create":
            creates += 1
            created[w.name] = w.done
        elif w.verb == "delete" and w.writer != KUBELET:
            deleters[w.writer] += 1
            if w.name in created and w.received > created[w.name] or w.name not in original:
                twice.add(w.name)
            else:
                original_deletes[w.name] += 1
    return {
        "pods_replaced": sum(1 for n in original if original_deletes[n]),
        "pods_recreated_twice": sorted(n for n in twice if n in original),
        "originals_not_replaced": sorted(n for n in original if not original_deletes[n]),
        "replacements_deleted": sorted(n for n in twice if n not in original),
        "repeated_delete_calls": sum(n - 1 for n in original_deletes.values() if n > 1),
        "pods_created": creates,
        "pod_deleters": dict(deleters),
    }


def writes_by_writer(writes: list[AuditWrite], namespace: str, pods: int, t0: float,
                     t1: float | None = None) -> dict[str, Any]:
    """The writes to `namespace` received from t0 on (until t1), per writer and call, per
    replaced pod; when the last one finished (seconds after t0); and the writes the server
    refused."""
    mine = [w for w in writes if w.namespace == namespace and w.received >= t0
            and (t1 is None or w.received <= t1)]
    by: dict[str, Counter[str]] = {}
    for w in mine:
        by.setdefault(w.writer, Counter())[w.call] += 1
    per = max(pods, 1)
    return {
        "api_writes": len(mine),
        "api_writes_per_pod": round(len(mine) / per, 2),
        "by_writer": {
            writer: {"writes": sum(calls.values()),
                     "per_pod": round(sum(calls.values()) / per, 2),
                     "calls": dict(sorted(calls.items(), key=lambda kv: (-kv[1], kv[0])))}
            for writer, calls in sorted(by.items(), key=lambda kv: -sum(kv[1].values()))},
        "last_write_seconds": round(max((w.done for w in mine), default=t0) - t0, 3),
        "refused": dict(Counter(f"{w.code} {w.writer} {w.call}" for w in mine
                                if w.code >= 400)),
    }


def _windows(writes: list[AuditWrite], namespace: str,
             unit_of: Callable[[str], str | None]) -> dict[str, tuple[float, float]]:
    """Per unit (a PodCliqueSet replica, a scaling-group replica): from its first delete
    (pod or PodClique) to its replacements' last binding."""
    first: dict[str, float] = {}
    last_bind: dict[str, float] = {}
    for w in writes:
        if w.namespace != namespace or w.code >= 400 or w.writer == KUBELET:
            continue
        unit = unit_of(w.name)
        if unit is None:
            continue
        if w.verb == "delete" and w.resource in ("pods", "grove.io/podcliques"):
            first.setdefault(unit, w.received)
        elif w.call == "create pods/binding" and unit in first:
            last_bind[unit] = max(last_bind.get(unit, 0.0), w.done)
    return {u: (t, last_bind.get(u, t)) for u, t in first.items()}


def overlaps(writes: list[AuditWrite], namespace: str,
             unit_of: Callable[[str], str | None], group_of: Callable[[str], str]) -> int:
    """Units of the same group whose replacement started before the previous one's
    replacements were all bound: one at a time means 0."""
    by_group: dict[str, list[tuple[float, float]]] = {}
    for unit, window in _windows(writes, namespace, unit_of).items():
        by_group.setdefault(group_of(unit), []).append(window)
    n = 0
    for windows in by_group.values():
        windows.sort()
        n += sum(1 for a, b in zip(windows, windows[1:]) if b[0] < a[1])
    return n


def rollout_order(writes: list[AuditWrite], namespace: str, pcs: str,
                  scaling_groups: list[str]) -> dict[str, int]:
    """Grove's one-at-a-time rule, read from the log (names: `<pcs>-<i>-...` for a replica's
    objects, `<pcs>-<i>-<group>-<j>-...` for a scaling-group replica's)."""
    def replica(name: str) -> str | None:
        head, _, rest = name.removeprefix(f"{pcs}-").partition("-")
        return head if name.startswith(f"{pcs}-") and head.isdigit() and rest else None

    def group_replica(name: str) -> str | None:
        i = replica(name)
        if i is None:
            return None
        rest = name.removeprefix(f"{pcs}-{i}-")
        for g in scaling_groups:
            j, _, tail = rest.removeprefix(f"{g}-").partition("-")
            if rest.startswith(f"{g}-") and j.isdigit() and tail:
                return f"{i}/{g}/{j}"
        return None

    return {
        "pcs_replicas_overlapping": overlaps(writes, namespace, replica, lambda _u: ""),
        "group_replicas_overlapping": overlaps(writes, namespace, group_replica,
                                               lambda u: u.rsplit("/", 1)[0]),
    }
