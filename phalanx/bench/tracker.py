"""Follow pods through an informer: how many exist, are bound, are Running, per PodCliqueSet.

    tracker = PodTracker(client)
    await tracker.start()
    await tracker.wait(lambda t: t.running >= 10_000)     # event-driven, no polling
    tracker.by_pcs["job-7"].running

Counting keeps the keys (not just counters), so a relist after a dropped watch or a pod
delivered twice never counts twice. Handlers are O(1) per event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.cluster.client import Client
from phalanx.cluster.informer_factory import InformerFactory


def is_running(pod: Pod) -> bool:
    return pod.status.phase == "Running" and pod.is_ready


@dataclass(slots=True)
class PcsPods:
    """The pods of one PodCliqueSet, by state (keys)."""

    pods: dict[str, None] = field(default_factory=dict)
    bound: dict[str, None] = field(default_factory=dict)
    running: dict[str, None] = field(default_factory=dict)


Listener = Callable[[str, PcsPods], None]


class PodTracker:
    def __init__(self, client: Client, namespace: str | None = None) -> None:
        self.factory = InformerFactory(client)
        self.informer = self.factory.informer(Pod, namespace)
        self.informer.add_handler(self._on_add, self._on_update, self._on_delete)
        self.by_pcs: dict[str, PcsPods] = {}
        self.listeners: list[Listener] = []
        self._bound: dict[str, None] = {}
        self._running: dict[str, None] = {}
        self._changed = asyncio.Event()
        # Pods ever seen bound / Running (a deleted pod stays counted): throughput counters.
        self.ever_bound = 0
        self.ever_running = 0

    async def start(self) -> None:
        self.factory.start()
        await self.factory.wait_for_cache_sync()

    async def stop(self) -> None:
        await self.factory.stop()

    @property
    def pods(self) -> int:
        return len(self.informer)

    @property
    def bound(self) -> int:
        return len(self._bound)

    @property
    def running(self) -> int:
        return len(self._running)

    async def wait(self, predicate: Callable[[PodTracker], bool],
                   timeout: float | None = None) -> bool:
        """Until `predicate(self)` holds after some pod event (loop time). False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not predicate(self):
            self._changed.clear()
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                return predicate(self)
        return True

    # ------------------------------------------------------------------ handlers

    def _group(self, pod: Pod) -> tuple[str, PcsPods] | None:
        pcs = pod.metadata.labels.get(labels.LABEL_PART_OF)
        if not pcs:
            return None
        group = self.by_pcs.get(pcs)
        if group is None:
            group = self.by_pcs[pcs] = PcsPods()
        return pcs, group

    def _on_add(self, pod: Pod) -> None:
        self._on_update(None, pod)

    def _on_update(self, old: Pod | None, new: Pod) -> None:
        key = new.key
        found = self._group(new)
        group = found[1] if found else None
        if group is not None:
            group.pods[key] = None
        if new.spec.node_name and not new.is_terminal:
            if key not in self._bound:
                self._bound[key] = None
                self.ever_bound += 1
            if group is not None:
                group.bound[key] = None
        else:
            self._bound.pop(key, None)
            if group is not None:
                group.bound.pop(key, None)
        if is_running(new):
            if key not in self._running:
                self._running[key] = None
                self.ever_running += 1
            if group is not None:
                group.running[key] = None
        else:
            self._running.pop(key, None)
            if group is not None:
                group.running.pop(key, None)
        self._notify(found)

    def _on_delete(self, pod: Pod) -> None:
        key = pod.key
        self._bound.pop(key, None)
        self._running.pop(key, None)
        found = self._group(pod)
        if found is not None:
            pcs, group = found
            group.pods.pop(key, None)
            group.bound.pop(key, None)
            group.running.pop(key, None)
            if not group.pods:
                del self.by_pcs[pcs]
        self._notify(found)

    def _notify(self, found: tuple[str, PcsPods] | None) -> None:
        self._changed.set()
        if found is not None:
            for listener in self.listeners:
                listener(*found)
