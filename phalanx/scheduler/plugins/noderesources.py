"""NodeResourcesFit: does the node have room (pods, cpu, memory, ephemeral-storage,
`nvidia.com/gpu`, any extended resource), and how full would it be, as kube-scheduler 1.36's
plugin.

Filter: "Too many pods" when the node's pod count is at its `pods` allocatable (preemption
may help); "Insufficient <resource>" per resource short of room, which preemption cannot
help on a node smaller than the request. `ignoredResources` / `ignoredResourceGroups`
exempt extended resources (`example.com/foo`, or every `example.com/*`) from the check.

Score, per `scoringStrategy` (kube's integer arithmetic, see resource_scoring.py):
`LeastAllocated` spreads, `MostAllocated` packs, `RequestedToCapacityRatio` follows a
utilisation -> score curve. Args are defaulted and validated as kube's v1 API does
(resource_args.py), with one Phalanx default: without a `scoringStrategy` the plugin packs
GPUs (`MostAllocated` over `nvidia.com/gpu` weight 10, cpu and memory weight 1), as KAI
does, so whole nodes stay free for large gangs. kube-scheduler's default (spread):

```yaml
pluginConfig:
- name: NodeResourcesFit
  args: {scoringStrategy: {type: LeastAllocated}}   # cpu and memory, weight 1 each
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Node, Pod
from phalanx.scheduler import resource_scoring_rows as rows
from phalanx.scheduler.framework.config import NODE_RESOURCES_FIT
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.resource_args import (
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    ScoringType,
)
from phalanx.scheduler.resource_scoring import (
    ResourceScorer,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
    scaled_shape,
)
from phalanx.scheduler.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended,
    node_allocatable,
    pod_requests,
)
from phalanx.scheduler.snapshot import DEFAULT_MAX_PODS, Snapshot

__all__ = [
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "ResourceSpec",
    "ScoringStrategy",
    "ScoringType",
    "fits_empty_node",
    "insufficient",
    "is_fit",
    "requested_resources_increased",
]

# kube reports reasons in this order; other (scalar) resources follow by name.
_ORDER = {PODS: 0, CPU: 1, MEMORY: 2, EPHEMERAL_STORAGE: 3}


def _reason_order(r: Rejection) -> tuple[int, str]:
    name = PODS if r.reason == "Too many pods" else r.reason.removeprefix("Insufficient ")
    return _ORDER.get(name, 4), name


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
        self.strategy = strategy.type
        weighted = strategy.weighted()
        self.names = [r.name for r in weighted]
        self.weights = [r.weight for r in weighted]
        self._scorer = ResourceScorer(self.names, self.weights, non_zero=True)
        self.shape = strategy.shape()
        self._scaled_shape = scaled_shape(self.shape)
        self.ignored = frozenset(self.args.ignored_resources)
        self.ignored_groups = frozenset(self.args.ignored_resource_groups)
        # (snapshot, its layout_version, which of its columns Filter ignores)
        self._ignored_cols: tuple[Snapshot, int, np.ndarray] | None = None

    @property
    def most_allocated(self) -> bool:
        return self.strategy == ScoringType.MOST_ALLOCATED

    def _ignored(self, name: str) -> bool:
        if not is_extended(name):
            return False
        return name in self.ignored or name.split("/", 1)[0] in self.ignored_groups

    def fit_vector(self, pod: PodInfo, snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
        """The columns and amounts Filter checks (`pods`: 1 included), ignored ones left
        out. The profile's gang room checks and preemption read it too (Framework.fit_vector)."""
        cols, vals = snap.request_vector(pod)
        if not self.ignored and not self.ignored_groups:
            return cols, vals
        c = self._ignored_cols
        if c is None or c[0] is not snap or c[1] != snap.layout_version:
            mask = np.asarray([self._ignored(r) for r in snap.resources], dtype=bool)
            c = self._ignored_cols = (snap, snap.layout_version, mask)
        drop = c[2][cols]
        if not drop.any():
            return cols, vals
        return cols[~drop], vals[~drop]

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        cols, vals = self.fit_vector(pod, snap)
        if idx.size <= rows.SMALL and _all_fit(snap, idx, cols, vals):
            return FilterResult.all_pass(idx.size)
        # Gather rows first, then columns: cheaper than np.ix_ for the few-row refreshes
        # that dominate (the signature cache re-filters only changed nodes).
        alloc = snap.allocatable[idx][:, cols]
        fits = (alloc - snap.requested[idx][:, cols]) >= vals
        ok = fits.all(axis=1)
        if ok.all():
            return FilterResult(ok)
        rejections: list[Rejection] = []
        for j, c in enumerate(cols.tolist()):
            short = ~fits[:, j]
            if not short.any():
                continue
            name = snap.resources[c]
            if name == PODS:  # a full node may empty: preemption can help
                rejections.append(Rejection(insufficient(name), short))
                continue
            too_small = short & (vals[j] > alloc[:, j])
            if (short & ~too_small).any():
                rejections.append(Rejection(insufficient(name), short & ~too_small))
            if too_small.any():
                rejections.append(Rejection(insufficient(name), too_small, True))
        rejections.sort(key=_reason_order)
        return FilterResult(ok, rejections)

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        if idx.size <= rows.SMALL:  # the usual re-score of a few changed nodes
            alloc, used, amounts, weights = self._scorer.rows(snap, pod, idx)
            if self.strategy == ScoringType.LEAST_ALLOCATED:
                few = rows.least_allocated(alloc, used, amounts, weights)
            elif self.strategy == ScoringType.MOST_ALLOCATED:
                few = rows.most_allocated(alloc, used, amounts, weights)
            else:
                few = rows.requested_to_capacity_ratio(
                    alloc, used, amounts, weights, self._scaled_shape
                )
            return np.asarray(few, dtype=np.float64)
        a = self._scorer.allocation(snap, pod, idx)
        if self.strategy == ScoringType.LEAST_ALLOCATED:
            out = least_allocated(a)
        elif self.strategy == ScoringType.MOST_ALLOCATED:
            out = most_allocated(a)
        else:
            out = requested_to_capacity_ratio(a, self.shape)
        return out.astype(np.float64)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                pod_event_hint,
            ),
            # A pending pod's deletion frees room only if it was nominated (held room).
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE), pod_event_hint, _if_nominated
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                node_change_hint,
            ),
        ]


