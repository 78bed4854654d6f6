"""The gang status controller writes the conditions of many gangs that changed at once side
by side (bounded), each as soon as a slot is free, not one round trip after another: one at a
time, the PodGang writes of a large burst of gangs trailed the last bind by a second on a real
API server, and in groups of 16 each group waited for its slowest write. A gang that changes
while its write is in flight is looked at again once that write ends, never written twice at
once."""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.base import get_condition
from phalanx.api.podgang import PodGang
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes
from phalanx.scheduler.gang.model import Source, gang_id
from phalanx.scheduler.gang.runtime import SHARED_KEY
from phalanx.scheduler.gang_status import WRITES_IN_FLIGHT


async def _fill(cluster: MemoryCluster, *, nodes: int, pods: int) -> list[tuple[Any, Any]]:
    """Nodes, then gangs of 2 pods (each gang before its pods)."""
    for node in make_nodes(nodes):
        await cluster.create(node)
    gangs = make_gangs(pods, 2, 2, seed=3)
    for gang, members in gangs:
        await cluster.create(gang)
        for pod in members:
            await cluster.create(pod)
    return gangs


class SlowStatusWrites(MemoryCluster):
    """Each PodGang status write takes 50 ms (a loaded API server); counts the overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most_in_flight = self.status_writes = 0

    async def patch(self, kind: type, *args: Any, **kwargs: Any) -> Any:
        if kind is not PodGang or kwargs.get("subresource") != "status":
            return await super().patch(kind, *args, **kwargs)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            self.status_writes += 1
            return await super().patch(kind, *args, **kwargs)
        finally:
            self.in_flight -= 1


def test_the_conditions_of_many_gangs_are_written_side_by_side_and_bounded() -> None:
    async def main() -> tuple[int, int, list[str]]:
        cluster = SlowStatusWrites()
        gangs = await _fill(cluster, nodes=16, pods=80)  # 40 gangs, placed in one burst
        sched = Scheduler(cluster)
        await sched.start()
        assert await sched.wait_idle(timeout=60)
        await sched.stop()
        statuses = []
        for gang, _ in gangs:
            got = await cluster.get(PodGang, gang.name, gang.namespace)
            cond = get_condition(got.status.conditions, "GangScheduled")
            statuses.append(cond.status if cond else "missing")
        return cluster.most_in_flight, cluster.status_writes, statuses

    most, writes, statuses = run_virtual(main)
    assert statuses == ["True"] * 40
    assert writes == 40
    assert 1 < most <= WRITES_IN_FLIGHT


class OneSlowStatusWrite(MemoryCluster):
    """The first PodGang status write takes 10 s; the others 50 ms. Records when each ends."""

    def __init__(self) -> None:
        super().__init__()
        self.slow: str | None = None
        self.ended: dict[str, float] = {}

    async def patch(self, kind: type, name: str, *args: Any, **kwargs: Any) -> Any:
        if kind is not PodGang or kwargs.get("subresource") != "status":
            return await super().patch(kind, name, *args, **kwargs)
        if self.slow is None:
            self.slow = name
        await asyncio.sleep(10.0 if name == self.slow else 0.05)
        out = await super().patch(kind, name, *args, **kwargs)
        self.ended[name] = asyncio.get_running_loop().time()
        return out


def test_a_slow_condition_write_does_not_hold_back_the_other_gangs() -> None:
    async def main() -> tuple[str | None, dict[str, float]]:
        cluster = OneSlowStatusWrite()
        await _fill(cluster, nodes=16, pods=80)
        sched = Scheduler(cluster)
        await sched.start()
        assert await sched.wait_idle(timeout=60)
        await sched.stop()
        return cluster.slow, cluster.ended

    slow, ended = run_virtual(main)
    assert slow is not None and len(ended) == 40
    others = [t for name, t in ended.items() if name != slow]
    # Every other gang's condition is written while the slow one is still on its way.
    assert max(others) < ended[slow] - 5


def test_a_gang_that_changes_while_its_write_is_in_flight_is_looked_at_again_after_it() -> None:
    """Never two writes of one gang at once; the change is not lost either."""
    async def main() -> tuple[int, int, str]:
        cluster = OneSlowStatusWrite()
        [(gang, _)] = await _fill(cluster, nodes=2, pods=2)
        sched = Scheduler(cluster)
        await sched.start()
        runtime = sched.shared(SHARED_KEY, lambda: None)
        ctrl = runtime.status
        gid = gang_id(Source.PODGANG, gang.namespace, gang.name)
        syncs: list[int] = []
        active = 0
        inner = ctrl._sync

        async def counted(g: str) -> int:
            nonlocal active
            if g == gid:
                active += 1
                syncs.append(active)
            try:
                return await inner(g)
            finally:
                if g == gid:
                    active -= 1

        ctrl._sync = counted
        while cluster.slow is None:  # its write has started (10 s long)
            await asyncio.sleep(0.01)
        ctrl.mark(gid)
        await asyncio.sleep(1.0)
        ctrl.mark(gid)
        assert await sched.wait_idle(timeout=60)
        await sched.stop()
        got = await cluster.get(PodGang, gang.name, gang.namespace)
        cond = get_condition(got.status.conditions, "GangScheduled")
        return len(syncs), max(syncs), cond.status if cond else "missing"

    looks, most_at_once, status = run_virtual(main)
    assert most_at_once == 1
    assert looks == 1 + 1  # after the write: once more (both marks were during it)
    assert status == "True"
