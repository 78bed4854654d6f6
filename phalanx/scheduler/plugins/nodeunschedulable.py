"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that tolerate it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phalanx.scheduler.framework.config import NODE_UNSCHEDULABLE
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
)
from phalanx.scheduler.plugins.tainttoleration import tolerates
from phalanx.scheduler.snapshot import Snapshot

TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
REASON = "node(s) were unschedulable"


@register_plugin
class NodeUnschedulable(Plugin):
    NAME = NODE_UNSCHEDULABLE
    NODE_LOCAL = True

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        cordoned = snap.unschedulable[idx]
        if not cordoned.any():
            return FilterResult.all_pass(idx.size)
        if tolerates(pod.pod.spec.tolerations, (TAINT_UNSCHEDULABLE, "", "NoSchedule")):
            return FilterResult.all_pass(idx.size)
        return FilterResult.from_mask(~cordoned, REASON, unresolvable=True)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT))]
