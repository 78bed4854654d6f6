"""NodeResourcesFit: does the node have room (cpu, memory, pods, `nvidia.com/gpu`, any
extended resource), and how full would it be (LeastAllocated spreads, MostAllocated packs).

Scoring, kube-scheduler's `scoringStrategy` (per resource: requested incl. this pod /
allocatable, weighted; resources a node lacks do not count for or against it):

- default here: `MostAllocated` over `nvidia.com/gpu` (weight 10), cpu and memory (weight 1
  each), i.e. GPU bin-packing, as KAI does by default: a pod goes to the fullest node that
  fits it, so whole nodes stay free for large gangs instead of every node keeping a few
  stranded GPUs. CPU-only pods pack onto busy GPU nodes too.
- kube-scheduler's default (spread): `{type: LeastAllocated}` in the profile's pluginConfig;
  without `resources` it scores cpu and memory (weight 1 each), as kube-scheduler does.

```yaml
pluginConfig:
- name: NodeResourcesFit
  args: {scoringStrategy: {type: LeastAllocated}}
```
"""

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
from phalanx.scheduler.resources import CPU, GPU, MEMORY, PODS, node_allocatable
from phalanx.scheduler.snapshot import Snapshot


class ScoringType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"


class ResourceWeight(KubeModel):
    name: str
    weight: int = Field(default=1, ge=0)


# Resources scored when `resources` is not given, per strategy (see the module docstring).
DEFAULT_RESOURCES: dict[ScoringType, tuple[tuple[str, int], ...]] = {
    ScoringType.MOST_ALLOCATED: ((GPU, 10), (CPU, 1), (MEMORY, 1)),
    ScoringType.LEAST_ALLOCATED: ((CPU, 1), (MEMORY, 1)),
}


class ScoringStrategy(KubeModel):
    type: ScoringType = ScoringType.MOST_ALLOCATED
    # None: DEFAULT_RESOURCES of the type.
    resources: list[ResourceWeight] | None = None

    def weighted(self) -> list[ResourceWeight]:
        if self.resources is not None:
            return self.resources
        return [ResourceWeight(name=n, weight=w) for n, w in DEFAULT_RESOURCES[self.type]]


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
        self.weights = [(r.name, float(r.weight)) for r in strategy.weighted() if r.weight]
        self._layout: tuple[int, np.ndarray, np.ndarray] | None = None

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        cols, vals = snap.request_vector(pod)
        # Gather rows first, then columns: cheaper than np.ix_ for the few-row refreshes
        # that dominate (the signature cache re-filters only changed nodes).
        fits = (snap.allocatable[idx][:, cols] - snap.requested[idx][:, cols]) >= vals
        ok = fits.all(axis=1)
        if ok.all():
            return FilterResult(ok)
        rejections = [
            Rejection(insufficient(snap.resources[c]), ~fits[:, j])
            for j, c in enumerate(cols.tolist())
            if not fits[:, j].all()
        ]
        return FilterResult(ok, rejections)

    def _weights(self, snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
        """(columns, weights) of the scored resources in the snapshot's current layout."""
        cached = self._layout
        if cached is not None and cached[0] == snap.layout_version:
            return cached[1], cached[2]
        cols = np.asarray([snap.column(name) for name, _ in self.weights], dtype=np.int64)
        w = np.asarray([w for _, w in self.weights], dtype=np.float64)
        self._layout = (snap.layout_version, cols, w)
        return cols, w

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        cols, w = self._weights(snap)
        if cols.size == 0:
            return np.zeros(idx.size)
        alloc = snap.allocatable[idx][:, cols]
        scols, svals = snap.score_vector(pod)
        need = np.zeros(len(snap.resources))
        need[scols] = svals
        used = snap.score_requested[idx][:, cols] + need[cols]
        has = alloc > 0  # resources a node lacks do not count for (or against) it
        safe = np.where(has, alloc, 1.0)
        if self.most_allocated:
            ratio = np.minimum(used, alloc) / safe
        else:
            ratio = np.maximum(alloc - used, 0.0) / safe
        wh = has * w
        total = (ratio * wh).sum(axis=1)
        weight_sum = wh.sum(axis=1)
        return np.divide(total * MAX_NODE_SCORE, weight_sum, out=np.zeros(idx.size), where=weight_sum > 0)

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
