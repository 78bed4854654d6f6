"""NodeResourcesFit: does the node have room (cpu, memory, pods, `nvidia.com/gpu`, any
extended resource), and how full would it be (LeastAllocated spreads, MostAllocated packs)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import Field

from phalanx.api.base import KubeModel
from phalanx.api.core import Node
from phalanx.scheduler.framework.config import NODE_RESOURCES_FIT
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.resources import CPU, MEMORY, PODS, node_allocatable
from phalanx.scheduler.snapshot import Snapshot


class ScoringType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"


class ResourceWeight(KubeModel):
    name: str
    weight: int = Field(default=1, ge=0)


class ScoringStrategy(KubeModel):
    type: ScoringType = ScoringType.LEAST_ALLOCATED
    resources: list[ResourceWeight] = Field(
        default_factory=lambda: [ResourceWeight(name=CPU), ResourceWeight(name=MEMORY)]
    )


class NodeResourcesFitArgs(KubeModel):
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)


def insufficient(resource: str) -> str:
    return "Too many pods" if resource == PODS else f"Insufficient {resource}"


@register_plugin
class NodeResourcesFit(Plugin):
    NAME = NODE_RESOURCES_FIT
    NODE_LOCAL = True
    Args = NodeResourcesFitArgs

    def __init__(self, handle: Any, args: NodeResourcesFitArgs | None = None) -> None:
        super().__init__(handle, args or NodeResourcesFitArgs())
        strategy = self.args.scoring_strategy
        self.most_allocated = strategy.type == ScoringType.MOST_ALLOCATED
        self.weights = [(r.name, float(r.weight)) for r in strategy.resources if r.weight]

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        cols, vals = snap.request_vector(pod)
        grid = np.ix_(idx, cols)
        fits = (snap.allocatable[grid] - snap.requested[grid]) >= vals
        ok = fits.all(axis=1)
        if ok.all():
            return FilterResult(ok)
        rejections = [
            Rejection(insufficient(snap.resources[c]), ~fits[:, j])
            for j, c in enumerate(cols.tolist())
            if not fits[:, j].all()
        ]
        return FilterResult(ok, rejections)

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        total = np.zeros(idx.size, dtype=np.float64)
        weight_sum = np.zeros(idx.size, dtype=np.float64)
        for name, w in self.weights:
            col = snap.resource_index.get(name)
            if col is None:
                continue
            alloc = snap.allocatable[idx, col]
            if name == CPU:
                used = snap.score_requested[idx, 0] + pod.score_requests[CPU]
            elif name == MEMORY:
                used = snap.score_requested[idx, 1] + pod.score_requests[MEMORY]
            else:
                used = snap.requested[idx, col] + pod.requests.get(name, 0.0)
            has = alloc > 0
            safe = np.where(has, alloc, 1.0)
            if self.most_allocated:
                s = np.minimum(used, alloc) * MAX_NODE_SCORE / safe
            else:
                s = np.maximum(alloc - used, 0.0) * MAX_NODE_SCORE / safe
            total += np.where(has, w * s, 0.0)
            weight_sum += np.where(has, w, 0.0)
        return np.divide(total, weight_sum, out=np.zeros_like(total), where=weight_sum > 0)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), _node_could_fit),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)),
        ]


def _node_could_fit(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A new or grown node helps only if an empty one of its size would fit the pod."""
    if not isinstance(new, Node):
        return QueueingHint.QUEUE
    alloc = node_allocatable(new)
    for name, v in pod.requests.items():
        if alloc.get(name, 0.0) < v:
            return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
