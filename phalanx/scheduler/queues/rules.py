"""KAI's reclaim and capacity rules, on queue shares (no pods, no nodes: pure arithmetic).

Capacity (checked before a job is placed):
- `over_limit`: the job would take a queue, or any of its ancestors, above its limit in
  some resource;
- `non_preemptible_over_quota`: a job that cannot be preempted would take a queue (or an
  ancestor) above its deserved quota: only quota is guaranteed, so only quota may hold work
  nobody can take back.

Reclaim (a job of one queue evicting jobs of others):
- `can_reclaim`: the reclaimer's queue stays within its fair share with the job (a
  non-preemptible job also within its quota);
- `reclaimable`: for the chosen victims, every victim queue (seen at the level where it and
  the reclaimer's queue are siblings) is over its fair share (MaintainFairShare), or the
  reclaimer is within quota and the victim queue over its quota (GuaranteeDeservedQuota),
  counting the victims as they are taken; and afterwards, at every level up the
  reclaimer's path, the reclaimer's saturation (allocated / fair share) is still below
  each affected sibling's, in every resource involved (times `saturation_multiplier`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .share import (
    GPU,
    RESOURCE_NAMES,
    RESOURCES,
    UNLIMITED,
    QueueShare,
    Quantities,
    add,
    less_equal,
    path_to_root,
    sub,
)

Queues = dict[str, QueueShare]


@dataclass(frozen=True, slots=True)
class Reclaimer:
    queue: str
    required: Quantities  # what the job needs placed (cpu millicores, memory bytes, gpus)
    preemptible: bool = True


# --- capacity ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacityVerdict:
    queue: str  # the queue whose bound is hit (the leaf or an ancestor)
    resource: int
    kind: str  # "limit" or "quota"
    bound: float  # the limit, or the deserved quota
    held: float  # allocated (or allocated non-preemptible) now
    needed: float  # what the job asks for

    def message(self, queues: Queues, leaf: str) -> str:
        """"queue team-a: 64 of its 64-GPU limit in use, the gang needs 8 more"."""
        q = queues.get(self.queue)
        name = q.label if q is not None else self.queue
        where = "" if self.queue == leaf else f" (parent of {leaf})"
        unit = _unit(self.resource, self.bound)
        what = "non-preemptible workloads hold" if self.kind == "quota" else ""
        held = fmt_amount(self.resource, self.held)
        if self.kind == "limit":
            head = f"queue {name}{where}: {held} of its {unit} limit in use"
        else:
            head = f"queue {name}{where}: {what} {held} of its {unit} quota"
        return f"{head}, the gang needs {fmt_amount(self.resource, self.needed)} more"


def fmt_amount(r: int, value: float) -> str:
    if r == 0:  # millicores
        return f"{value / 1000:g}"
    if r == 1:  # bytes
        return f"{value / 2**30:.3g}Gi"
    return f"{value:g}"


def _unit(r: int, bound: float) -> str:
    if r == GPU:
        return f"{bound:g}-GPU"
    if r == 0:
        return f"{bound / 1000:g}-CPU"
    return f"{fmt_amount(r, bound)} memory"


def over_limit(queues: Queues, leaf: str, requested: Sequence[float]) -> CapacityVerdict | None:
    for q in path_to_root(queues, leaf):
        for r in RESOURCES:
            s = q.share(r)
            if s.max_allowed == UNLIMITED or not requested[r]:
                continue
            if s.max_allowed < s.allocated + requested[r]:
                return CapacityVerdict(q.name, r, "limit", s.max_allowed, s.allocated,
                                       requested[r])
    return None


def non_preemptible_over_quota(queues: Queues, leaf: str, requested: Sequence[float]
                               ) -> CapacityVerdict | None:
    for q in path_to_root(queues, leaf):
        for r in RESOURCES:
            s = q.share(r)
            if s.deserved == UNLIMITED or not requested[r]:
                continue
            if s.deserved < s.allocated_not_preemptible + requested[r]:
                return CapacityVerdict(q.name, r, "quota", s.deserved,
                                       s.allocated_not_preemptible, requested[r])
    return None


def over_capacity(queues: Queues, leaf: str, requested: Sequence[float], preemptible: bool
                  ) -> CapacityVerdict | None:
    """KAI's IsJobOverQueueCapacity: the limit, then (non-preemptible jobs) the quota."""
    found = over_limit(queues, leaf, requested)
    if found is None and not preemptible:
        found = non_preemptible_over_quota(queues, leaf, requested)
    return found


# --- reclaim ----------------------------------------------------------------------------------


