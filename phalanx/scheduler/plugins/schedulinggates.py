"""SchedulingGates: pods with spec.schedulingGates wait in the queue, never in a cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.scheduler.framework.config import SCHEDULING_GATES
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import POD, ActionType, ClusterEvent, ClusterEventWithHint, PodInfo


@register_plugin
class SchedulingGates(Plugin):
    NAME = SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return Status()
        names = ", ".join(g.name for g in gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Only the pod whose gates went away can be helped (as kube-scheduler's hint says):
        # naming it keeps one gate removal O(1) instead of a scan of every gated pod, which
        # made lifting the gates of N pods O(N^2).
        return [ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                                     targets=_the_pod_itself)]


def _the_pod_itself(old: Any, new: Any) -> list[str]:
    pod = new if new is not None else old
    return [pod.key] if pod is not None else []
