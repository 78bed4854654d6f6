"""Nominated pods: room that preemption freed is kept for the pod it was freed for.

After a PostFilter plugin evicts victims for a pod, the pod is *nominated* to the node.
Until it is scheduled (or deleted), pods of lower priority must not take that room while
the victims terminate: a node with nominated pods of priority >= the pod's passes only if
the pod fits next to them (kube-scheduler's addNominatedPods, for resources).

A gang's preemption nominates every member it needs to the node planned for it, as one
*group*: the room is the gang's, so it is held or released as a whole (cycle.py drops a
group once none of its nodes has anything left to free and a member fails again).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.snapshot import Snapshot

REASON = "node(s) had room reserved for nominated pods of higher priority"
FitVector = Callable[[PodInfo, Snapshot], tuple[np.ndarray, np.ndarray]]


class Nominator:
    def __init__(self) -> None:
        self._by_pod: dict[str, tuple[PodInfo, str]] = {}
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        # Group membership outlives a member's own nomination (used up when it is assumed):
        # a member that fails later still speaks for the group's remaining room.
        self._group_of: dict[str, str] = {}
        self._groups: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def nominated_node(self, pod_key: str) -> str | None:
        entry = self._by_pod.get(pod_key)
        return entry[1] if entry else None

    def add(self, pod: PodInfo, node: str, group: str | None = None) -> None:
        self.remove(pod.key)
        self._by_pod[pod.key] = (pod, node)
        self._by_node.setdefault(node, {})[pod.key] = pod
        if group is not None and self._group_of.get(pod.key) != group:
            self._leave_group(pod.key)
            self._group_of[pod.key] = group
            self._groups.setdefault(group, set()).add(pod.key)

    def group_of(self, pod_key: str) -> str | None:
        return self._group_of.get(pod_key)

    def group_nominations(self, group: str) -> list[tuple[PodInfo, str]]:
        """The group's members still nominated, with their nodes."""
        return [self._by_pod[k] for k in sorted(self._groups.get(group, ())) if k in self._by_pod]

    def drop_group(self, group: str) -> None:
        """Forget the group (its members' nominations are removed by the caller)."""
        for key in self._groups.pop(group, ()):
            self._group_of.pop(key, None)

    def forget(self, pod_key: str) -> None:
        """The pod is gone: its nomination and its group membership."""
        self.remove(pod_key)
        self._leave_group(pod_key)

    def _leave_group(self, pod_key: str) -> None:
        group = self._group_of.pop(pod_key, None)
        if group is not None:
            members = self._groups.get(group)
            if members is not None:
                members.discard(pod_key)
                if not members:
                    del self._groups[group]

    def remove(self, pod_key: str) -> None:
        entry = self._by_pod.pop(pod_key, None)
        if entry is not None:
            peers = self._by_node.get(entry[1], {})
            peers.pop(pod_key, None)
            if not peers:
                self._by_node.pop(entry[1], None)

    def reserved(self, snap: Snapshot, priority: int, exclude: set[str]) -> np.ndarray | None:
        """Per snapshot row and resource, what pods nominated there with priority >= `priority`
        (and not in `exclude`) ask for: room a preemptor must not count as free (kube's
        addNominatedPods when it selects victims). None when nothing is reserved."""
        out: np.ndarray | None = None
        for node, pods in self._by_node.items():
            row = snap.index.get(node)
            if row is None:
                continue
            for other in pods.values():
                if other.key in exclude or other.priority < priority:
                    continue
                if out is None:
                    out = np.zeros(snap.allocatable.shape)
                cols, vals = snap.request_vector(other)
                out[row, cols] += vals
        return out

    def filter_rows(self, pod: PodInfo, snap: Snapshot, rows: np.ndarray,
                    fit: FitVector | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`rows` minus those where the pod no longer fits next to nominated pods of equal or
        higher priority. Returns (kept rows, removed rows). `fit(pod, snap)`: what the pod's
        profile checks room for (Framework.fit_vector); all it requests when None."""
        none = np.zeros(0, dtype=np.int64)
        if not self._by_node:
            return rows, none
        cols, vals = fit(pod, snap) if fit is not None else snap.request_vector(pod)
        drop: list[int] = []
        for node, pods in self._by_node.items():
            row = snap.index.get(node)
            if row is None:
                continue
            reserved = np.zeros(len(snap.resources))
            for other in pods.values():
                if other.key != pod.key and other.priority >= pod.priority:
                    ocols, ovals = snap.request_vector(other)
                    reserved[ocols] += ovals
            if not reserved.any():
                continue
            free = snap.allocatable[row, cols] - snap.requested[row, cols] - reserved[cols]
            if (free < vals).any():
                drop.append(row)
        if not drop:
            return rows, none
        dropped = np.intersect1d(rows, np.asarray(drop, dtype=np.int64))
        return np.setdiff1d(rows, dropped, assume_unique=True), dropped
