"""The gang status controller writes the conditions of many gangs that changed at once side
by side (bounded), not one round trip after another: one at a time, the PodGang writes of a
large burst of gangs trailed the last bind by a second on a real API server."""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.base import get_condition
from phalanx.api.podgang import PodGang
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes
from phalanx.scheduler.gang_status import WRITES_IN_FLIGHT


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
        for node in make_nodes(16):
            await cluster.create(node)
        gangs = make_gangs(80, 2, 2, seed=3)  # 40 gangs, all placed in one burst
        for gang, pods in gangs:
            await cluster.create(gang)
            for pod in pods:
                await cluster.create(pod)
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
