"""A simulated kubelet for every node: bound pods start running, on the cluster's clock.

    kubelet = Kubelet(client, start_delay=5.0)
    await kubelet.start()
    ...                                     # pods bound to nodes become Running + Ready
    await kubelet.fail_pod("web-0", "ns")   # a container crashed: phase Failed
    await kubelet.wait_idle()
    await kubelet.stop()

What it does, as a kubelet would:
- a pod bound to a Ready node (spec.nodeName) becomes `Running` with condition
  Initialized True, `start_delay` seconds after it could start; its containers, and the
  ContainersReady and Ready conditions, turn ready as phalanx.sim.readiness says (at once
  without probes: one status write per pod; a readinessProbe / startupProbe waits for its
  initialDelaySeconds, and Ready waits for the pod's readinessGates conditions);
- startup order: a pod whose grove-initc init container (`phalanx startup-wait
  --podcliques=<podclique>:<n> ...`, injected by the operator) would wait stays Pending,
  condition Initialized=False (reason WaitingForStartupDependencies), until each named
  PodClique has at least n Ready pods; only then does its start delay begin. What the
  waiter waits for and what counts as Ready come from phalanx.operator.startupwaiter, the
  same code the real init container runs (a pod without the init container may carry the
  `phalanx.dev/starts-after` annotation instead);
- `spec.activeDeadlineSeconds`: once that long has passed since `status.startTime`, the
  pod is killed: Failed, reason DeadlineExceeded (pkg/kubelet/active_deadline.go);
- pods on a node that is deleted, missing or NotReady are marked `Failed` (reason NodeLost);
- `fail_pod` makes a pod's containers exit with a code, for tests and scenarios. As
  `spec.restartPolicy` says (phalanx.sim.restarts): under Always, or OnFailure with a
  non-zero code, the pod stays Running, not Ready, and its containers are started again
  after the CrashLoopBackOff delay (none after a first exit, then 10s doubling to 300s) and
  the start delay, `restartCount` one higher; under Never (OnFailure, exit 0) it ends
  Failed, for good.
It never deletes pods and never touches pods that are not bound or are being deleted.
"""

from __future__ import annotations

import logging

from phalanx.api import labels as L
from phalanx.api.core import Node, Pod
from phalanx.cluster.client import Client, NotFound
from phalanx.cluster.controller import Controller, Manager, Result
from phalanx.cluster.objects import object_key
from phalanx.operator.naming import ANNOTATION_STARTS_AFTER  # noqa: F401  (re-exported)
from phalanx.operator.startupwaiter import counts_as_ready, dependencies_of, unmet

from .readiness import gate_conditions, update_readiness
from .restarts import (
    CrashLoopBackOff,
    container_exited,
    container_restarted,
    finished_at,
    restart_pending,
    restarts_on_exit,
    waiting_in_backoff,
)

REASON_WAITING = "WaitingForStartupDependencies"
REASON_NODE_LOST = "NodeLost"
# pkg/kubelet/active_deadline.go
REASON_DEADLINE = "DeadlineExceeded"
MESSAGE_DEADLINE = "Pod was active on the node longer than the specified deadline"

_IDX_NODE = "node"
_IDX_PODCLIQUE = "podclique"
_IDX_AFTER = "starts-after"

log = logging.getLogger(__name__)


