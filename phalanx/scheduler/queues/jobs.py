"""What a job still needs placed, as KAI sizes a job for its queue checks: for a gang, the
pending members that bring it (and its gang group) to its minimum, whatever pod asks; for
any other pod, the pod itself. A gang member beyond the minimum is sized alone.

While a gang is being placed, its assumed members move from "needed" to the queue's
allocation, so allocation + need stays the same for every member of one attempt: the queue
checks and the queue order see the gang as one job, as KAI does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.scheduler.gang.runtime import GangRuntime, member_info

from .ledger import Vec
from .runtime import request_vec

if TYPE_CHECKING:
    from phalanx.scheduler.framework.interface import Handle
    from phalanx.scheduler.framework.types import PodInfo
    from phalanx.scheduler.gang.state import GangState


class JobNeeds:
    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.gangs = GangRuntime.for_handle(handle)
        self._cache: dict[str, tuple[object, Vec, frozenset[str]]] = {}

    def gang_of(self, pod: PodInfo) -> GangState | None:
        g = self.gangs.cache.gang_of(pod.key)
        if g is None or g.spec is None or g.free:
            return None
        return g

    def unit_key(self, pod: PodInfo) -> str:
        g = self.gang_of(pod)
        return self.gangs.manager.unit_key(g) if g is not None else pod.key

    def need(self, pod: PodInfo) -> Vec:
        g = self.gang_of(pod)
        if g is None:
            return request_vec(pod.requests)
        group = [s for s in self.gangs.cache.group_states(g) if s is not None]
        stamp = tuple((s.id, s.version, s._moves, len(s.members), s._gated) for s in group)
        cached = self._cache.get(g.id)
        if cached is None or cached[0] != stamp:
            cpu = mem = gpu = 0.0
            keys: set[str] = set()
            for s in group:
                for m in s.needed_members():
                    if m.pod is None:
                        continue
                    v = request_vec(member_info(self.handle, m).requests)
                    cpu, mem, gpu = cpu + v[0], mem + v[1], gpu + v[2]
                    keys.add(m.key)
            cached = (stamp, (cpu, mem, gpu), frozenset(keys))
            self._cache[g.id] = cached
            if len(self._cache) > 4096:  # gangs come and go: keep the cache bounded
                self._cache = {g.id: cached}
        if pod.key not in cached[2]:
            return request_vec(pod.requests)
        return cached[1]
