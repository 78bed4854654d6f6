"""From Queue objects to the shares the division works on, as KAI's proportion plugin builds
them at the start of each session.

- Units: cpu quotas are millicores already (the scheduler's unit); memory quotas are
  megabytes (10^6 bytes) and become bytes; GPUs stay devices. -1 stays "unlimited".
- The tree: children are the queues naming a parent; a queue whose parent does not exist
  (or whose parent chain loops) is dropped with its subtree, as KAI drops orphans.
- Every queue's allocated / non-preemptible / requested amounts are its own pods' plus its
  descendants' (a parent holds what its children hold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.api.queue import Queue

from .share import CPU, GPU, MEMORY, UNLIMITED, QueueShare, path_to_root

MEGABYTE = 1_000_000.0
_KAI_RESOURCE = {CPU: "cpu", MEMORY: "memory", GPU: "gpu"}


def share_of(q: Queue) -> QueueShare:
    meta = q.metadata
    created = meta.creation_timestamp.timestamp() if meta.creation_timestamp else 0.0
    out = QueueShare(meta.name or "", q.parent, [], created, q.spec.effective_priority(),
                     q.spec.display_name or "")
    for r, name in _KAI_RESOURCE.items():
        res = q.quota(name)
        deserved, limit, weight = res.value("quota"), res.value("limit"), \
            res.value("overQuotaWeight")
        if r == MEMORY:
            deserved = max(UNLIMITED, deserved * MEGABYTE)
            limit = max(UNLIMITED, limit * MEGABYTE)
        out.set_quota(r, deserved, limit, weight)
    return out


def orphans(objects: Mapping[str, Queue]) -> list[str]:
    """Queues left out of the tree: a missing parent somewhere up their chain, or a loop."""
    out = []
    for name in sorted(objects):
        seen = {name}
        q = objects[name]
        while q.parent:
            parent = objects.get(q.parent)
            if parent is None or q.parent in seen:
                out.append(name)
                break
            seen.add(q.parent)
            q = parent
    return out


def build(objects: Mapping[str, Queue]) -> dict[str, QueueShare]:
    """The queue tree, by name (sorted), without orphans."""
    dropped = set(orphans(objects))
    shares = {n: share_of(objects[n]) for n in sorted(objects) if n not in dropped}
    for name, q in shares.items():
        if q.parent:
            shares[q.parent].children.append(name)
    return shares


def account(shares: dict[str, QueueShare], allocated: Mapping[str | None, Sequence[float]],
            allocated_np: Mapping[str | None, Sequence[float]],
            requested: Mapping[str | None, Sequence[float]]) -> None:
    """Set every queue's allocated, non-preemptible and requested amounts (sums over its
    subtree); amounts of unknown queues are left out."""
    for q in shares.values():
        for s in q.shares:
            s.allocated = s.allocated_not_preemptible = s.request = 0.0
    for attr, sums in (("allocated", allocated), ("allocated_not_preemptible", allocated_np),
                       ("request", requested)):
        for name, vec in sums.items():
            if name is None or name not in shares:
                continue
            for q in path_to_root(shares, name):
                for r in range(3):
                    s = q.shares[r]
                    setattr(s, attr, getattr(s, attr) + vec[r])


def set_usage(shares: dict[str, QueueShare], usage: Mapping[str, Sequence[float]]) -> None:
    """Historical usage per queue (a parent's is its subtree's)."""
    for q in shares.values():
        for s in q.shares:
            s.usage = 0.0
    for name, vec in usage.items():
        if name not in shares:
            continue
        for q in path_to_root(shares, name):
            for r in range(3):
                q.shares[r].usage += vec[r]


def is_leaf(shares: Mapping[str, QueueShare], name: str) -> bool:
    q = shares.get(name)
    return q is not None and not q.children
