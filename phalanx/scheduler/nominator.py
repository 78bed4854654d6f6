"""Nominated pods: room that preemption freed is kept for the pod it was freed for.

After a PostFilter plugin evicts victims for a pod, the pod is *nominated* to the node.
Until it is scheduled (or deleted), pods of lower priority must not take that room while
the victims terminate: a node with nominated pods of priority >= the pod's passes only if
the pod fits next to them (kube-scheduler's addNominatedPods, for resources).
"""

from __future__ import annotations

import numpy as np

from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.snapshot import Snapshot

REASON = "node(s) had room reserved for nominated pods of higher priority"


class Nominator:
    def __init__(self) -> None:
        self._by_pod: dict[str, tuple[PodInfo, str]] = {}
        self._by_node: dict[str, dict[str, PodInfo]] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def nominated_node(self, pod_key: str) -> str | None:
        entry = self._by_pod.get(pod_key)
        return entry[1] if entry else None

    def add(self, pod: PodInfo, node: str) -> None:
        self.remove(pod.key)
        self._by_pod[pod.key] = (pod, node)
        self._by_node.setdefault(node, {})[pod.key] = pod

    def remove(self, pod_key: str) -> None:
        entry = self._by_pod.pop(pod_key, None)
        if entry is not None:
            peers = self._by_node.get(entry[1], {})
            peers.pop(pod_key, None)
            if not peers:
                self._by_node.pop(entry[1], None)

    def filter_rows(self, pod: PodInfo, snap: Snapshot, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`rows` minus those where the pod no longer fits next to nominated pods of equal or
        higher priority. Returns (kept rows, removed rows)."""
        none = np.zeros(0, dtype=np.int64)
        if not self._by_node:
            return rows, none
        cols, vals = snap.request_vector(pod)
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
