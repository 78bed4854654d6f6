"""PodTopologySpread's queueing hints (kube-scheduler 1.36's isSchedulableAfterPodChange and
isSchedulableAfterNodeChange): which cluster events may make a pod it rejected schedulable.

Only DoNotSchedule constraints reject pods, so the hints read those (the pod's own, or the
profile's defaults with the pod's selector).

- A pod added, deleted or relabelled helps when it is in the pod's namespace and bound (or
  nominated) and its labels' match of some constraint's selector changes; the pod itself
  gaining a toleration helps when a constraint honours taints.
- A node added or deleted helps when it carries every constraint's topology key; an update
  when that changes, or when it carries them all and a key's value or its taints changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueueingHint,
)
from phalanx.scheduler.spread import Constraint

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

POD_ACTIONS = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
NODE_ACTIONS = (
    ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
)


def _uid(pod: Any) -> str:
    meta = pod.metadata
    return meta.uid or (f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name or "")


def involved(other: Any, pod: PodInfo) -> bool:
    """kube's involvedInTopologySpreading: the pod itself, or a bound or nominated pod of its
    namespace."""
    if _uid(other) == pod.uid:
        return True
    if not other.spec.node_name and not other.status.nominated_node_name:
        return False
    return (other.metadata.namespace or "") == pod.namespace


def _keys_present(labels: dict[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class SpreadHints:
    """Mixed into the plugin, which provides `hard_constraints(pod)`."""

    def hard_constraints(self, pod: PodInfo) -> tuple[Constraint, ...]:  # pragma: no cover
        raise NotImplementedError

    def _constraints(self, pod: PodInfo) -> tuple[Constraint, ...] | None:
        try:
            return self.hard_constraints(pod)
        except ValueError:
            return None  # kube queues on an error

    def pod_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if (new is not None and not involved(new, pod)) or (
            old is not None and not involved(old, pod)
        ):
            return SKIP
        constraints = self._constraints(pod)
        if constraints is None:
            return QUEUE
        if new is not None and old is not None:
            if (
                _uid(new) == pod.uid
                and (old.spec.tolerations or []) != (new.spec.tolerations or [])
                and any(c.honor_taints for c in constraints)
            ):
                return QUEUE
            old_labels, new_labels = old.metadata.labels or {}, new.metadata.labels or {}
            if old_labels == new_labels:
                return SKIP
            changed = any(c.matches(old_labels) != c.matches(new_labels) for c in constraints)
            return QUEUE if changed else SKIP
        other = new if new is not None else old
        matched = any(c.matches(other.metadata.labels or {}) for c in constraints)
        return QUEUE if matched else SKIP

    def node_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        constraints = self._constraints(pod)
        if constraints is None:
            return QUEUE
        was = old is not None and _keys_present(old.metadata.labels or {}, constraints)
        now = new is not None and _keys_present(new.metadata.labels or {}, constraints)
        if old is not None and new is not None:
            if was != now:
                return QUEUE
            old_labels, new_labels = old.metadata.labels or {}, new.metadata.labels or {}
            moved = any(
                old_labels.get(c.topology_key) != new_labels.get(c.topology_key)
                for c in constraints
            )
            if now and (moved or (old.spec.taints or []) != (new.spec.taints or [])):
                return QUEUE
            return SKIP
        return QUEUE if (now if new is not None else was) else SKIP

    @staticmethod
    def _unscheduled_targets(old: Any, new: Any) -> list[str] | None:
        """An unscheduled pod's event concerns other pods only when it is nominated (then
        any of them); otherwise only the pod itself."""
        other = new if new is not None else old
        if other.status.nominated_node_name:
            return None
        return [other.key]

    def spread_events(self) -> list[ClusterEventWithHint]:
        return [
            # A bound pod added, deleted or relabelled changes the counts.
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, POD_ACTIONS), self.pod_hint),
            # Unscheduled pods: the pod itself (a new label or toleration) or a nominated one.
            ClusterEventWithHint(
                ClusterEvent(
                    POD,
                    ActionType.DELETE | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATION,
                ),
                self.pod_hint,
                targets=self._unscheduled_targets,
            ),
            # A node may move a domain, enter or leave it, or change what its taints exclude.
            ClusterEventWithHint(ClusterEvent(NODE, NODE_ACTIONS), self.node_hint),
        ]


__all__ = ["SpreadHints", "involved"]
