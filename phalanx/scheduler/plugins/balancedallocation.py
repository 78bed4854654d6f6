"""NodeResourcesBalancedAllocation: prefer nodes whose resource use placing the pod leaves
better balanced (kube-scheduler 1.36's plugin, enabled in its default profile, weight 1).

The score compares the spread (standard deviation) of the node's used fractions of each
configured resource (default: cpu and memory) with and without the pod: 75 when the pod
changes nothing, up to 100 when it evens use out, down to 50 when it skews it. It counts
plain requests (no defaults for best-effort pods) and skips best-effort pods entirely, so
they do not all pile onto one node (kubernetes/kubernetes#129138).

```yaml
pluginConfig:
- name: NodeResourcesBalancedAllocation
  args:
    resources: [{name: cpu}, {name: memory}, {name: nvidia.com/gpu}]   # weight: 1 each
```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phalanx.scheduler import resource_scoring_rows as rows
from phalanx.scheduler.framework.config import NODE_RESOURCES_BALANCED_ALLOCATION
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.resource_args import NodeResourcesBalancedAllocationArgs
from phalanx.scheduler.resource_scoring import ResourceScorer, balanced_allocation, pod_amounts
from phalanx.scheduler.snapshot import Snapshot


@register_plugin
class NodeResourcesBalancedAllocation(Plugin):
    NAME = NODE_RESOURCES_BALANCED_ALLOCATION
    NODE_LOCAL = True
    Args = NodeResourcesBalancedAllocationArgs

    def __init__(
        self, handle: Any, args: NodeResourcesBalancedAllocationArgs | None = None
    ) -> None:
        super().__init__(handle, args or NodeResourcesBalancedAllocationArgs())
        self.names = [r.name for r in self.args.weighted()]
        self._scorer = ResourceScorer(self.names, [1] * len(self.names), non_zero=False)

    def best_effort(self, pod: PodInfo) -> bool:
        """The pod requests none of the scored resources."""
        return not any(pod_amounts(pod, self.names, non_zero=False))

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        return Status.skip() if self.best_effort(pod) else Status()

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        if self.best_effort(pod):
            return np.zeros(idx.size)
        if idx.size <= rows.SMALL:  # the usual re-score of a few changed nodes
            alloc, used, amounts, _ = self._scorer.rows(snap, pod, idx)
            return np.asarray(rows.balanced_allocation(alloc, used, amounts), dtype=np.float64)
        return balanced_allocation(self._scorer.allocation(snap, pod, idx, exact=False))
