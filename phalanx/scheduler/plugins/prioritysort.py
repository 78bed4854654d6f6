"""PrioritySort: activeQ pops higher priority first, then the pod that has waited longest.

Within a priority, plugins may rank pods into tiers (`queue_tiers(handle)`: functions of a
PodInfo returning 0, 1, ...; the highest tier any function gives counts, lower pops first).
Coscheduling puts a gang's extra members (beyond every group's minimum) in tier 1, so when
room frees up, the pods that complete some gang's minimum are tried before extras.

Before priority, a queue order may rank pods (`queue_orders(handle)`: the first function's
key counts). With KAI Queues, QueueCapacity registers the fair-share order
(phalanx/scheduler/queues/order.py): the queue furthest below its share goes first, priority
orders pods within a queue. Without queues its key is the same for every pod. Such keys
change as queues fill, so the queue re-checks the head's key when it pops it
(`keys_may_change`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.scheduler.framework.config import PRIORITY_SORT
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import PodInfo, QueuedPodInfo

TIERS_KEY = "phalanx.scheduler.queue.tiers"
ORDERS_KEY = "phalanx.scheduler.queue.orders"
Tier = Callable[[PodInfo], int]


def queue_tiers(handle: Any) -> list[Tier]:
    """The scheduler-wide list of tier functions (register by appending)."""
    shared = getattr(handle, "shared", None)
    return shared(TIERS_KEY, list) if callable(shared) else []


def queue_orders(handle: Any) -> list[Any]:
    """The scheduler-wide queue orders: objects with `key(PodInfo) -> tuple` and
    `changing() -> bool` (whether keys may differ from when pods were queued)."""
    shared = getattr(handle, "shared", None)
    return shared(ORDERS_KEY, list) if callable(shared) else []


@register_plugin
class PrioritySort(Plugin):
    NAME = PRIORITY_SORT

    def __init__(self, handle: Any, args: Any = None) -> None:
        super().__init__(handle, args)
        self._tiers = queue_tiers(handle)
        self._orders = queue_orders(handle)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        tier = max((fn(qpi.info) for fn in self._tiers), default=0)
        order = self._orders[0].key(qpi.info) if self._orders else ()
        # seq breaks exact ties in insertion order, so the order never depends on hashing.
        return (order, -qpi.info.priority, tier, qpi.timestamp, qpi.seq)

    def keys_may_change(self) -> bool:
        return bool(self._orders) and self._orders[0].changing()
