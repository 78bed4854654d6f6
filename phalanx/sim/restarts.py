"""Container restarts as a kubelet does them: `spec.restartPolicy` and CrashLoopBackOff.

A container that exits is restarted in place when the pod's restartPolicy is Always (the
API default) or OnFailure with a non-zero exit code (kubelet_pods.go getPhase: the pod stays
Running). The exit is written by `container_exited` (the pod stays Running, its containers
not Ready, their state `terminated`); the simulated kubelet then starts them again, after
the CrashLoopBackOff delay (none for a first exit) and its start delay, with
`restartCount` one higher. Never, and OnFailure with exit 0, end the pod as before.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from phalanx.api.pod import Pod

# pkg/kubelet/kubelet.go: initialCrashLoopBackOff, MaxCrashLoopBackOff (MaxContainerBackOff),
# and crashLoopBackOff.HasExpiredFunc (a container that ran this long resets its backoff).
INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0
BACKOFF_RESET = 600.0
REASON_CRASH_LOOP = "CrashLoopBackOff"


def restarts_on_exit(pod: Pod, exit_code: int) -> bool:
    """Whether the kubelet restarts a container of `pod` that exited with `exit_code`."""
    policy = pod.spec.restart_policy or "Always"
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def _iso(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def _parse(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def _statuses(pod: Pod) -> dict[str, dict[str, Any]]:
    return {cs.get("name"): cs for cs in pod.status.container_statuses or ()
            if isinstance(cs, dict)}


def unready_message(pod: Pod) -> str:
    names = " ".join(c.name for c in pod.spec.containers)
    return f"containers with unready status: [{names}]"


def container_exited(pod: Pod, exit_code: int, reason: str, message: str,
                     now: datetime) -> None:
    """Write into `pod` (a private copy) that its containers exited and will be restarted:
    phase Running, containers not Ready, state `terminated` (kubectl shows its reason)."""
    old = _statuses(pod)
    statuses = []
    for c in pod.spec.containers:
        prev = old.get(c.name, {})
        running = (prev.get("state") or {}).get("running") or {}
        term: dict[str, Any] = {"exitCode": exit_code, "reason": reason,
                                "finishedAt": _iso(now)}
        if running.get("startedAt"):
            term["startedAt"] = running["startedAt"]
        if message:
            term["message"] = message
        entry: dict[str, Any] = {
            "name": c.name, "ready": False, "started": False,
            "restartCount": int(prev.get("restartCount") or 0),
            "image": c.image or "", "imageID": "", "state": {"terminated": term}}
        if prev.get("lastState"):
            entry["lastState"] = prev["lastState"]
        statuses.append(entry)
    pod.status.phase = "Running"
    pod.status.reason = pod.status.message = None
    pod.status.container_statuses = statuses
    why = unready_message(pod)
    pod.set_condition("ContainersReady", False, "ContainersNotReady", why, now=now)
    pod.set_condition("Ready", False, "ContainersNotReady", why, now=now)


def restart_pending(pod: Pod) -> bool:
    """A Running pod with a container that exited and is not running again yet."""
    if pod.status.phase != "Running":
        return False
    return any("running" not in (cs.get("state") or {}) for cs in _statuses(pod).values())


def finished_at(pod: Pod) -> float | None:
    """When the exited containers of a restart-pending pod finished (the latest)."""
    times = []
    for cs in _statuses(pod).values():
        state = cs.get("state") or {}
        term = state.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
        if "running" not in state and term.get("finishedAt"):
            times.append(_parse(term["finishedAt"]))
    return max(times) if times else None


def waiting_in_backoff(pod: Pod, backoff: float, now: datetime) -> bool:
    """Write the CrashLoopBackOff waiting state (the exit moves to lastState). False when
    already written."""
    changed = False
    statuses = []
    for cs in pod.status.container_statuses or ():
        cs = dict(cs)
        state = cs.get("state") or {}
        if "terminated" in state:
            cs["lastState"] = {"terminated": state["terminated"]}
            cs["state"] = {"waiting": {
                "reason": REASON_CRASH_LOOP,
                "message": f"back-off {backoff:g}s restarting failed container={cs['name']} "
                           f"pod={pod.name}_{pod.namespace}({pod.metadata.uid})"}}
            changed = True
        statuses.append(cs)
    pod.status.container_statuses = statuses
    return changed


def container_restarted(pod: Pod, now: datetime, ready: bool) -> None:
    """Write into `pod` that its exited containers run again, restartCount one higher."""
    statuses = []
    for cs in pod.status.container_statuses or ():
        cs = dict(cs)
        state = cs.get("state") or {}
        if "running" not in state:
            if "terminated" in state:
                cs["lastState"] = {"terminated": state["terminated"]}
            cs["restartCount"] = int(cs.get("restartCount") or 0) + 1
            cs["state"] = {"running": {"startedAt": _iso(now)}}
            cs["started"] = True
        cs["ready"] = ready
        statuses.append(cs)
    pod.status.container_statuses = statuses


class CrashLoopBackOff:
    """The kubelet's per-container restart backoff (flowcontrol.Backoff as doBackOff uses
    it): no wait after a first exit, then 10s doubling to 300s; reset once a container
    exits more than 600s after its last restart."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, tuple[float, float]]] = {}

    def wait(self, pod_key: str, container: str, finished: float, now: float) -> float:
        """Seconds until `container` may start again (0: now, and the restart is counted)."""
        per_pod = self._entries.setdefault(pod_key, {})
        entry = per_pod.get(container)
        expired = entry is not None and finished - entry[1] > BACKOFF_RESET
        if entry is not None and not expired and now - finished < entry[0]:
            return finished + entry[0] - now
        backoff = INITIAL_BACKOFF if entry is None or expired else min(entry[0] * 2,
                                                                        MAX_BACKOFF)
        per_pod[container] = (backoff, now)
        return 0.0

    def current(self, pod_key: str, container: str) -> float:
        entry = self._entries.get(pod_key, {}).get(container)
        return entry[0] if entry else 0.0

    def forget(self, pod_key: str) -> None:
        self._entries.pop(pod_key, None)