def can_reclaim(queues: Queues, reclaimer: Reclaimer) -> bool:
    q = queues.get(reclaimer.queue)
    if q is None:
        return False
    if not less_equal(add(q.allocated(), reclaimer.required), q.fair_share()):
        return False
    if reclaimer.preemptible:
        return True
    return less_equal(add(q.allocated_non_preemptible(), reclaimer.required), q.deserved())


def maintain_fair_share(reclaimee: QueueShare, remaining: Sequence[float]) -> bool:
    """The victim queue still holds more than it may (its allocatable share)."""
    return not less_equal(remaining, reclaimee.allocatable())


def guarantee_deserved_quota(required: Sequence[float], reclaimer: QueueShare,
                             reclaimee: QueueShare, remaining: Sequence[float]) -> bool:
    """The reclaimer stays within its quota and the victim queue is over its own."""
    if not less_equal(add(reclaimer.allocated(), required), reclaimer.deserved()):
        return False
    return not less_equal(remaining, reclaimee.deserved())


def fits_strategy(required: Sequence[float], reclaimer: QueueShare, reclaimee: QueueShare,
                  remaining: Sequence[float]) -> bool:
    return maintain_fair_share(reclaimee, remaining) or \
        guarantee_deserved_quota(required, reclaimer, reclaimee, remaining)


def leveled(queues: Queues, reclaimer: str, reclaimee: str) -> tuple[QueueShare, QueueShare]:
    """The two queues at the level where their paths part (siblings under one parent, or
    two top-level queues)."""
    a = list(reversed(path_to_root(queues, reclaimer)))
    b = list(reversed(path_to_root(queues, reclaimee)))
    ra, rb = a[0], b[0]
    for i in range(min(len(a), len(b))):
        ra, rb = a[i], b[i]
        if ra.name != rb.name:
            break
    return ra, rb


def _involved(amounts: Sequence[Sequence[float]]) -> set[int]:
    return {r for v in amounts for r in RESOURCES if v[r] > 0}


def reclaimable(queues: Queues, reclaimer: Reclaimer,
                victims_by_queue: dict[str, list[Quantities]],
                saturation_multiplier: float = 1.0) -> bool:
    remaining: dict[str, Quantities] = {}
    involved: dict[str, set[int]] = {}
    for vq in victims_by_queue:  # dict order: callers pass queues in a deterministic order
        amounts = victims_by_queue[vq]
        rq, eq = leveled(queues, reclaimer.queue, vq)
        involved[vq] = _involved(amounts)
        left = remaining.setdefault(eq.name, queues[eq.name].allocated())
        for amount in amounts:
            if not fits_strategy(reclaimer.required, rq, eq, left):
                return False
            for q in path_to_root(queues, vq):
                rem = remaining.setdefault(q.name, queues[q.name].allocated())
                remaining[q.name] = sub(rem, amount)
                involved.setdefault(q.name, set()).update(involved[vq])
            left = remaining[eq.name]
    return _within_boundaries(queues, reclaimer, remaining, involved, saturation_multiplier)


def _within_boundaries(queues: Queues, reclaimer: Reclaimer, remaining: dict[str, Quantities],
                       involved: dict[str, set[int]], multiplier: float) -> bool:
    required = reclaimer.required
    mine = _involved([required])
    for q in path_to_root(queues, reclaimer.queue):
        held = add(remaining.get(q.name, q.allocated()), required)
        for sib_name, sib_left in remaining.items():
            sib = queues[sib_name]
            if sib.parent != q.parent or sib.name == q.name:
                continue
            resources = involved.get(sib_name, set()) | mine
            if not _saturation_lower(resources, held, q.fair_share(), sib_left,
                                     sib.fair_share(), multiplier):
                return False
        if not reclaimer.preemptible:
            if not less_equal(add(q.allocated_non_preemptible(), required), q.deserved()):
                return False
    return True


def _ratio(allocated: float, fair: float) -> float:
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == UNLIMITED:
        return 0.0
    return allocated / fair


def _saturation_lower(resources: set[int], mine: Sequence[float], my_fair: Sequence[float],
                      theirs: Sequence[float], their_fair: Sequence[float],
                      multiplier: float) -> bool:
    for r in sorted(resources):
        if my_fair[r] == UNLIMITED and their_fair[r] == UNLIMITED:
            continue
        ratio = _ratio(mine[r], my_fair[r])
        other = _ratio(theirs[r], their_fair[r])
        if ratio > 1 and their_fair[r] > 0 and ratio * multiplier >= other:
            return False
    return True


def describe(values: Sequence[float]) -> str:
    return ", ".join(f"{fmt_amount(r, values[r])} {RESOURCE_NAMES[r]}" for r in RESOURCES
                     if values[r])
