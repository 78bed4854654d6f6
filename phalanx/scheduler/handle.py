"""The framework.Handle plugins receive: the scheduler's services, scoped to one profile."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from phalanx.api.base import Resource
from phalanx.api.core import Pod
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.types import ClusterEvent, Diagnosis, FilterResult, PodInfo
from phalanx.scheduler.framework.waiting import WaitingPodImpl

if TYPE_CHECKING:
    from phalanx.cluster.client import Client
    from phalanx.cluster.informer_factory import InformerFactory
    from phalanx.cluster.clock import Clock
    from phalanx.scheduler.framework.runtime import Framework
    from phalanx.scheduler.scheduler import Scheduler
    from phalanx.scheduler.snapshot import Snapshot


class SchedulerHandle:
    """Implements phalanx.scheduler.framework.interface.Handle for one profile."""

    def __init__(self, scheduler: Scheduler, profile_name: str) -> None:
        self._s = scheduler
        self._profile = profile_name
        self.framework: Framework | None = None  # set once the Framework is built

    @property
    def client(self) -> Client:
        return self._s.client

    @property
    def clock(self) -> Clock:
        return self._s.client.clock

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def scheduler(self) -> Scheduler:
        """The owning scheduler (for plugins that need cross-profile state)."""
        return self._s

    @property
    def informers(self) -> InformerFactory:
        """The scheduler's shared informers: register extra kinds before `start()`."""
        return self._s.informers

    def shared(self, name: str, factory: Callable[[], Any]) -> Any:
        """A scheduler-wide object for plugins (one per name across all profiles)."""
        return self._s.shared(name, factory)

    def snapshot(self) -> Snapshot:
        return self._s.cache.snapshot

    def get_waiting_pod(self, uid: str) -> WaitingPodImpl | None:
        return self._s.waiting.get(uid)

    def waiting_pods(self) -> Iterable[WaitingPodImpl]:
        return iter(self._s.waiting)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        wp = self._s.waiting.get(uid)
        if wp is None or wp.done:
            return False
        wp.reject(plugin, message)
        # Release the reservation now, not when the pod's binding task next runs: a gang's
        # BeforePostFilter rejects its waiting members so that PostFilter (preemption) sees
        # the room they held. The binding task's own forget later is a no-op.
        self._s.cache.forget(wp.info.key)
        return True

    def activate(self, pods: Iterable[PodInfo | Pod | str]) -> None:
        keys = [p if isinstance(p, str) else p.key for p in pods]
        self._s.queue.activate(keys)

    def activate_later(self, pods: Iterable[PodInfo | Pod | str], delay: float) -> None:
        """Activate the pods after `delay` seconds of the cluster's clock (a protection that
        ends then). Until then the scheduler is not idle: something is still due."""
        self._s.activate_later([p if isinstance(p, str) else p.key for p in pods], delay)

    def on_cluster_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> None:
        self._s.queue.on_event(event, old, new)

    def fit_vector(self, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        """What `pod` needs room for in this profile (Framework.fit_vector)."""
        assert self.framework is not None
        return self.framework.fit_vector(pod, self._s.cache.snapshot)

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, idx: np.ndarray) -> FilterResult:
        assert self.framework is not None
        return self.framework.run_filter_plugins(state, pod, self._s.cache.snapshot, np.asarray(idx, dtype=np.int64))

    def record_event(self, obj: Resource, event_type: str, reason: str, message: str) -> None:
        self._s.events.record(obj, event_type, reason, message)

    def set_unschedulable(self, pod: Pod, message: str) -> None:
        if self._s.update_pod_conditions:
            self._s.spawn(self._s._set_pod_scheduled_false(pod, message), f"cond-{pod.key}")

    def evict(self, victim: PodInfo | Pod, *, preemptor: PodInfo | None, message: str) -> None:
        self._s.evict(victim if isinstance(victim, Pod) else victim.pod, preemptor, message)

    def nominate(self, pod: PodInfo, node: str | None, group: str | None = None) -> None:
        self._s.nominate(pod, node, group)

    def nominated_reserved(self, priority: int, exclude: set[str]) -> np.ndarray | None:
        """Per snapshot row, the room held for nominated pods of priority >= `priority`
        (nominator.py `reserved`)."""
        return self._s.nominator.reserved(self._s.cache.snapshot, priority, exclude)

    def diagnosis(self, pod_key: str) -> Diagnosis | None:
        return self._s.diagnosis(pod_key)

    def pod_info(self, pod_key: str) -> PodInfo | None:
        return self._s.pod_info(pod_key)