class Kubelet:
    def __init__(self, client: Client, start_delay: float = 0.0) -> None:
        if start_delay < 0:
            raise ValueError(f"start_delay must be >= 0, got {start_delay}")
        self.client = client
        self.start_delay = start_delay
        self.manager = Manager(client)
        self.pods = self.manager.informer(Pod)
        self.nodes = self.manager.informer(Node)
        self.pods.add_index(_IDX_NODE, lambda p: p.spec.node_name or None)
        self.pods.add_index(_IDX_PODCLIQUE, lambda p: _clique_key(p.metadata.namespace,
                            p.metadata.labels.get(L.LABEL_PODCLIQUE)))
        self.pods.add_index(_IDX_AFTER, lambda p: [
            object_key(p.metadata.namespace, name) for name, _ in dependencies_of(p)])
        self.controller = self.manager.add(Controller("kubelet", self._reconcile, workers=4))
        # Only bound pods, as a kubelet watches only the pods bound to its node.
        self.controller.watch(self.pods, _bound_key, predicate=_matters)
        # A pod turning Ready may release the pods that start after its clique.
        self.controller.watch(self.pods, self._dependents, predicate=_readiness_changed)
        # A node going away or NotReady fails its pods.
        self.controller.watch(self.nodes, lambda n: self.pods.keys_by_index(_IDX_NODE, n.name),
                              predicate=lambda o, n: o.is_ready != n.is_ready)
        self._startable_since: dict[str, float] = {}
        self.backoff = CrashLoopBackOff()
        # Counters for tests and reports.
        self.started = 0
        self.failed = 0
        self.restarted = 0

    async def start(self) -> None:
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Everything due now is done (pods still inside their start delay do not count)."""
        await self.manager.wait_idle(timeout=timeout)

    # ------------------------------------------------------------------ commands

    async def fail_pod(self, name: str, namespace: str = "default", *, reason: str = "Error",
                       message: str = "container exited with a non-zero code",
                       exit_code: int = 1, restart: bool = True) -> bool:
        """A bound pod's container exits: restarted in place where its restartPolicy says so,
        else the pod is Failed. `restart=False`: Failed whatever its restartPolicy (evicted,
        its node lost). False when it does not exist, is not bound or already ended."""
        try:
            pod = await self.client.get(Pod, name, namespace)
        except NotFound:
            return False
        if not pod.spec.node_name or pod.is_terminal or restart_pending(pod):
            return False
        if restart and restarts_on_exit(pod, exit_code):
            updated = _for_status_write(pod)
            container_exited(updated, exit_code, reason, message, self.client.clock.now_dt())
            await self.client.update_status(updated, returning=False, hand_over=True)
            self.failed += 1
            return True
        await self._write_failed(pod, reason, message, exit_code)
        return True

    # ------------------------------------------------------------------ reconcile

    def _dependents(self, pod: Pod) -> list[str]:
        clique = _clique_key(pod.metadata.namespace, pod.metadata.labels.get(L.LABEL_PODCLIQUE))
        return self.pods.keys_by_index(_IDX_AFTER, clique) if clique else []

    def _ready_pods(self, clique_key: str) -> int:
        return sum(1 for p in self.pods.by_index(_IDX_PODCLIQUE, clique_key)
                   if counts_as_ready(p))

    async def _reconcile(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None:
            self._startable_since.pop(key, None)
            self.backoff.forget(key)
            return None
        if not pod.spec.node_name or pod.is_terminal or pod.metadata.deletion_timestamp:
            self._startable_since.pop(key, None)
            return None
        node = self.nodes.get(pod.spec.node_name)
        if node is None or not node.is_ready:
            why = "was deleted" if node is None else "is NotReady"
            await self._write_failed(pod, REASON_NODE_LOST, f"node {pod.spec.node_name} {why}", 137)
            return None
        if pod.status.phase == "Running":
            deadline = self._deadline_left(pod)
            if deadline is not None and deadline <= 0:
                self._startable_since.pop(key, None)
                await self._write_failed(pod, REASON_DEADLINE, MESSAGE_DEADLINE, 137,
                                         container_reason="Error")
                return None
            if restart_pending(pod):
                return _sooner(await self._restart(pod, key), deadline)
            return _sooner(await self._update_readiness(pod), deadline)
        ns = pod.metadata.namespace
        waiting = unmet(dependencies_of(pod), lambda name: self._ready_pods(object_key(ns, name)))
        if waiting:
            # Worded without live counts, so it is written once, not on every parent start.
            msg = "waiting for " + ", ".join(f"{need} Ready pod(s) of {name}"
                                             for name, need, _ in waiting)
            await self._write_waiting(pod, msg)
            return None
        now = self.client.clock.now()
        since = self._startable_since.setdefault(key, now)
        left = since + self.start_delay - now
        if left > 0:
            return Result(requeue_after=left)
        await self._write_running(pod)
        self._startable_since.pop(key, None)
        return None

    async def _update_readiness(self, pod: Pod) -> Result | None:
        """Probes that have come due, readiness gates that changed: rewrite readiness."""
        updated = _for_status_write(pod)
        due = update_readiness(updated, self.client.clock.now(), self.client.clock.now_dt())
        if (updated.status.container_statuses != pod.status.container_statuses
                or updated.status.conditions != pod.status.conditions):
            await self.client.update_status(updated, returning=False, hand_over=True)
        return None if due is None else Result(requeue_after=max(due, 0.0))

    def _deadline_left(self, pod: Pod) -> float | None:
        """Seconds until the pod's activeDeadlineSeconds runs out (None: no deadline)."""
        ads, start = pod.spec.active_deadline_seconds, pod.status.start_time
        if ads is None or start is None:
            return None
        return start.timestamp() + ads - self.client.clock.now()

    async def _restart(self, pod: Pod, key: str) -> Result | None:
        """Start the exited containers again: after their CrashLoopBackOff, then the start
        delay (pkg/kubelet/kuberuntime doBackOff)."""
        now = self.client.clock.now()
        since = self._startable_since.get(key)
        if since is None:
            finished = finished_at(pod)
            finished = now if finished is None else finished
            names = [c.name for c in pod.spec.containers]
            wait = max(self.backoff.wait(key, n, finished, now) for n in names)
            if wait > 0:
                updated = _for_status_write(pod)
                backoff = max(self.backoff.current(key, n) for n in names)
                if waiting_in_backoff(updated, backoff, self.client.clock.now_dt()):
                    await self.client.update_status(updated, returning=False, hand_over=True)
                return Result(requeue_after=wait)
            since = self._startable_since[key] = now
        left = since + self.start_delay - now
        if left > 0:
            return Result(requeue_after=left)
        nowdt = self.client.clock.now_dt()
        updated = _for_status_write(pod)
        container_restarted(updated, nowdt, ready=False)
        update_readiness(updated, now, nowdt)
        await self.client.update_status(updated, returning=False, hand_over=True)
        self._startable_since.pop(key, None)
        self.restarted += 1
        return None

    # ------------------------------------------------------------------ status writes

    async def _write_waiting(self, pod: Pod, message: str) -> None:
        updated = _for_status_write(pod)
        if not updated.set_condition("Initialized", False, REASON_WAITING, message,
                                     now=self.client.clock.now_dt()):
            return
        await self.client.update_status(updated, returning=False, hand_over=True)

    async def _write_running(self, pod: Pod) -> None:
        now = self.client.clock.now_dt()
        updated = _for_status_write(pod)
        status = updated.status
        status.phase = "Running"
        status.start_time = now
        updated.set_condition("Initialized", True, "", now=now)
        status.container_statuses = [
            {"name": c.name, "ready": False, "started": True, "restartCount": 0,
             "image": c.image or "", "imageID": "",
             "state": {"running": {"startedAt": _iso(now)}}}
            for c in pod.spec.containers]
        update_readiness(updated, self.client.clock.now(), now)
        await self.client.update_status(updated, returning=False, hand_over=True)
        self.started += 1

    async def _write_failed(self, pod: Pod, reason: str, message: str, exit_code: int,
                            container_reason: str | None = None) -> None:
        now = self.client.clock.now_dt()
        updated = _for_status_write(pod)
        status = updated.status
        status.phase = "Failed"
        status.reason, status.message = reason, message
        updated.set_condition("Ready", False, "PodFailed", message, now=now)
        updated.set_condition("ContainersReady", False, "PodFailed", message, now=now)
        status.container_statuses = [
            {"name": c.name, "ready": False, "started": False, "restartCount": 0,
             "image": c.image or "", "imageID": "",
             "state": {"terminated": {"exitCode": exit_code,
                                      "reason": container_reason or reason,
                                      "finishedAt": _iso(now)}}}
            for c in pod.spec.containers]
        await self.client.update_status(updated, returning=False, hand_over=True)
        self.failed += 1


