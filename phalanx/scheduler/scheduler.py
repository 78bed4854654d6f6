"""The Scheduler: queue -> scheduling cycle -> binding cycle, one Framework per profile.

The scheduling cycle (PreFilter .. Permit) is synchronous: it runs against the live
snapshot with no await, so nothing changes under it and nothing needs copying. The binding
cycle (WaitOnPermit, PreBind, Bind) is one asyncio task per pod, so a gang's members wait
at Permit concurrently while the loop keeps scheduling their peers.
"""

from __future__ import annotations

import asyncio
import math
import logging
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from phalanx.api.core import Node, Pod
from phalanx.cluster.client import ApiError, NotFound
from phalanx.cluster.informer_factory import InformerFactory
from phalanx.scheduler.cache import SchedulerCache
from phalanx.scheduler.cycle import SchedulingCycle
from phalanx.scheduler.events import new_event_recorder
from phalanx.scheduler.framework.config import (
    SchedulerConfiguration,
    SchedulerProfile,
    default_configuration,
)
from phalanx.scheduler.framework.pluginargs import configuration_args
from phalanx.scheduler.framework.runtime import Framework, ProfileError
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    Diagnosis,
    PodInfo,
)
from phalanx.scheduler.framework.waiting import WaitingPods
from phalanx.scheduler.handle import SchedulerHandle
from phalanx.scheduler.nominator import Nominator
from phalanx.scheduler.resources import pod_requests
from phalanx.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

log = logging.getLogger(__name__)


