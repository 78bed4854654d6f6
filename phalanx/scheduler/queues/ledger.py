"""What each queue holds and asks for, kept per pod as the informer and the scheduler see it.

One entry per pod key: its queue (None for pods outside the queue system: another
scheduler's, or ours without a queue; their bound room is taken off the capacity queues
divide), its (cpu, memory, gpu) request, whether it is preemptible, and three facts:
`bound` (the informer says it holds a node), `assumed` (the scheduler reserved a node for it
and the bind is not confirmed yet) and `pending` (unbound, ungated, waiting to be placed).

A pod counts as *allocated* when bound or assumed, and as *requested* when allocated or
pending (KAI's Request: what a queue holds plus what its pending pods ask for), once each
whatever the order the facts arrive in. Sums per queue are kept incrementally, so reading
them costs nothing; `version` bumps on every change of the allocation, `request_version`
only when a queue's requests change (fair share depends on those, not on placements).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

Vec = tuple[float, float, float]
ZERO: Vec = (0.0, 0.0, 0.0)


@dataclass(slots=True)
class Entry:
    queue: str | None
    vec: Vec
    preemptible: bool
    uid: str = ""
    pending: bool = False
    assumed: bool = False
    bound: bool = False
    # Evicted (preempted or reclaimed) and on its way out: KAI's Releasing, which counts
    # neither as allocated nor as requested, so the room it frees is not taken twice.
    releasing: bool = False
    order: tuple[float, float] = (0.0, 0.0)  # (-priority, created): KAI's job order

    @property
    def allocated(self) -> bool:
        return (self.bound or self.assumed) and not self.releasing

    @property
    def requested(self) -> bool:
        return (self.bound or self.assumed or self.pending) and not self.releasing


class Ledger:
    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.allocated: dict[str | None, list[float]] = {}
        self.allocated_np: dict[str | None, list[float]] = {}  # non-preemptible
        self.requested: dict[str | None, list[float]] = {}
        # Pending pods per queue by KAI's job order (-priority, created), lazily cleaned:
        # the head is the job the queue would place next.
        self._pending: dict[str | None, list[tuple[float, float, str, str]]] = {}
        self.version = 0
        self.request_version = 0

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    # --- changes ------------------------------------------------------------------------

    def _apply(self, e: Entry, sign: float) -> None:
        if e.allocated:
            _acc(self.allocated, e.queue, e.vec, sign)
            if not e.preemptible:
                _acc(self.allocated_np, e.queue, e.vec, sign)
        if e.requested:
            _acc(self.requested, e.queue, e.vec, sign)

    def _replace(self, key: str, new: Entry | None) -> None:
        old = self.entries.get(key)
        if old is not None:
            self._apply(old, -1.0)
        if new is None:
            self.entries.pop(key, None)
        else:
            self.entries[key] = new
            self._apply(new, 1.0)
        if _alloc_sig(old) != _alloc_sig(new):
            self.version += 1
        if _req_sig(old) != _req_sig(new):
            self.request_version += 1

    def observe(self, key: str, uid: str, queue: str | None, vec: Vec, preemptible: bool, *,
                bound: bool, pending: bool, order: tuple[float, float] = (0.0, 0.0)) -> None:
        """The informer's view of a pod (bound: holds a node; pending: waits for one)."""
        old = self.entries.get(key)
        same = old is not None and old.uid == uid
        assumed = old.assumed if same and not bound else False  # type: ignore[union-attr]
        releasing = old.releasing if same else False  # type: ignore[union-attr]
        new = Entry(queue, vec, preemptible, uid, pending, assumed, bound, releasing, order)
        self._replace(key, new)
        if pending and not (same and old.pending and old.queue == queue):  # type: ignore[union-attr]
            heapq.heappush(self._pending.setdefault(queue, []), (*order, key, uid))

    def assume(self, key: str, uid: str, queue: str | None, vec: Vec, preemptible: bool) -> None:
        """The scheduler reserved a node (Reserve)."""
        old = self.entries.get(key)
        bound = old.bound if old is not None and old.uid == uid else False
        pending = old.pending if old is not None and old.uid == uid else False
        order = old.order if old is not None and old.uid == uid else (0.0, 0.0)
        self._replace(key, Entry(queue, vec, preemptible, uid, pending, True, bound, False,
                                 order))

    def release(self, key: str) -> None:
        """The pod was evicted: it no longer counts for its queue."""
        old = self.entries.get(key)
        if old is None or old.releasing:
            return
        self._replace(key, Entry(old.queue, old.vec, old.preemptible, old.uid, old.pending,
                                 old.assumed, old.bound, True, old.order))

    def is_releasing(self, key: str) -> bool:
        e = self.entries.get(key)
        return e is not None and e.releasing

    def unassume(self, key: str) -> None:
        """The reservation was released (Unreserve); the informer's facts stay."""
        old = self.entries.get(key)
        if old is None or not old.assumed:
            return
        new = Entry(old.queue, old.vec, old.preemptible, old.uid, old.pending, False, old.bound,
                    old.releasing, old.order)
        self._replace(key, new if new.requested or new.bound else None)

    def forget(self, key: str) -> None:
        """The pod is gone (deleted, or finished)."""
        if key in self.entries:
            self._replace(key, None)

    # --- reading ------------------------------------------------------------------------

    def head(self, queue: str | None) -> str | None:
        """The pending pod of `queue` that goes first (highest priority, then oldest)."""
        heap = self._pending.get(queue)
        while heap:
            _, _, key, uid = heap[0]
            e = self.entries.get(key)
            if e is not None and e.uid == uid and e.pending and not e.assumed and \
                    not e.bound and e.queue == queue:
                return key
            heapq.heappop(heap)
        return None

    def allocated_of(self, queue: str | None) -> list[float]:
        return list(self.allocated.get(queue, ZERO))

    def queues(self) -> list[str]:
        names = set(self.allocated) | set(self.requested)
        return sorted(n for n in names if n is not None)


def _acc(into: dict[str | None, list[float]], queue: str | None, vec: Vec, sign: float) -> None:
    cur = into.get(queue)
    if cur is None:
        cur = into[queue] = [0.0, 0.0, 0.0]
    cur[0] += sign * vec[0]
    cur[1] += sign * vec[1]
    cur[2] += sign * vec[2]
    if sign < 0 and not any(abs(v) > 1e-9 for v in cur):
        del into[queue]


def _alloc_sig(e: Entry | None) -> object:
    if e is None or not e.allocated:
        return None
    return (e.queue, e.vec, e.preemptible, e.bound)



def _req_sig(e: Entry | None) -> object:
    return None if e is None or not e.requested else (e.queue, e.vec)