def _for_status_write(pod: Pod) -> Pod:
    """A copy of the cached `pod` whose status may be changed: the status is private, the
    rest shared and read-only (a status write sends only the status and metadata). The
    status is handed over with the write: the writers assign only valid values to it."""
    return pod.model_copy(update={"status": pod.status.copy_deep()})


def _sooner(result: Result | None, seconds: float | None) -> Result | None:
    """`result`, or a requeue after `seconds` when that comes first."""
    if seconds is None:
        return result
    if result is None or result.requeue_after is None or result.requeue_after > seconds:
        return Result(requeue_after=seconds)
    return result


def _clique_key(namespace: str | None, clique: str | None) -> str | None:
    return object_key(namespace, clique) if clique else None


def _bound_key(pod: Pod) -> str | None:
    return pod.key if pod.spec.node_name else None


def _matters(old: Pod, new: Pod) -> bool:
    return (old.spec.node_name != new.spec.node_name or old.status.phase != new.status.phase
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or restart_pending(old) != restart_pending(new)
            or old.spec.active_deadline_seconds != new.spec.active_deadline_seconds
            or (bool(new.spec.readiness_gates) and gate_conditions(old) != gate_conditions(new)))


def _readiness_changed(old: Pod, new: Pod) -> bool:
    return counts_as_ready(old) != counts_as_ready(new)


def _iso(ts: object) -> str:
    return ts.isoformat().replace("+00:00", "Z")  # type: ignore[attr-defined]
