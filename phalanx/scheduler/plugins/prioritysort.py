"""PrioritySort: activeQ pops higher priority first, then the pod that has waited longest."""

from __future__ import annotations

from typing import Any

from phalanx.scheduler.framework.config import PRIORITY_SORT
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import QueuedPodInfo


@register_plugin
class PrioritySort(Plugin):
    NAME = PRIORITY_SORT

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        # seq breaks exact ties in insertion order, so the order never depends on hashing.
        return (-qpi.info.priority, qpi.timestamp, qpi.seq)
