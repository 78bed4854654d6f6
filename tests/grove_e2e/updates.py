"""What Grove's update tests (operator/e2e/tests/update) do and check, on a run's history.

Grove's `triggerPodCliqueUpdate` adds (or changes) the env var UPDATE_TRIGGER of a clique's
first container and applies the PodCliqueSet; here that is an `apply` step of the workload's
YAML with the same change (`updated`). Grove's tracker (tracker.go) watches pods and records
Added/Deleted events; here they are read from the run's object history (`pod_events`): a pod
is Added when it first appears and Deleted when it is gone from the API. A pod's identity is
its hostname, as in Grove's getPodIdentifier (the name where no hostname is set). The history
folds an object's versions less than a second apart, so a pod recreated under its name within
a second shows as a change of uid: that is read as Deleted then Added.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from .harness import FIXTURES, PART_OF, PCS_REPLICA, PCSG, PCSG_REPLICA, PODCLIQUE, Run, label

TRIGGER = "UPDATE_TRIGGER"
HASH = "grove.io/pod-template-hash"


def workload(file: str) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all((FIXTURES / file).read_text()) if d)


def updated(file: str, triggers: dict[str, str] | None = None, *, replicas: int | None = None,
            strategy: str | None = None,
            change: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The workload's PodCliqueSet with UPDATE_TRIGGER=<value> on each named clique (Grove's
    triggerPodCliqueUpdate), `spec.replicas` and `spec.updateStrategy.type` as given, as a
    whole object for an `apply` step (kubectl apply carries every field)."""
    doc = copy.deepcopy(workload(file))
    if replicas is not None:
        doc["spec"]["replicas"] = replicas
    if strategy is not None:
        doc["spec"]["updateStrategy"] = {"type": strategy}
    for clique in doc["spec"]["template"]["cliques"]:
        value = (triggers or {}).get(clique["name"])
        if value is not None:
            env = clique["spec"]["podSpec"]["containers"][0].setdefault("env", [])
            env[:] = [e for e in env if e["name"] != TRIGGER] + [{"name": TRIGGER, "value": value}]
    if change is not None:
        change(doc)
    return doc


