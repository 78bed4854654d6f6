"""How long a gang waits once the room it ends up using is free (requeueing, issue 21).

For every job the replay knows, `RoomWait` follows the GPUs bound pods hold on each node
(from the pod informer) and, when the job's last pod is bound, looks back at the nodes its
pods took: on each node, the moment the free GPUs last rose to what the job put there is
when that room freed; the latest of those over the job's nodes is when its room freed.
A job whose room freed after it was submitted was *blocked for room*; its wait from the room
freeing to its last pod bound is what the scheduler added on top: requeueing, backoff, the
scheduling cycles of its members, and any room another gang held at Permit meanwhile.

Only GPUs are followed (the trace's jobs are sized in GPUs); jobs without GPUs never count
as blocked. Pods that are bound and not finished hold their GPUs, as the scheduler counts them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.quantity import parse_quantity

from .tracker import PodTracker
from .workload import GPU, GPUS_PER_NODE


@dataclass(slots=True)
class _Job:
    size: int
    bound: dict[str, tuple[str, float]] = field(default_factory=dict)  # pod -> (node, GPUs)
    # node -> index into that node's history of its first pod's bind there
    first_on: dict[str, int] = field(default_factory=dict)
    room_freed: float | None = None  # loop time; None: its room was free from the start
    bound_at: float | None = None  # loop time its last pod was bound


class RoomWait:
    def __init__(self, tracker: PodTracker, sizes: dict[str, int],
                 per_node: float = GPUS_PER_NODE) -> None:
        self.per_node = per_node
        self.jobs = {name: _Job(size) for name, size in sizes.items()}
        self.held: dict[str, tuple[str, float]] = {}  # pod -> (node, GPUs)
        self.used: dict[str, float] = {}  # node -> GPUs held
        self.history: dict[str, list[tuple[float, float]]] = {}  # node -> [(time, free after)]
        tracker.informer.add_handler(self._on, lambda old, new: self._on(new), self._gone)

    def waits(self, submitted: dict[str, float], t0: float) -> dict[str, float]:
        """Job -> seconds from its room freeing to its last pod bound, for the jobs blocked
        for room (room freed after `submitted[job]`, seconds after `t0`)."""
        out: dict[str, float] = {}
        for name, job in self.jobs.items():
            if job.bound_at is None or job.room_freed is None or name not in submitted:
                continue
            if job.room_freed - t0 > submitted[name]:
                out[name] = job.bound_at - job.room_freed
        return out

    # ------------------------------------------------------------------ informer

    def _on(self, pod: Pod) -> None:
        gpus = pod_gpus(pod) if pod.spec.node_name and not pod.is_terminal else 0.0
        self._set(pod, pod.spec.node_name or "" if gpus else "", gpus)

    def _gone(self, pod: Pod) -> None:
        self._set(pod, "", 0.0)

    def _set(self, pod: Pod, node: str, gpus: float) -> None:
        key = pod.key
        old_node, old = self.held.get(key, ("", 0.0))
        if (old_node, old) == (node, gpus):
            return
        now = asyncio.get_running_loop().time()
        if old_node:
            self._change(old_node, -old, now)
            self.held.pop(key, None)
        job = self.jobs.get(pod.metadata.labels.get(labels.LABEL_PART_OF, ""))
        if node:
            if job is not None and job.bound_at is None:
                job.first_on.setdefault(node, len(self.history.get(node, ())))
                job.bound[key] = (node, gpus)
            self._change(node, gpus, now)
            self.held[key] = (node, gpus)
            if job is not None and job.bound_at is None and len(job.bound) >= job.size:
                job.bound_at = now
                job.room_freed = self._room_freed(job)
        elif job is not None and job.bound_at is None:
            job.bound.pop(key, None)

    def _change(self, node: str, delta: float, now: float) -> None:
        used = self.used.get(node, 0.0) + delta
        self.used[node] = used
        self.history.setdefault(node, []).append((now, self.per_node - used))

    def _room_freed(self, job: _Job) -> float | None:
        need: dict[str, float] = {}
        for node, gpus in job.bound.values():
            need[node] = need.get(node, 0.0) + gpus
        latest: float | None = None
        for node, amount in need.items():
            hist = self.history.get(node, [])
            first = job.first_on.get(node, 0)
            freed: float | None = None
            for i in range(first - 1, -1, -1):
                if hist[i][1] < amount:  # too little free here: the room freed after it
                    freed = hist[i + 1][0]
                    break
            if freed is not None and (latest is None or freed > latest):
                latest = freed
        return latest


def pod_gpus(pod: Pod) -> float:
    """GPUs the pod's containers request."""
    total = 0.0
    for c in pod.spec.containers:
        requests = c.resources.requests if c.resources is not None else None
        if requests and GPU in requests:
            total += float(parse_quantity(requests[GPU]))
    return total
