"""The scheduler cache: informer events and assumed pods, applied to the Snapshot.

A pod is *assumed* the moment its scheduling cycle picks a node: the snapshot counts it
there at once, so the next cycle (typically its gang peer) sees the node's reduced room
without waiting for the API. The binding cycle then either confirms it (the informer
delivers the bound pod) or the scheduler forgets it (binding failed, Permit rejected).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.scheduler.framework.types import ActionType, PodInfo, request_inputs_unchanged
from phalanx.scheduler.resources import pod_requests
from phalanx.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from phalanx.api.core import Node, Pod

log = logging.getLogger(__name__)


@dataclass(slots=True)
class AssumedPod:
    info: PodInfo
    node: str
    binding_finished: bool = False


def node_update_action(old: Node, new: Node) -> ActionType:
    """What changed between two versions of a node, as queueing cares about it."""
    action = ActionType(0)
    if old.status.allocatable != new.status.allocatable or old.status.capacity != new.status.capacity:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.spec.taints != new.spec.taints or old.spec.unschedulable != new.spec.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.status.conditions != new.status.conditions:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return action


def counts_against_node(pod: Pod) -> bool:
    """Bound and not finished: its requests occupy the node (terminating pods still do)."""
    return bool(pod.spec.node_name) and pod.status.phase not in ("Succeeded", "Failed")


class SchedulerCache:
    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.assumed: dict[str, AssumedPod] = {}
        self.bound: dict[str, PodInfo] = {}  # informer-confirmed pods counted on nodes
        # Bound pods whose node the informer has not delivered yet.
        self._orphans: dict[str, dict[str, PodInfo]] = {}

    # --- nodes --------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        self.snapshot.set_node(node)
        for info in self._orphans.pop(node.name, {}).values():
            self.snapshot.add_pod(info, node.name)

    def update_node(self, old: Node | None, new: Node) -> ActionType:
        self.snapshot.set_node(new)
        return node_update_action(old, new) if old is not None else ActionType.UPDATE

    def remove_node(self, node: Node) -> None:
        name = node.name
        for info in self.snapshot.remove_node(name):
            if info.key in self.bound:
                # Kubernetes would evict them; until then they wait for the node to return.
                self._orphans.setdefault(name, {})[info.key] = info

    # --- pods from the informer ----------------------------------------------------------

    def add_or_update_pod(self, pod: Pod) -> PodInfo | None:
        """A pod as the API reports it. Returns the PodInfo when it is now counted on a node."""
        key = pod.key
        if not counts_against_node(pod):
            self.remove_pod(key)
            return None
        node = pod.spec.node_name or ""
        assumed = self.assumed.pop(key, None)
        # A pod that starts terminating is re-counted (its row bumped): spread counts skip it.
        terminating = pod.metadata.deletion_timestamp is not None
        old = self.bound.get(key)
        counted: PodInfo | None = None  # the version the snapshot counts, still right
        if assumed is not None and assumed.node == node and not terminating \
                and _same_requests(assumed.info, pod):
            counted = assumed.info  # the bind we assumed, confirmed: counted there already
        elif old is not None and self.snapshot.pod_row(key) is not None \
                and old.pod.spec.node_name == node and _same_requests(old, pod) \
                and (old.pod.metadata.deletion_timestamp is not None) == terminating:
            counted = old  # a status update (Running, Ready...), or a relabelling
        if counted is not None:
            if counted.labels == pod.metadata.labels:
                # Keep the row untouched (its version too: cached filter results stay valid).
                counted.pod = pod
                self.bound[key] = counted
                return counted
            # Only its labels changed: the API server labels a pod it binds with its
            # node's zone and region (PodTopologyLabels), or someone relabelled it.
            info = PodInfo(pod, like=counted)
            if self.snapshot.relabel_pod(info):
                self.bound[key] = info
                return info
        # Not ours, moved, resized or terminating: counted again (requests kept when their
        # inputs are unchanged).
        info = PodInfo(pod, like=assumed.info if assumed is not None else old)
        self.bound[key] = info
        if not self.snapshot.add_pod(info, node):
            self.snapshot.remove_pod(key)
            self._orphans.setdefault(node, {})[key] = info
        return info

    def remove_pod(self, key: str) -> bool:
        """The pod is gone or finished. True when it was counted anywhere."""
        counted = key in self.bound or key in self.assumed
        self.bound.pop(key, None)
        self.assumed.pop(key, None)
        self.snapshot.remove_pod(key)
        for orphans in self._orphans.values():
            orphans.pop(key, None)
        return counted

    # --- assumed pods (scheduler) --------------------------------------------------------

    def assume(self, info: PodInfo, node: str) -> bool:
        """Count the pod on `node` now. False when the node vanished."""
        if not self.snapshot.add_pod(info, node):
            return False
        self.assumed[info.key] = AssumedPod(info, node)
        return True

    def finish_binding(self, key: str) -> None:
        a = self.assumed.get(key)
        if a is not None:
            a.binding_finished = True

    def forget(self, key: str) -> None:
        """Undo `assume` (binding failed or was rejected). A pod the informer already
        reported bound stays counted."""
        if self.assumed.pop(key, None) is not None and key not in self.bound:
            self.snapshot.remove_pod(key)

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def node_of(self, key: str) -> str | None:
        a = self.assumed.get(key)
        if a is not None:
            return a.node
        info = self.bound.get(key)
        return info.pod.spec.node_name if info is not None else None

    def pod_info(self, key: str) -> PodInfo | None:
        a = self.assumed.get(key)
        return a.info if a is not None else self.bound.get(key)


def _same_requests(info: PodInfo, pod: Pod) -> bool:
    """`pod` asks for what `info` was counted with. A later version whose request inputs
    are unchanged (a bind, a gate lift or a status write leaves them alone) asks for the
    same: no need to add the requests up again."""
    return request_inputs_unchanged(info.pod.spec, pod.spec) or info.requests == pod_requests(pod)
