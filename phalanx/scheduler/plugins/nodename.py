"""NodeName: a pod that names its node (spec.nodeName) fits that node only.

kube-scheduler never schedules such a pod: the API server treats it as bound, and so do the
informer handlers here (Scheduler._on_pod_add). The filter matters where a pod is checked
against nodes without being scheduled: preemption's what-ifs and `run_filter_plugins`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
)
from phalanx.scheduler.snapshot import Snapshot

# One shared Skip for the fast path (the runtime only reads a Skip's code).
SKIP = Status.skip()
NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


@register_plugin
class NodeName(Plugin):
    NAME = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        """Skip for the pods that name no node (kube has no PreFilter here: same verdicts,
        without a Filter call per cycle)."""
        return None, (Status() if pod.pod.spec.node_name else SKIP)

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return FilterResult.all_pass(idx.size)
        row = snap.row(wanted)
        return FilterResult.from_mask(idx == (-1 if row is None else row), REASON,
                                      unresolvable=True)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))]