def apply(at: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {"at": at, "apply": [doc]}


def trigger_of(pod: dict[str, Any]) -> str | None:
    for c in pod["spec"]["containers"][:1]:
        for e in c.get("env") or ():
            if e["name"] == TRIGGER:
                return str(e.get("value"))
    return None


def pcs_status(objs: dict[str, list[dict[str, Any]]], name: str) -> dict[str, Any]:
    pcs = next(o for o in objs["PodCliqueSet"] if o["metadata"]["name"] == name)
    return dict(pcs.get("status") or {})


def assert_update_complete(objs: dict[str, list[dict[str, Any]]], name: str,
                           replicas: int) -> None:
    """Grove's waitForRollingUpdateComplete: updatedReplicas == N and updateEndedAt set."""
    st = pcs_status(objs, name)
    up = st.get("updateProgress") or {}
    assert st.get("updatedReplicas") == replicas and up.get("updateEndedAt"), (
        st.get("updatedReplicas"), up)


def currently_updating(objs: dict[str, list[dict[str, Any]]], name: str) -> int | None:
    up = pcs_status(objs, name).get("updateProgress") or {}
    cur = up.get("currentlyUpdating") or []
    return int(cur[0]["replicaIndex"]) if cur and not up.get("updateEndedAt") else None


@dataclass
class PodEvent:
    t: float
    type: str  # "Added" | "Deleted"
    pod: dict[str, Any]

    @property
    def ident(self) -> str:
        return str(self.pod["spec"].get("hostname") or self.pod["metadata"]["name"])


def pod_events(run: Run, part_of: str, since: float = 0.0) -> list[PodEvent]:
    """Added / Deleted events of the workload's pods from `since` (Grove's tracker)."""
    last: dict[str, dict[str, Any]] = {}
    out: list[PodEvent] = []
    for ch in run.record.history:
        if ch.kind != "Pod":
            continue
        if ch.object is None:
            pod = last.pop(ch.key, None)
            if pod is not None and ch.t >= since:
                out.append(PodEvent(ch.t, "Deleted", pod))
            continue
        if ch.object["metadata"].get("labels", {}).get(PART_OF) != part_of:
            continue
        prev = last.get(ch.key)
        if prev is not None and prev["metadata"]["uid"] != ch.object["metadata"]["uid"]:
            # The history folds versions less than a second apart: a pod deleted and
            # recreated under its name within that is seen as a new uid.
            if ch.t >= since:
                out.append(PodEvent(ch.t, "Deleted", prev))
            prev = None
        if prev is None and ch.t >= since:
            out.append(PodEvent(ch.t, "Added", ch.object))
        last[ch.key] = ch.object
    return out


def deleted(events: Iterable[PodEvent]) -> list[PodEvent]:
    return [e for e in events if e.type == "Deleted"]


def max_in_flight(events: list[PodEvent], group: Callable[[dict[str, Any]], Any],
                  unit: Callable[[dict[str, Any]], Any] | None = None) -> dict[Any, int]:
    """Per group, the most units (pods, or scaling group replicas with `unit`) that were at
    once deleted and not yet replaced (a pod identity's deletions outnumber its additions),
    as Grove's verifyOnePodDeletedAtATime* and verifyOnePCSGReplicaDeletedAtATime count."""
    dels: dict[tuple[Any, str], int] = {}
    adds: dict[tuple[Any, str], int] = {}
    units: dict[tuple[Any, str], Any] = {}
    most: dict[Any, int] = {}
    for e in events:
        key = (group(e.pod), e.ident)
        units[key] = unit(e.pod) if unit else e.ident
        (dels if e.type == "Deleted" else adds)[key] = \
            (dels if e.type == "Deleted" else adds).get(key, 0) + 1
        busy: dict[Any, set[Any]] = {}
        for k, n in dels.items():
            if n > adds.get(k, 0):
                busy.setdefault(k[0], set()).add(units[k])
        for g, us in busy.items():
            most[g] = max(most.get(g, 0), len(us))
    return most


def everyone(_pod: dict[str, Any]) -> str:
    return "all"


def pcs_replica(pod: dict[str, Any]) -> str | None:
    return label(pod, PCS_REPLICA)


def pclq(pod: dict[str, Any]) -> str | None:
    return label(pod, PODCLIQUE)


def pcsg(pod: dict[str, Any]) -> str | None:
    return label(pod, PCSG)


def pcsg_replica(pod: dict[str, Any]) -> str | None:
    return label(pod, PCSG_REPLICA)


def assert_one_pod_deleted_at_a_time(events: list[PodEvent]) -> None:
    """Grove's verifyOnePodDeletedAtATime."""
    most = max_in_flight(events, everyone)
    assert most.get("all", 0) <= 1, most


def assert_one_pod_deleted_at_a_time_per_podclique(events: list[PodEvent]) -> None:
    most = max_in_flight(events, pclq)
    assert all(n <= 1 for n in most.values()), most


def assert_one_pcsg_replica_deleted_at_a_time(events: list[PodEvent]) -> None:
    """Grove's verifyOnePCSGReplicaDeletedAtATime(PerPCSG): per scaling group, at most one
    of its replicas has pods deleted and not yet replaced."""
    grouped = [e for e in events if pcsg(e.pod)]
    most = max_in_flight(grouped, pcsg, pcsg_replica)
    assert all(n <= 1 for n in most.values()), most


def assert_single_pcs_replica_updated_at_a_time(events: list[PodEvent]) -> None:
    """Grove's verifySinglePCSReplicaUpdatedFirst: at most one PodCliqueSet replica has
    pods in flight at any time."""
    most = max_in_flight(events, everyone, pcs_replica)
    assert most.get("all", 0) <= 1, most


def assert_never_replaced_twice(events: list[PodEvent]) -> None:
    """Nothing is updated twice: no pod identity is deleted and recreated more than once (a
    deletion that nothing replaces is a scale-in, not an update)."""
    replaced: dict[str, int] = {}
    gone: set[str] = set()
    for e in events:
        if e.type == "Deleted":
            gone.add(e.ident)
        elif e.ident in gone:
            gone.discard(e.ident)
            replaced[e.ident] = replaced.get(e.ident, 0) + 1
    twice = {k: n for k, n in replaced.items() if n > 1}
    assert not twice, twice
