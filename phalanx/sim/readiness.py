"""When a running pod counts as Ready, as the kubelet's prober and status manager say.

- A container with a startupProbe is not `started` until that probe succeeds; the model is
  its first check, `initialDelaySeconds` after the container started (how many checks fail
  before is not knowable). Other probes do not run before then (prober/worker.go).
- A container with a readinessProbe starts not ready and becomes ready on its first check,
  `initialDelaySeconds` after the container started, once started. Without one, a
  container is ready once started.
- ContainersReady is True when every container is ready; Ready also needs every
  `spec.readinessGates` condition True, else False with reason ReadinessGatesNotReady
  (pkg/kubelet/status/generate.go GeneratePodReadyCondition).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from phalanx.api.pod import Container, Pod

REASON_CONTAINERS_NOT_READY = "ContainersNotReady"
REASON_GATES_NOT_READY = "ReadinessGatesNotReady"


def _delay(probe: dict[str, Any] | None) -> float:
    return float((probe or {}).get("initialDelaySeconds") or 0)


def probe_times(container: Container, started_at: float) -> tuple[float, float]:
    """(when the container counts as started, when it turns ready)."""
    started = started_at + _delay(container.startup_probe) if container.startup_probe \
        else started_at
    ready = started
    if container.readiness_probe:
        ready = max(started, started_at + _delay(container.readiness_probe))
    return started, ready


def gate_conditions(pod: Pod) -> tuple[tuple[str, str | None], ...]:
    """The status of each readiness gate's condition (None: absent)."""
    out = []
    for gate in pod.spec.readiness_gates or ():
        kind = str((gate or {}).get("conditionType", ""))
        cond = pod.get_condition(kind)
        out.append((kind, cond.status if cond is not None else None))
    return tuple(out)


def update_readiness(pod: Pod, now: float, now_dt: datetime) -> float | None:
    """Set, in `pod` (a private copy of a Running pod), each container's started/ready and
    the ContainersReady and Ready conditions as of `now`. Returns the seconds until a
    container's readiness changes next (None: nothing due)."""
    specs = {c.name: c for c in pod.spec.containers}
    due: float | None = None
    unready: list[str] = []
    statuses = []
    for cs in pod.status.container_statuses or ():
        cs = dict(cs)
        running = (cs.get("state") or {}).get("running")
        spec = specs.get(cs.get("name", ""))
        if running is None or spec is None or not running.get("startedAt"):
            cs["ready"] = False
            unready.append(cs.get("name", ""))
            statuses.append(cs)
            continue
        t0 = datetime.fromisoformat(running["startedAt"]).timestamp()
        started_t, ready_t = probe_times(spec, t0)
        cs["started"] = now >= started_t
        cs["ready"] = now >= ready_t
        if not cs["ready"]:
            unready.append(cs["name"])
            left = ready_t - now if cs["started"] else started_t - now
            due = left if due is None else min(due, left)
        statuses.append(cs)
    pod.status.container_statuses = statuses
    if unready:
        why = f"containers with unready status: [{' '.join(unready)}]"
        pod.set_condition("ContainersReady", False, REASON_CONTAINERS_NOT_READY, why,
                          now=now_dt)
        pod.set_condition("Ready", False, REASON_CONTAINERS_NOT_READY, why, now=now_dt)
        return due
    pod.set_condition("ContainersReady", True, "", now=now_dt)
    gates = []
    for kind, status in gate_conditions(pod):
        if status is None:
            gates.append(f'corresponding condition of pod readiness gate "{kind}" does not '
                         "exist.")
        elif status != "True":
            gates.append(f'the status of pod readiness gate "{kind}" is not "True", but '
                         f"{status}")
    if gates:
        pod.set_condition("Ready", False, REASON_GATES_NOT_READY, ", ".join(gates), now=now_dt)
    else:
        pod.set_condition("Ready", True, "", now=now_dt)
    return due