def _all_fit(snap: Snapshot, idx: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> bool:
    """Every row of `idx` has room for `vals` in `cols`: the filter's test on the few rows a
    refresh re-checks (usually one), in Python floats, the same float64 subtraction and
    comparison as the vectorised test at a fraction of NumPy's cost per call. A rejection
    is left to the vectorised path, which words it."""
    alloc, used = snap.allocatable.item, snap.requested.item
    needs = list(zip(cols.tolist(), vals.tolist(), strict=True))
    return all(alloc(r, c) - used(r, c) >= v for r in idx.tolist() for c, v in needs)


def _if_nominated(old: Any, new: Any) -> list[str] | None:
    pod = old if isinstance(old, Pod) else None
    return None if pod is not None and pod.status.nominated_node_name else []


def pod_event_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A bound (or nominated) pod deleted or finished frees room; a bound pod scaled down
    helps if a resource this pod asks for shrank; the pod's own scale-down helps it."""
    if not isinstance(old, Pod) or (new is not None and not isinstance(new, Pod)):
        return QueueingHint.QUEUE
    if new is None or new.is_terminal:
        if not old.spec.node_name and not old.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
    if (new.metadata.uid or new.key) == pod.uid:
        return QueueingHint.QUEUE
    if not new.spec.node_name:
        return QueueingHint.QUEUE_SKIP
    before, after = pod_requests(old), pod_requests(new)
    shrank = any(before.get(r, 0.0) > after.get(r, 0.0) for r in pod.requests)
    return QueueingHint.QUEUE if shrank else QueueingHint.QUEUE_SKIP


def fits_empty_node(requests: dict[str, float], alloc: dict[str, float]) -> bool:
    """Whether an empty node with `alloc` takes a pod asking `requests`."""
    if alloc.get(PODS, DEFAULT_MAX_PODS) < 1:
        return False
    return all(v <= alloc.get(name, 0.0) for name, v in requests.items())


def is_fit(pod: PodInfo, node: Node | None) -> bool:
    """kube's isFit: the pod fits the node when nothing else runs there."""
    return node is not None and fits_empty_node(pod.requests, node_allocatable(node))


def requested_resources_increased(pod: PodInfo, old: Node, new: Node) -> bool:
    """kube's haveAnyRequestedResourcesIncreased: more pods allowed, or more of a resource
    the pod asks for."""
    before, after = node_allocatable(old), node_allocatable(new)
    if after.get(PODS, DEFAULT_MAX_PODS) > before.get(PODS, DEFAULT_MAX_PODS):
        return True
    return any(after.get(r, 0.0) > before.get(r, 0.0) for r in pod.requests)


def node_change_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A node added that an empty node of its size would fit the pod on, or one whose
    allocatable of something the pod asks for (or of pods) grew, and that now fits it."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.QUEUE
    if not is_fit(pod, new):
        return QueueingHint.QUEUE_SKIP
    if old is None or requested_resources_increased(pod, old, new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
