"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that tolerate the
`node.kubernetes.io/unschedulable:NoSchedule` taint (as kube-scheduler 1.36's plugin)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Node, Pod
from phalanx.scheduler.framework.config import NODE_UNSCHEDULABLE
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    QueueingHint,
)
from phalanx.scheduler.plugins.tainttoleration import the_pod_itself, tolerates
from phalanx.scheduler.snapshot import Snapshot

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
REASON = "node(s) were unschedulable"
_TAINT = (TAINT_UNSCHEDULABLE, "", "NoSchedule")


@register_plugin
class NodeUnschedulable(Plugin):
    NAME = NODE_UNSCHEDULABLE
    NODE_LOCAL = True
    NODE_ONLY = True

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        cordoned = snap.unschedulable[idx]
        if not cordoned.any() or tolerates(pod.pod.spec.tolerations, _TAINT):
            return FilterResult.all_pass(idx.size)
        return FilterResult.from_mask(~cordoned, REASON, unresolvable=True)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_change_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION),
                pod_toleration_hint,
                the_pod_itself,
            ),
        ]


def node_change_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Helps when a schedulable node is added, or a node is uncordoned."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.QUEUE
    uncordoned = old is not None and bool(old.spec.unschedulable) and not new.spec.unschedulable
    added_open = old is None and not new.spec.unschedulable
    return QueueingHint.QUEUE if uncordoned or added_open else QueueingHint.QUEUE_SKIP


def pod_toleration_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Helps when the pod itself now tolerates the unschedulable taint."""
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QueueingHint.QUEUE
    if (new.metadata.uid or new.key) != pod.uid:
        return QueueingHint.QUEUE_SKIP
    return (
        QueueingHint.QUEUE if tolerates(new.spec.tolerations, _TAINT) else QueueingHint.QUEUE_SKIP
    )
