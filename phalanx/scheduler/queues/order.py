"""Which queue goes first: KAI's queue order, as a comparison and as a sort key.

Between two queues (with the job each would place next), in KAI's order of criteria:
1. a queue holding more than its fair share in every resource goes after one that does not;
2. a queue that stays within its deserved quota with its job goes before one that does not;
3. a higher queue priority goes first;
4. a queue whose job would use a resource it has no allocatable share of goes last;
5. the smaller dominant resource share with the job goes first (DRF over cpu, memory, gpu),
   then the smaller one without it;
6. a queue whose allocatable share is smaller in some resource and larger in none goes first;
7. the older queue goes first.

`compare` is that order exactly, as KAI compares two queues each with the job it would
place next. `sort_key` makes it a key for the scheduling queue's heap (tuples compare
element by element), the way KAI walks its queues: every pod of a queue gets that queue's
key, computed with the job at the head of the queue (its highest-priority, oldest pending
job, sized as jobs.py sizes it; for a parent, the head of its subtree), and within a
queue pods then go by priority and age, KAI's job order. For the members of a gang being
placed, what their queue holds leaves out the gang's own reserved members (KAI places a
job at once: a gang mid-attempt keeps the rank it started with). The 6th criterion (a partial order) becomes the sum of
the allocatable shares over the cluster, a total order that agrees with it.
Down the tree, each level's key compares siblings (KAI orders the parents first, then the
children within them), so a pod's key is the keys of its queue's ancestors, top first.
"""

from __future__ import annotations

from collections.abc import Sequence

from .share import (
    RESOURCES,
    UNLIMITED,
    QueueShare,
    add,
    less,
    less_equal,
    less_in_one,
)

L_FIRST, R_FIRST, EQUAL = -1, 1, 0


def _over_utilized(q: QueueShare) -> bool:
    return less(q.fair_share(), q.allocated())


def _starved_with(q: QueueShare, job: Sequence[float]) -> bool:
    return less_equal(add(q.allocated(), job), q.deserved())


def _zero_share_violation(q: QueueShare, job: Sequence[float]) -> bool:
    held = add(q.allocated(), job)
    allocatable = q.allocatable()
    return any(allocatable[r] == 0 and held[r] > 0 for r in RESOURCES)


def _drf_with(q: QueueShare, job: Sequence[float], total: Sequence[float],
              victims: Sequence[float] | None = None) -> float:
    held = add(q.allocated(), job)
    if victims is not None:
        held = [held[r] - victims[r] for r in RESOURCES]
    return q.dominant_share(total, held)


def compare(lq: QueueShare, rq: QueueShare, l_job: Sequence[float], r_job: Sequence[float],
            total: Sequence[float], l_victims: Sequence[float] | None = None,
            r_victims: Sequence[float] | None = None) -> int:
    """-1 when `lq` goes first, 1 when `rq` does (never 0: age breaks ties)."""
    lo, ro = _over_utilized(lq), _over_utilized(rq)
    if lo != ro:
        return R_FIRST if lo else L_FIRST
    ls, rs = _starved_with(lq, l_job), _starved_with(rq, r_job)
    if ls != rs:
        return L_FIRST if ls else R_FIRST
    if lq.priority != rq.priority:
        return L_FIRST if lq.priority > rq.priority else R_FIRST
    lz, rz = _zero_share_violation(lq, l_job), _zero_share_violation(rq, r_job)
    if lz != rz:
        return R_FIRST if lz else L_FIRST
    ld, rd = _drf_with(lq, l_job, total, l_victims), _drf_with(rq, r_job, total, r_victims)
    if ld != rd:
        return L_FIRST if ld < rd else R_FIRST
    ld, rd = lq.dominant_share(total), rq.dominant_share(total)
    if ld != rd:
        return L_FIRST if ld < rd else R_FIRST
    la, ra = lq.allocatable(), rq.allocatable()
    if less_in_one(la, ra) and less_equal(la, ra):
        return L_FIRST
    if less_in_one(ra, la) and less_equal(ra, la):
        return R_FIRST
    return L_FIRST if lq.created < rq.created else R_FIRST


def level_key(q: QueueShare, held: Sequence[float], job: Sequence[float],
              total: Sequence[float]) -> tuple[object, ...]:
    """One queue's place among its siblings (smaller first), from what it holds and the
    job it would place next: KAI's criteria in KAI's order (the 6th, a partial order,
    left out)."""
    with_job = add(held, job)
    allocatable = q.allocatable()
    return (
        less(q.fair_share(), held),
        not less_equal(with_job, q.deserved()),
        -q.priority,
        any(allocatable[r] == 0 and with_job[r] > 0 for r in RESOURCES),
        q.dominant_share(total, with_job),
        q.dominant_share(total, held),
        _allocatable_size(allocatable, total),
        q.created,
        q.name,
    )


def _allocatable_size(allocatable: Sequence[float], total: Sequence[float]) -> float:
    """A total order that keeps KAI's 6th criterion (smaller allocatable share in some
    resource and larger in none goes first): the allocatable shares over the cluster,
    summed (unlimited counts as all of it)."""
    out = 0.0
    for r in RESOURCES:
        a = allocatable[r]
        out += 1.0 if a == UNLIMITED or not total[r] else a / total[r]
    return out


def sort_key(path: Sequence[QueueShare], held: dict[str, list[float]],
             jobs: dict[str, Sequence[float]], total: Sequence[float]
             ) -> tuple[tuple[object, ...], ...]:
    """The key of a pod of the leaf queue `path[0]` (path leaf first, as path_to_root
    gives it): its ancestors' level keys, top level first, each with the job at the head
    of that queue's subtree."""
    none = (0.0, 0.0, 0.0)
    return tuple(level_key(q, held[q.name], jobs.get(q.name, none), total)
                 for q in reversed(path))
