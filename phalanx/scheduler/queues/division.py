"""Fair share: how the cluster's resources are divided among queues, as KAI divides them.

Per resource, level by level down the queue tree (each parent's fair share is what its
children divide):

1. Deserved quota first: each queue gets min(quota, what it asks for within its limit); an
   unlimited quota asks for all there is.
2. What is left is shared "over quota", priority by priority (higher first): in rounds,
   each queue that still asks for more gets the round's amount times its weight share,
   rounded down to whole units, or exactly what it still asks for when that is less; a
   queue given less than its share asked for less, so another round hands the difference
   to the others. The weight is the over-quota weight, reduced by the queue's historical
   usage when time-based fair share is on: max(0, w + k * (w - usage)), w normalised.
3. The fractions rounding left behind go one unit at a time to the queues with the largest
   unrounded remainder (then the oldest, then by name).

Iteration is in the dict's order (callers insert queues by name), so a division is
deterministic where KAI's (a Go map) may vary in ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .share import RESOURCES, UNLIMITED, QueueShare, children_of, top_queues

Queues = dict[str, QueueShare]


@dataclass(slots=True)
class _Remainder:
    queue: QueueShare
    amount: float


def set_fair_share(queues: Queues, total: Sequence[float], k_value: float = 0.0) -> None:
    """Divide `total` (cpu, memory, gpu) down the whole tree; fair shares add up."""
    _divide_level(queues, top_queues(queues), list(total), k_value)


def _divide_level(queues: Queues, level: Queues, total: list[float], k_value: float) -> None:
    if not level:
        return
    set_resources_share(total, k_value, level)
    for q in level.values():
        _divide_level(queues, children_of(queues, q), q.fair_share(), k_value)


def set_resources_share(total: Sequence[float], k_value: float, queues: Queues) -> None:
    for r in RESOURCES:
        set_resource_share(total[r], k_value, r, queues)


def set_resource_share(total: float, k_value: float, r: int, queues: Queues) -> float:
    """Divide one resource among sibling queues; returns what nobody asked for."""
    remaining = set_deserved(total, queues, r)
    if remaining > 0:
        return divide_over_quota(remaining, k_value, queues, r)
    return 0.0


def set_deserved(total: float, queues: Queues, r: int) -> float:
    remaining = total
    for q in queues.values():
        s = q.share(r)
        deserved = total if s.deserved == UNLIMITED else s.deserved
        amount = min(deserved, s.requestable())
        q.add_fair_share(r, amount)
        remaining -= amount
    return remaining


def queues_by_priority(queues: Queues) -> tuple[dict[int, Queues], list[int]]:
    """The queues grouped by priority, and the priorities, highest first."""
    by_priority: dict[int, Queues] = {}
    for name, q in queues.items():
        by_priority.setdefault(q.priority, {})[name] = q
    return by_priority, sorted(by_priority, reverse=True)


def divide_over_quota(total: float, k_value: float, queues: Queues, r: int) -> float:
    by_priority, priorities = queues_by_priority(queues)
    remainders: dict[int, dict[str, _Remainder]] = {}
    remaining = total
    for p in priorities:
        remaining, left = divide_up_to_fair_share(remaining, k_value, by_priority[p], r)
        remainders.setdefault(p, {}).update(left)
    for p in priorities:
        if remaining <= 0:
            break
        if remainders.get(p):
            remaining = divide_remaining(remaining, remainders[p], r)
    return remaining


def divide_up_to_fair_share(total: float, k_value: float, queues: Queues, r: int
                            ) -> tuple[float, dict[str, _Remainder]]:
    left: dict[str, _Remainder] = {}
    while True:
        another_round = False
        this_round = total
        weights, weight_sum = share_weights(queues, r, k_value)
        if weight_sum == 0:
            break
        for q in queues.values():
            if total == 0:
                break
            if is_satisfied(q, r):
                continue
            s = q.share(r)
            requested = remaining_requested(q, r)
            if s.over_quota_weight == 0:
                continue
            fair = this_round * (weights.get(q.name, 0.0) / weight_sum)
            give = _to_give(fair, requested, q, left)
            if give == 0:
                continue
            q.add_fair_share(r, give)
            total -= give
            # Asked for less than its share: another round gives the rest to the others.
            another_round = another_round or requested < fair
        if not another_round or total == 0:
            break
    return total, left


def share_weights(queues: Queues, r: int, k_value: float) -> tuple[dict[str, float], float]:
    """Each unsatisfied queue's weight this round (usage-adjusted), and their sum."""
    total_weight = sum(q.share(r).over_quota_weight for q in queues.values()
                       if remaining_requested(q, r) > 0)
    if total_weight == 0:
        return {}, 0.0
    out: dict[str, float] = {}
    weight_sum = 0.0
    for q in queues.values():
        if is_satisfied(q, r):
            continue
        s = q.share(r)
        w = s.over_quota_weight / total_weight
        weight = max(0.0, w + k_value * (w - s.usage))
        out[q.name] = weight
        weight_sum += weight
    return out, weight_sum


def is_satisfied(q: QueueShare, r: int) -> bool:
    s = q.share(r)
    if s.request <= s.fair_share:
        return True
    return s.max_allowed != UNLIMITED and s.max_allowed <= s.fair_share


def remaining_requested(q: QueueShare, r: int) -> float:
    s = q.share(r)
    requested = s.requestable()
    return 0.0 if requested < s.fair_share else requested - s.fair_share


def _to_give(fair: float, requested: float, q: QueueShare, left: dict[str, _Remainder]) -> float:
    if requested <= fair:
        left.pop(q.name, None)
        return requested
    # A share limited below what was asked is given in whole units; the fraction waits.
    give = math.floor(fair)
    give = float(give) if give > 0 else 0.0
    if fair - give > 0:
        left[q.name] = _Remainder(q, fair - give)
    return give


def divide_remaining(total: float, left: dict[str, _Remainder], r: int) -> float:
    """Hand out what rounding left, one unit (or the last fraction) per queue, largest
    remainder first, then the oldest queue, then by name."""
    order = sorted(left.values(), key=lambda x: (-x.amount, x.queue.created, x.queue.name))
    for rem in order:
        if total == 0:
            break
        give = min(1.0, total)
        rem.queue.add_fair_share(r, give)
        total -= give
    return total


__all__ = [
    "divide_over_quota",
    "divide_remaining",
    "divide_up_to_fair_share",
    "is_satisfied",
    "queues_by_priority",
    "remaining_requested",
    "set_deserved",
    "set_fair_share",
    "set_resource_share",
    "set_resources_share",
    "share_weights",
]
