"""How long a job must run before it may be taken back, as KAI's minruntime plugin resolves it.

- Preemption (within a queue): the victim's queue's `preemptMinRuntime`, else the nearest
  ancestor's, else the plugin default.
- Reclaim (across queues), method `lca` (KAI's default): below the lowest common ancestor of
  the two queues, the child on the victim's side, then up towards the root, the first
  `reclaimMinRuntime` set; two different top-level trees count as siblings under an implicit
  root, so the victim's top-level queue decides. Method `queue`: like preemption, with
  `reclaimMinRuntime`.

A job is protected while now < its start + the minimum runtime.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.api.duration import parse_duration
from phalanx.api.queue import Queue


def _path(queues: Mapping[str, Queue], name: str) -> list[Queue]:
    """Top-level queue first, down to `name`."""
    out: list[Queue] = []
    q = queues.get(name)
    seen: set[str] = set()
    while q is not None and (q.metadata.name or "") not in seen:
        seen.add(q.metadata.name or "")
        out.insert(0, q)
        q = queues.get(q.parent) if q.parent else None
    return out


def _own(q: Queue, field: str) -> float | None:
    value = getattr(q.spec, field)
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def preempt_min_runtime(queues: Mapping[str, Queue], victim: str, default: float) -> float:
    for q in reversed(_path(queues, victim)):
        found = _own(q, "preempt_min_runtime")
        if found is not None:
            return found
    return default


def reclaim_min_runtime(queues: Mapping[str, Queue], reclaimer: str, victim: str,
                        default: float, method: str = "lca") -> float:
    victim_path = _path(queues, victim)
    if not victim_path:
        return default
    if method == "queue":
        for q in reversed(victim_path):
            found = _own(q, "reclaim_min_runtime")
            if found is not None:
                return found
        return default
    mine = _path(queues, reclaimer)
    if not mine or mine[0].metadata.name != victim_path[0].metadata.name:
        found = _own(victim_path[0], "reclaim_min_runtime")
        return default if found is None else found
    lca = 0
    for i in range(min(len(mine), len(victim_path))):
        if mine[i].metadata.name != victim_path[i].metadata.name:
            break
        lca = i
    if lca + 1 < len(victim_path):
        lca += 1
    for i in range(lca, -1, -1):
        found = _own(victim_path[i], "reclaim_min_runtime")
        if found is not None:
            return found
    return default
