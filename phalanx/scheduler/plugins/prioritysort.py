"""PrioritySort: activeQ pops higher priority first, then the pod that has waited longest.

Within a priority, plugins may rank pods into tiers (`queue_tiers(handle)`: functions of a
PodInfo returning 0, 1, ...; the highest tier any function gives counts, lower pops first).
Coscheduling puts a gang's extra members (beyond every group's minimum) in tier 1, so when
room frees up, the pods that complete some gang's minimum are tried before extras.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.scheduler.framework.config import PRIORITY_SORT
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import PodInfo, QueuedPodInfo

TIERS_KEY = "phalanx.scheduler.queue.tiers"
Tier = Callable[[PodInfo], int]


def queue_tiers(handle: Any) -> list[Tier]:
    """The scheduler-wide list of tier functions (register by appending)."""
    shared = getattr(handle, "shared", None)
    return shared(TIERS_KEY, list) if callable(shared) else []


@register_plugin
class PrioritySort(Plugin):
    NAME = PRIORITY_SORT

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args)
        self._tiers = queue_tiers(handle)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        tier = max((fn(qpi.info) for fn in self._tiers), default=0)
        # seq breaks exact ties in insertion order, so the order never depends on hashing.
        return (-qpi.info.priority, tier, qpi.timestamp, qpi.seq)
