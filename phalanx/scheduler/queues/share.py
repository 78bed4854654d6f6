"""The numbers behind fair share: per queue and per resource, what it deserves, may use,
asks for and holds (KAI's proportion plugin's resource shares, in Phalanx's units).

Resources are KAI's three, in KAI's order: cpu (millicores), memory (bytes) and gpu
(devices, fractions allowed). `-1` (UNLIMITED) is KAI's "unlimited" in `deserved` and
`max_allowed`; a comparison treats it as larger than any amount.

A queue's `fair_share` is what the division (division.py) gives it this cycle; `allocated`
what its bound and assumed pods hold; `request` what it holds plus what its pending pods ask
for; `usage` its historical usage over the cluster's capacity (time-based fair share).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

UNLIMITED = -1.0
CPU, MEMORY, GPU = 0, 1, 2
RESOURCES = (CPU, MEMORY, GPU)
RESOURCE_NAMES = ("cpu", "memory", "gpu")
# A queue that uses a resource it has no allocatable share of ranks as if it held this
# many times its use (KAI's noFairShareDrfMultiplier).
NO_FAIR_SHARE_DRF_MULTIPLIER = 1000.0

Quantities = list[float]  # [cpu, memory, gpu]


def zeros() -> Quantities:
    return [0.0, 0.0, 0.0]


def add(a: Quantities, b: Sequence[float]) -> Quantities:
    return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]


def sub(a: Quantities, b: Sequence[float]) -> Quantities:
    return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]


def _compare(q: float, other: float) -> int:
    """-1 / 0 / 1, with UNLIMITED above every amount."""
    if q == UNLIMITED:
        return 0 if other == UNLIMITED else 1
    if other == UNLIMITED:
        return -1
    return (q > other) - (q < other)


def less(a: Sequence[float], b: Sequence[float]) -> bool:
    """Strictly less in every resource (plain numbers, as KAI's `Less`)."""
    return all(a[r] < b[r] for r in RESOURCES)


def less_equal(a: Sequence[float], b: Sequence[float]) -> bool:
    """At most `b` in every resource (UNLIMITED above all)."""
    return all(_compare(a[r], b[r]) <= 0 for r in RESOURCES)


def less_in_one(a: Sequence[float], b: Sequence[float]) -> bool:
    """Less than `b` in at least one resource."""
    return not less_equal(b, a)


@dataclass(slots=True)
class ResourceShare:
    deserved: float = 0.0
    fair_share: float = 0.0
    max_allowed: float = 0.0
    over_quota_weight: float = 0.0
    allocated: float = 0.0
    allocated_not_preemptible: float = 0.0
    request: float = 0.0
    usage: float = 0.0

    def requestable(self) -> float:
        """What the queue asks for, capped by its limit."""
        if self.max_allowed == UNLIMITED:
            return self.request
        return min(self.max_allowed, self.request)

    def allocatable(self) -> float:
        """What it may hold without being over its share: the larger of deserved and fair
        share, within the limit (an unlimited quota: the limit)."""
        if self.deserved == UNLIMITED:
            return self.max_allowed
        out = max(self.deserved, self.fair_share)
        if self.max_allowed != UNLIMITED:
            out = min(self.max_allowed, out)
        return out

    def copy(self) -> ResourceShare:
        return ResourceShare(self.deserved, self.fair_share, self.max_allowed,
                             self.over_quota_weight, self.allocated,
                             self.allocated_not_preemptible, self.request, self.usage)


@dataclass(slots=True)
class QueueShare:
    """One queue's attributes and its three resource shares."""

    name: str  # the Queue object's name (KAI's UID)
    parent: str = ""
    children: list[str] = field(default_factory=list)
    created: float = 0.0
    priority: int = 0
    display: str = ""
    shares: list[ResourceShare] = field(
        default_factory=lambda: [ResourceShare(), ResourceShare(), ResourceShare()])

    @property
    def label(self) -> str:
        return self.display or self.name

    def share(self, r: int) -> ResourceShare:
        return self.shares[r]

    def _vector(self, attr: str) -> Quantities:
        s = self.shares
        return [getattr(s[0], attr), getattr(s[1], attr), getattr(s[2], attr)]

    def fair_share(self) -> Quantities:
        return self._vector("fair_share")

    def deserved(self) -> Quantities:
        return self._vector("deserved")

    def allocated(self) -> Quantities:
        return self._vector("allocated")

    def allocated_non_preemptible(self) -> Quantities:
        return self._vector("allocated_not_preemptible")

    def max_allowed(self) -> Quantities:
        return self._vector("max_allowed")

    def request(self) -> Quantities:
        return self._vector("request")

    def requestable(self) -> Quantities:
        return [s.requestable() for s in self.shares]

    def allocatable(self) -> Quantities:
        return [s.allocatable() for s in self.shares]

    def add_fair_share(self, r: int, amount: float) -> None:
        self.shares[r].fair_share += amount

    def set_quota(self, r: int, deserved: float, max_allowed: float, weight: float) -> None:
        s = self.shares[r]
        s.deserved, s.max_allowed, s.over_quota_weight = deserved, max_allowed, weight

    def dominant_share(self, total: Sequence[float], allocated: Sequence[float] | None = None
                       ) -> float:
        """The largest allocated / allocatable over the resources (dominant resource
        fairness); a resource used without any allocatable share weighs 1000x its use."""
        held = self.allocated() if allocated is None else allocated
        out = 0.0
        for r in RESOURCES:
            allocatable = self.shares[r].allocatable()
            if allocatable == UNLIMITED:
                allocatable = total[r]
            value = held[r] * NO_FAIR_SHARE_DRF_MULTIPLIER if allocatable == 0 \
                else held[r] / allocatable
            out = max(out, value)
        return out

    def copy(self) -> QueueShare:
        return QueueShare(self.name, self.parent, list(self.children), self.created,
                          self.priority, self.display, [s.copy() for s in self.shares])


def path_to_root(queues: dict[str, QueueShare], name: str) -> list[QueueShare]:
    """The queue and its ancestors, leaf first (stops at a missing parent)."""
    out: list[QueueShare] = []
    q = queues.get(name)
    seen: set[str] = set()
    while q is not None and q.name not in seen:
        out.append(q)
        seen.add(q.name)
        q = queues.get(q.parent) if q.parent else None
    return out


def top_queues(queues: dict[str, QueueShare]) -> dict[str, QueueShare]:
    return {n: q for n, q in queues.items() if not q.parent}


def children_of(queues: dict[str, QueueShare], parent: QueueShare) -> dict[str, QueueShare]:
    return {c: queues[c] for c in parent.children if c in queues}


def fmt(values: Iterable[float]) -> str:
    return "(" + ", ".join(f"{RESOURCE_NAMES[i]}={v:g}" for i, v in enumerate(values)) + ")"
