"""Scripted pod endings: pods that finish or fail on a schedule, and lost nodes.

A pod's life is scripted with annotations, looked up on the pod, then its PodClique, then
its PodCliqueSet (so one annotation on a clique template or on the PodCliqueSet covers
every pod):

    sim.phalanx.dev/run-for: 10m      # Succeeded 10 minutes after it started running
    sim.phalanx.dev/fail-after: 3m    # Failed 3 minutes after it started running
    sim.phalanx.dev/exit-code: "137"  # exit code of that failure (default 1)

The clock starts when the simulated kubelet reports the pod Running and Ready. Scenario
steps (`fail`, `finish`, `nodeDown`) end pods at a given time through the same writes.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import Literal

from phalanx.api import labels
from phalanx.api.base import Resource
from phalanx.api.core import Node, NodeCondition, Pod, Taint
from phalanx.api.duration import parse_duration
from phalanx.api.grove import PodClique, PodCliqueSet
from phalanx.cluster.client import Client, Conflict, Gone, NotFound

from .restarts import container_exited, restart_pending, restarts_on_exit
from .scenario import ANNOTATION_EXIT_CODE, ANNOTATION_FAIL_AFTER, ANNOTATION_RUN_FOR

PodEnd = Literal["Succeeded", "Failed"]
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


async def end_pod(client: Client, pod_name: str, namespace: str, phase: PodEnd, *,
                  exit_code: int = 0, reason: str = "", message: str = "",
                  restart: bool = True) -> bool:
    """End a pod's containers as a kubelet would. A failure (`phase` Failed) of a pod whose
    restartPolicy restarts the exit (Always, OnFailure with a non-zero code) leaves it
    Running, its containers exited until the kubelet restarts them (`restart=False`: the pod
    ends anyway). Otherwise the pod moves to `phase`. False if it is gone, already over or
    its containers already exited."""
    for _ in range(5):
        try:
            pod = await client.get(Pod, pod_name, namespace)
        except NotFound:
            return False
        if pod.is_terminal or not pod.spec.node_name or restart_pending(pod):
            return False
        if restart and phase == "Failed" and restarts_on_exit(pod, exit_code):
            container_exited(pod, exit_code, reason or "Error", message,
                             client.clock.now_dt())
        else:
            _end(pod, phase, reason, message, exit_code, client.clock.now_dt())
        try:
            await client.update_status(pod, returning=False)
            return True
        except Conflict:
            continue
        except NotFound:
            return False
    return False


def _end(pod: Pod, phase: str, reason: str | None, message: str | None, exit_code: int,
         now: datetime) -> None:
    """The pod's status once its containers ended for good (phase Succeeded or Failed)."""
    pod.status.phase = phase
    pod.status.reason = reason or ("Completed" if phase == "Succeeded" else "Error")
    pod.status.message = message or None
    pod.set_condition("Ready", False, "PodCompleted" if phase == "Succeeded" else "PodFailed",
                      now=now)
    pod.set_condition("ContainersReady", False, "PodCompleted", now=now)
    counts = {cs.get("name"): cs.get("restartCount", 0)
              for cs in pod.status.container_statuses or () if isinstance(cs, dict)}
    pod.status.container_statuses = [
        {"name": c.name, "ready": False, "restartCount": counts.get(c.name, 0),
         "image": c.image or "",
         "imageID": "", "state": {"terminated": {
             "exitCode": exit_code, "reason": pod.status.reason,
             "finishedAt": now.isoformat().replace("+00:00", "Z")}}}
        for c in pod.spec.containers
    ]


