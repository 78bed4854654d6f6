"""NodePorts: a pod's host ports must be free on the node (kube-scheduler's nodeports plugin).

Ports in use are counted per snapshot row, for bound and assumed pods alike
(Snapshot.host_ports, see phalanx.scheduler.hostports), so the members of a gang placed
earlier in the same attempt already hold theirs. Pods without host ports skip the plugin at
PreFilter; for the others Filter looks only at the rows where one of their ports is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Pod
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    QueueingHint,
)
from phalanx.scheduler.hostports import fits, pod_host_ports
from phalanx.scheduler.snapshot import Snapshot

# One shared Skip for the fast path (the runtime only reads a Skip's code).
SKIP = Status.skip()
NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
_STATE = "PreFilterNodePorts"


@register_plugin
class NodePorts(Plugin):
    NAME = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snap: Snapshot) -> tuple[PreFilterResult | None, Status]:
        ports = pod.host_ports
        if not ports:
            return None, SKIP
        state.write(_STATE, ports)
        return None, Status()

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot,
               idx: np.ndarray) -> FilterResult:
        ports = state.read(_STATE)
        if ports is None:  # PreFilter did not run (kube: an error status)
            ports = pod.host_ports
        if not ports:
            return FilterResult.all_pass(idx.size)
        taken = snap.host_ports.conflict_mask(ports, idx)
        return FilterResult.from_mask(~taken, REASON)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # Ports are immutable; only a pod leaving a node frees them.
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
                                 after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ]


def after_pod_deleted(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPodDeleted: the deleted pod held one of the ports this pod wants."""
    deleted = old
    if not isinstance(deleted, Pod):  # kube: an error, and Queue
        return QueueingHint.QUEUE
    if not deleted.spec.node_name and not deleted.status.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    used = pod_host_ports(deleted)
    if not used:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE_SKIP if fits(pod.host_ports, used) else QueueingHint.QUEUE
