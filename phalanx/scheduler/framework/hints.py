"""Queueing-hint building blocks for events that free room on nodes.

A plugin that rejects a pod for lack of room (its own count of room, as Coscheduling's
whole-gang check) registers the events that can add room and decides per pod with these:

- an assigned pod deleted, finished (Succeeded/Failed) or scaled down, or a reservation
  released: its requests are free again (`AssignedPod` DELETE / UPDATE_POD_SCALE_DOWN);
- a node added that an empty node of its size would fit the pod on;
- a node updated so that more may fit: allocatable of a requested resource grew, the node
  was uncordoned, a taint went away, or its labels changed (a filter may now pass it);
  more `pods` allowed counts as growth.

Cordoning, a new taint or a shrinking node never helps, so those updates are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from phalanx.scheduler.resources import PODS, node_allocatable

from .types import ASSIGNED_POD, NODE, ActionType, ClusterEvent

if TYPE_CHECKING:
    from phalanx.api.core import Node

# The events after which a pod rejected for room may fit (kube-scheduler's NodeResourcesFit
# registers the first two; the node taint/label updates stand for the filters whose verdict
# decided which nodes' room counted).
ROOM_FREED = ClusterEvent(
    ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN, "AssignedPodRoomFreed"
)
NODE_GREW = ClusterEvent(
    NODE,
    ActionType.ADD
    | ActionType.UPDATE_NODE_ALLOCATABLE
    | ActionType.UPDATE_NODE_TAINT
    | ActionType.UPDATE_NODE_LABEL,
    "NodeRoomChanged",
)


def empty_node_fits(requests: Mapping[str, float], node: Node) -> bool:
    """Whether an empty node of `node`'s size would take a pod asking `requests`."""
    alloc = node_allocatable(node)
    return all(alloc.get(name, 0.0) >= v for name, v in requests.items())


def node_change_may_help(
    shapes: Iterable[Mapping[str, float]], old: Node | None, new: Node | None
) -> bool:
    """A node event (old None: added; new None: deleted) may fit more pods of these request
    shapes than before."""
    if new is None:
        return False
    if old is None:
        return any(empty_node_fits(s, new) for s in shapes)
    before, after = node_allocatable(old), node_allocatable(new)
    wanted = {name for s in shapes for name in s} | {PODS}
    if any(after.get(r, 0.0) > before.get(r, 0.0) for r in wanted):
        return True
    if old.spec.unschedulable and not new.spec.unschedulable:
        return True
    kept = new.spec.taints or []
    if any(t not in kept for t in old.spec.taints or []):
        return True
    return old.metadata.labels != new.metadata.labels


__all__ = ["NODE_GREW", "ROOM_FREED", "empty_node_fits", "node_change_may_help"]