class PodScripts:
    """Watches pods and ends the scripted ones on time. `pending` counts timers not yet fired,
    and pods the kubelet still has to act on (an exited container to restart, a probe's
    first check, an activeDeadlineSeconds to enforce), so the run is not called settled while a pod is
    still due to change.

    `fail-after` fires once per pod: a container restarted after it (restartPolicy Always
    or OnFailure) runs on."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._started: set[str] = set()
        self._due: set[str] = set()
        self._ending: set[asyncio.Task[bool]] = set()
        self._task: asyncio.Task[None] | None = None
        self._owners: dict[tuple[str, str, str], Resource] = {}

    @property
    def pending(self) -> int:
        return len(self._timers) + len(self._ending) + len(self._due)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name="pod-scripts")
        await asyncio.sleep(0)

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        tasks = [t for t in (self._task, *self._ending) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self) -> None:
        rv = "0"
        while True:
            try:
                async for ev in self.client.watch(Pod, resource_version=rv):
                    rv = ev.object.metadata.resource_version or rv
                    if ev.type == "DELETED":
                        self._forget(ev.object.key)
                    elif ev.type != "BOOKMARK":
                        await self._consider(ev.object)
            except Gone:
                rv = (await self.client.list(Pod)).resource_version
            await asyncio.sleep(0)

    def _forget(self, key: str) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()
        self._started.discard(key)
        self._due.discard(key)

    async def _consider(self, pod: Pod) -> None:
        key = pod.key
        if pod.is_terminal or pod.is_deleting:
            self._forget(key)
            return
        if restart_pending(pod) or _probe_due(pod) or (
                pod.status.phase == "Running" and pod.status.start_time
                and pod.spec.active_deadline_seconds is not None):
            self._due.add(key)
        else:
            self._due.discard(key)
        if key in self._started or pod.status.phase != "Running" or not pod.is_ready:
            return
        self._started.add(key)
        notes = await self._script_of(pod)
        run_for, fail_after = notes.get(ANNOTATION_RUN_FOR), notes.get(ANNOTATION_FAIL_AFTER)
        if fail_after is not None:
            code = int(notes.get(ANNOTATION_EXIT_CODE, "1") or 1)
            self._schedule(pod, parse_duration(fail_after), "Failed", code)
        elif run_for is not None:
            self._schedule(pod, parse_duration(run_for), "Succeeded", 0)

    def _schedule(self, pod: Pod, delay: float, phase: PodEnd, code: int) -> None:
        key, name, ns = pod.key, pod.name, pod.namespace or "default"
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.pop(key, None)
            message = (f"simulated: ran for the scripted {delay:g}s" if phase == "Succeeded"
                       else f"simulated: failed after {delay:g}s with exit code {code}")
            task = asyncio.create_task(end_pod(self.client, name, ns, phase, exit_code=code,
                                               message=message))
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)

        self._timers[key] = loop.call_later(max(delay, 0.0), fire)

    async def _script_of(self, pod: Pod) -> dict[str, str]:
        """Lifecycle annotations, narrowest winning: PodCliqueSet, its clique template,
        the PodClique, the pod."""
        ns = pod.namespace or "default"
        merged: dict[str, str] = {}
        clique = pod.metadata.labels.get(labels.LABEL_PODCLIQUE, "")
        if pcs_name := pod.metadata.labels.get(labels.LABEL_PART_OF):
            pcs = await self._get(PodCliqueSet, pcs_name, ns)
            if isinstance(pcs, PodCliqueSet):
                merged.update(_sim_notes(pcs.metadata.annotations))
                # PodClique names end with their template's name (<pcs>-<i>-<clique>).
                for tmpl in pcs.spec.template.cliques:
                    if clique == tmpl.name or clique.endswith(f"-{tmpl.name}"):
                        merged.update(_sim_notes(tmpl.annotations or {}))
                        break
        if clique and (pclq := await self._get(PodClique, clique, ns)) is not None:
            merged.update(_sim_notes(pclq.metadata.annotations))
        merged.update(_sim_notes(pod.metadata.annotations))
        return merged

    async def _get(self, kind: type[Resource], name: str, ns: str) -> Resource | None:
        key = (kind.KIND, ns, name)
        if key not in self._owners:
            try:
                self._owners[key] = await self.client.get(kind, name, ns)
            except NotFound:
                return None
        return self._owners[key]


def _probe_due(pod: Pod) -> bool:
    """A Running pod whose containers wait for a startup or readiness probe's first check."""
    if pod.status.phase != "Running":
        return False
    cond = pod.get_condition("ContainersReady")
    if cond is not None and cond.status == "True":
        return False
    return any(c.readiness_probe or c.startup_probe for c in pod.spec.containers)


def _sim_notes(annotations: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in annotations.items() if k.startswith("sim.phalanx.dev/")}


async def set_node_ready(client: Client, node_name: str, ready: bool) -> list[str]:
    """Take a node down (NotReady, unreachable taints, its pods lost) or bring it back.
    Returns the pods that were lost."""
    node = await client.get(Node, node_name)
    now = client.clock.now_dt()
    taints = [t for t in node.spec.taints or () if t.key != UNREACHABLE_TAINT]
    if not ready:
        taints += [Taint(key=UNREACHABLE_TAINT, effect="NoSchedule", time_added=now),
                   Taint(key=UNREACHABLE_TAINT, effect="NoExecute", time_added=now)]
    node.spec.taints = taints or None
    await client.update(node, returning=False)
    node = await client.get(Node, node_name)
    conds = [c for c in node.status.conditions if c.type != "Ready"]
    conds.append(NodeCondition(
        type="Ready", status="True" if ready else "Unknown",
        reason="KubeletReady" if ready else "NodeStatusUnknown",
        message="simulated kubelet is posting ready status" if ready
        else "simulated: the node stopped posting status", last_transition_time=now))
    node.status.conditions = conds
    node.status.invalidate_allocatable()
    await client.update_status(node, returning=False)
    if ready:
        return []
    # The taint manager evicts what does not tolerate NoExecute: the pods fail, then go.
    lost = []
    pods = await client.list(Pod, field_selector=f"spec.nodeName={node_name}")
    for pod in pods.items:
        if pod.is_terminal:
            continue
        await end_pod(client, pod.name, pod.namespace or "default", "Failed", exit_code=137,
                      reason="NodeLost", message=f"node {node_name} went down", restart=False)
        with contextlib.suppress(NotFound):
            await client.delete(Pod, pod.name, pod.namespace)
        lost.append(pod.name)
    return lost
