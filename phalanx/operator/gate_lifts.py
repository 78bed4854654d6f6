"""Gate lifts the PodClique controller made that its pod cache has not shown yet.

A reconcile that runs before the informer delivers a lift's result still sees the pod gated,
at the resourceVersion it was lifted from. Patching it again can only fail: the lift's
resourceVersion precondition answers Conflict, and the conflict requeues the clique. On a
real API server that happened to 219 of the 1,000 pods of Grove's ScaleTest_1000 (the
audit log: a second PATCH 90 ms after the first). A pod is lifted again only once the cache
shows it at another version (a newer one still gated, or a pod re-created under the name).
"""

from __future__ import annotations

from phalanx.api.core import Pod


class PendingGateLifts:
    def __init__(self) -> None:
        self._lifted_at: dict[str, str] = {}  # pod key -> the resourceVersion it was lifted from

    def __len__(self) -> int:
        return len(self._lifted_at)

    def lifted(self, pod: Pod) -> None:
        """`pod` (as cached when lifted) had its gate removed by a successful patch."""
        self._lifted_at[pod.key] = pod.metadata.resource_version or ""

    def pending(self, pod: Pod) -> bool:
        """Whether `pod`, as cached now, is one already lifted whose result is not seen yet."""
        at = self._lifted_at.get(pod.key)
        if at is None:
            return False
        if at == (pod.metadata.resource_version or ""):
            return True
        del self._lifted_at[pod.key]  # the cache moved on
        return False

    def forget(self, pod: Pod) -> None:
        self._lifted_at.pop(pod.key, None)