class Scheduler(SchedulingCycle):
    """A gang-aware kube-scheduler for one cluster.

    `profiles`: a SchedulerConfiguration, a list of SchedulerProfile, or None for one default
    profile per schedulerName in contracts.md (default-scheduler, kai-scheduler, volcano,
    koord-scheduler, phalanx-scheduler). Pods whose spec.schedulerName no profile serves are
    left alone (another scheduler owns them).

        scheduler = Scheduler(client)
        await scheduler.start()         # informers synced, loop running
        await scheduler.wait_idle()     # nothing left to try right now
        scheduler.diagnosis("ns/pod")   # why a pod is pending
        await scheduler.stop()
    """

    def __init__(
        self,
        client: Client,
        profiles: SchedulerConfiguration | Sequence[SchedulerProfile] | None = None,
        *,
        informers: InformerFactory | None = None,
        record_events: bool = True,
        update_pod_conditions: bool = True,
    ) -> None:
        self.client = client
        if profiles is None:
            self.config = default_configuration()
        elif isinstance(profiles, SchedulerConfiguration):
            self.config = profiles
        else:
            self.config = SchedulerConfiguration(profiles=list(profiles))
        if not self.config.profiles:
            raise ProfileError("at least one scheduler profile is required")
        self.informers = informers or InformerFactory(client)
        self._own_informers = informers is None
        self.cache = SchedulerCache()
        self.waiting = WaitingPods()
        self.nominator = Nominator()
        self.events = new_event_recorder(client)
        self.events.enabled = record_events
        self.update_pod_conditions = update_pod_conditions
        self._shared: dict[str, Any] = {}
        self._diagnoses: dict[str, Diagnosis] = {}
        self._rng = random.Random(self.config.seed)
        self._next_start_row = 0
        self.handles: dict[str, SchedulerHandle] = {}
        self.frameworks: dict[str, Framework] = {}
        # Every profile's pluginConfig args, enabled plugins or not (kube validates them all).
        profile_args = configuration_args(self.config)
        for prof, args in zip(self.config.profiles, profile_args, strict=True):
            handle = SchedulerHandle(self, prof.scheduler_name)
            fw = Framework(prof, handle, self.waiting, args)
            if prof.percentage_of_nodes_to_score is None:
                fw.percentage_of_nodes_to_score = self.config.percentage_of_nodes_to_score
            handle.framework = fw
            self.handles[prof.scheduler_name] = handle
            self.frameworks[prof.scheduler_name] = fw
        sorts = {fw.queue_sort.NAME for fw in self.frameworks.values()}
        if len(sorts) > 1:
            raise ProfileError(f"all profiles must use the same queueSort plugin, got {sorted(sorts)}")
        self.queue = SchedulingQueue(
            self.frameworks,
            lambda: self.client.clock.monotonic(),
            initial_backoff=self.config.pod_initial_backoff_seconds,
            max_backoff=self.config.pod_max_backoff_seconds,
            max_in_unschedulable=self.config.pod_max_in_unschedulable_pods_duration_seconds,
        )
        self._node_informer = self.informers.informer(Node)
        self._pod_informer = self.informers.informer(Pod)
        self._node_informer.add_handler(self._on_node_add, self._on_node_update, self._on_node_delete)
        self._pod_informer.add_handler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        self._loop_task: asyncio.Task[None] | None = None
        self._binding: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._due: dict[str, float] = {}  # pod key -> when activate_later wakes it
        self._in_cycle = False
        self._started = False
        self._crashed: dict[str, None] = {}  # pods whose cycle raised (traceback logged once)
        # Counters (bench and tests).
        self.scheduled = 0
        self.attempts = 0
        self.failures = 0
        self.bind_failures = 0
        self.evicted: set[str] = set()  # pods this scheduler evicted, not yet deleted

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self, *, sync_timeout: float | None = 60.0) -> None:
        """Start informers, wait for their sync, then run the scheduling loop in the background."""
        if self._started:
            return
        self._started = True
        self.events.start()
        # Plugins may prepare before the informers start (e.g. the gang plugins watch only
        # the scheduler kinds the server serves): an optional `async def start(self)`.
        started: set[int] = set()
        for fw in self.frameworks.values():
            for plugin in fw.plugins.values():
                hook = getattr(plugin, "start", None)
                if callable(hook) and id(plugin) not in started:
                    started.add(id(plugin))
                    await hook()
        if self._own_informers:
            self.informers.start()
        if not await self.informers.wait_for_cache_sync(sync_timeout):
            raise TimeoutError("scheduler informers did not sync")
        self._loop_task = asyncio.get_running_loop().create_task(self._run(), name="scheduler-loop")

    async def stop(self) -> None:
        """Stop the loop; cancel binding cycles (reservations released); stop informers."""
        if not self._started:
            return
        self._started = False
        self.queue.close()
        if self._loop_task is not None:
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None
        for wp in list(self.waiting):
            wp.reject("", "scheduler stopped")
        tasks = list(self._binding.values()) + list(self._background)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.events.stop(flush=True)
        if self._own_informers:
            await self.informers.stop()

    def is_idle(self) -> bool:
        return (
            not self._in_cycle
            and not self.queue.has_work()
            and not self._binding
            and not self._background
            and self.events.idle
        )

    async def wait_idle(self, timeout: float | None = None, *, poll: float = 0.05) -> bool:
        """Wait until activeQ and backoffQ are empty, no cycle runs, no pod waits at Permit
        or binds, and queued events are written. Loop time (virtual in the embedded cluster).
        Returns False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        stable = 0
        while True:
            # Idle twice in a row: informer events triggered by our own writes are handled.
            stable = stable + 1 if self.is_idle() else 0
            if stable >= 2:
                return True
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(poll if stable == 0 else 0)

    # --- services for plugins (via SchedulerHandle) --------------------------------------

    def next_due(self) -> float | None:
        """Loop time of the earliest write a shared plugin object has scheduled for later
        (the queue status pass), or None: idle is not settled while one is due."""
        times = [t for obj in self._shared.values()
                 if (due := getattr(obj, "next_due", None)) is not None
                 and (t := due()) is not None]
        return min(times, default=None)

    def shared(self, name: str, factory: Callable[[], Any]) -> Any:
        """A scheduler-wide singleton for plugins (e.g. one gang cache for all profiles)."""
        obj = self._shared.get(name)
        if obj is None:
            obj = self._shared[name] = factory()
        return obj

    def diagnosis(self, pod_key: str) -> Diagnosis | None:
        """Why `namespace/name` last failed to schedule (per-filter node counts), or None."""
        return self._diagnoses.get(pod_key)

    def diagnoses(self) -> dict[str, Diagnosis]:
        return dict(self._diagnoses)

    def pod_info(self, pod_key: str) -> PodInfo | None:
        qpi = self.queue.get(pod_key)
        return qpi.info if qpi is not None else self.cache.pod_info(pod_key)

    def spawn(self, coro: Any, name: str = "") -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name or None)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def activate_later(self, keys: list[str], delay: float) -> None:
        """`queue.activate(keys)` after `delay` seconds; a key already due no later is left."""
        due = self.client.clock.monotonic() + max(delay, 0.0)
        keys = [k for k in keys if self._due.get(k, math.inf) > due]
        if not keys:
            return
        for k in keys:
            self._due[k] = due

        async def later() -> None:
            await asyncio.sleep(max(delay, 0.0))
            for k in keys:
                if self._due.get(k) == due:
                    del self._due[k]
            self.queue.activate(keys)

        self.spawn(later(), name="activate-later")

    def evict(self, victim: Pod, preemptor: PodInfo | None, message: str) -> None:
        self.evicted.add(victim.key)  # until its delete arrives (nominations wait for it)
        async def delete() -> None:
            try:
                await self.client.delete(Pod, victim.name, victim.namespace, uid=victim.metadata.uid)
            except NotFound:
                self.evicted.discard(victim.key)  # already gone: no delete event to wait for
                return
            except ApiError as exc:
                log.warning("preemption of %s failed: %s", victim.key, exc)
                return
            self.events.record(victim, "Normal", "Preempted", message)

        self.spawn(delete(), f"evict-{victim.key}")

    def nominate(self, pod: PodInfo, node: str | None, group: str | None = None) -> None:
        """Keep `node`'s freed room for `pod` (None clears) and record it on the pod status;
        `group` ties it to the other members nominated for the same gang (nominator.py)."""
        if node is None:
            if self.nominator.nominated_node(pod.key) is None:
                return
            self.nominator.remove(pod.key)
        else:
            known = self.nominator.nominated_node(pod.key) == node
            self.nominator.add(pod, node, group)
            if known:
                return  # already recorded (the PostFilter result repeats the plugin's own)

        async def patch() -> None:
            try:
                await self.client.patch(Pod, pod.name, {"status": {"nominatedNodeName": node}},
                                        pod.namespace, subresource="status", returning=False)
            except ApiError as exc:
                log.debug("nominating %s failed: %s", pod.key, exc)

        self.spawn(patch(), f"nominate-{pod.key}")

    # --- informer handlers ----------------------------------------------------------------

    def _on_node_add(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.on_event(ClusterEvent(NODE, ActionType.ADD), None, node)

    def _on_node_update(self, old: Node, new: Node) -> None:
        action = self.cache.update_node(old, new)
        if action:
            self.queue.on_event(ClusterEvent(NODE, action), old, new)

    def _on_node_delete(self, node: Node) -> None:
        self.cache.remove_node(node)
        self.queue.on_event(ClusterEvent(NODE, ActionType.DELETE), node, None)

    def _responsible(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.frameworks

    def _on_pod_add(self, pod: Pod) -> None:
        if pod.spec.node_name:
            if self.cache.add_or_update_pod(pod) is not None:
                self.queue.on_event(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, pod)
            return
        if self._responsible(pod) and pod.metadata.deletion_timestamp is None and not pod.is_terminal:
            self.queue.add(PodInfo(pod))
            self.queue.on_event(ClusterEvent(POD, ActionType.ADD), None, pod)

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        key = new.key
        if new.spec.node_name:
            self.queue.delete(key)
            before = self.cache.pod_info(key)
            after = self.cache.add_or_update_pod(new)
            if after is None:
                if before is not None:
                    # finished (Succeeded/Failed): its room is free again
                    self.queue.on_event(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), old, new)
            elif not old.spec.node_name:
                self.queue.on_event(ClusterEvent(ASSIGNED_POD, ActionType.ADD), old, new)
            elif before is not None and after is not before:
                # The cache rebuilt the pod's info: its labels or requests changed.
                action = assigned_pod_change(before, after)
                if action:
                    self.queue.on_event(ClusterEvent(ASSIGNED_POD, action), old, new)
            return
        if not self._responsible(new):
            return
        if new.metadata.deletion_timestamp is not None or new.is_terminal:
            self._drop_pending(key, "pod is being deleted")
            return
        if self.cache.is_assumed(key):
            return  # in its binding cycle; the bind result will tell
        if old.spec != new.spec or old.metadata.labels != new.metadata.labels or old.metadata.annotations != new.metadata.annotations:
            queued = self.queue.get(key)
            before = queued.info if queued is not None and queued.info.pod is old else None
            info = PodInfo(new, like=before)
            self.queue.update(info)
            self.queue.on_event(ClusterEvent(POD, pending_pod_change(old, new, info, before)),
                                old, new)

    def _on_pod_delete(self, pod: Pod) -> None:
        key = pod.key
        self.nominator.forget(key)
        self.evicted.discard(key)
        self.events.forget(pod.metadata.uid or key)
        self._diagnoses.pop(key, None)
        self._crashed.pop(key, None)
        if pod.spec.node_name or self.cache.pod_info(key) is not None:
            self._drop_pending(key, "pod deleted")
            if self.cache.remove_pod(key):
                self.queue.on_event(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), pod, None)
            return
        self._drop_pending(key, "pod deleted")
        self.queue.on_event(ClusterEvent(POD, ActionType.DELETE), pod, None)

    def _drop_pending(self, key: str, why: str) -> None:
        self.queue.delete(key)
        info = self.cache.pod_info(key)
        if info is not None and self.cache.is_assumed(key):
            wp = self.waiting.get(info.uid)
            if wp is not None:
                wp.reject("", why)

    # --- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            qpi = await self.queue.pop()
            if qpi is None:
                return
            self._in_cycle = True
            try:
                self.schedule_one(qpi)
            except Exception as exc:
                # A bug, not a verdict on the pod: the traceback once per pod, then one line
                # per retry (the pod goes back to the queue with backoff either way).
                if qpi.key in self._crashed:
                    log.error("scheduling cycle of %s crashed again (%s: %s); retrying with "
                              "backoff", qpi.key, type(exc).__name__, exc)
                else:
                    self._crashed[qpi.key] = None
                    log.exception("scheduling cycle of %s crashed", qpi.key)
                from phalanx.scheduler.framework.status import Status

                self.queue.requeue_failed(qpi, Status.error("internal error"))
            finally:
                self._in_cycle = False
            # Let informers and binding cycles run between pods.
            await asyncio.sleep(0)


def pending_pod_change(old: Pod, new: Pod, info: PodInfo,
                       old_info: PodInfo | None = None) -> ActionType:
    """What changed on an unscheduled pod, as registrations name it (kube's
    PodSchedulingPropertiesChange; several at once): gates lifted, labels, tolerations,
    smaller requests; UPDATE_OTHER for anything else. `old_info`: `old`'s info, if known."""
    action = ActionType(0)
    if old.spec.scheduling_gates and not new.spec.scheduling_gates:
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_POD_LABEL
    if old.spec.tolerations != new.spec.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATION
    if old.spec != new.spec:
        before = old_info.requests if old_info is not None else pod_requests(old)
        if before is not info.requests and any(info.requests.get(r, 0.0) < v for r, v in before.items()):
            action |= ActionType.UPDATE_POD_SCALE_DOWN
    return action or ActionType.UPDATE_OTHER


def assigned_pod_change(before: PodInfo, after: PodInfo) -> ActionType:
    """What changed on a bound pod that other pods' placement may depend on (kube's
    PodSchedulingPropertiesChange): its labels, or smaller requests (room freed)."""
    action = ActionType(0)
    if before.labels != after.labels:
        action |= ActionType.UPDATE_POD_LABEL
    if any(after.requests.get(r, 0.0) < v for r, v in before.requests.items()):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    return action


__all__ = ["Scheduler", "assigned_pod_change", "np", "pending_pod_change"]
