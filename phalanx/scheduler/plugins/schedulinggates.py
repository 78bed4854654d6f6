"""SchedulingGates: pods with spec.schedulingGates wait in the queue, never in a cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.api.core import Pod
from phalanx.scheduler.framework.config import SCHEDULING_GATES
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueueingHint,
)


@register_plugin
class SchedulingGates(Plugin):
    NAME = SCHEDULING_GATES

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return Status()
        # kube prints the names as Go prints a []string: "[foo bar]".
        names = " ".join(g.name for g in gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Only the pod whose gates went away can be helped (as kube-scheduler's hint says):
        # naming it keeps one gate removal O(1) instead of a scan of every gated pod, which
        # made lifting the gates of N pods O(N^2).
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                gates_removed_hint,
                _the_pod_itself,
            )
        ]


def gates_removed_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QueueingHint.QUEUE
    return (
        QueueingHint.QUEUE if (new.metadata.uid or new.key) == pod.uid else QueueingHint.QUEUE_SKIP
    )


def _the_pod_itself(old: Any, new: Any) -> list[str]:
    pod = new if new is not None else old
    return [pod.key] if pod is not None else []
