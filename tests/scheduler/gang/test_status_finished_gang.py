"""A gang whose members all ran to completion keeps GangScheduled=True: it is finished, not
"0/4 members created, waiting for 4 more" (issue 25 item 2: `describe` showed that on a
training job that had completed)."""

from __future__ import annotations

import asyncio

from phalanx.api.base import get_condition
from phalanx.api.podgang import PodGang
from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes


def test_a_finished_gang_is_not_reported_incomplete() -> None:
    async def main() -> tuple[str, str, str]:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        [(gang, pods)] = make_gangs(4, 4, 4, seed=1)
        await cluster.create(gang)
        for pod in pods:
            await cluster.create(pod)
        sched = Scheduler(cluster)
        await sched.start()
        assert await sched.wait_idle(timeout=60)
        await asyncio.sleep(5)  # past the status controller's settle and min interval
        assert await sched.wait_idle(timeout=60)
        for p in (await cluster.list(Pod, gang.namespace)).items:
            p.status.phase = "Succeeded"
            await cluster.update_status(p)
        await asyncio.sleep(10)
        assert await sched.wait_idle(timeout=60)
        got = await cluster.get(PodGang, gang.name, gang.namespace)
        cond = get_condition(got.status.conditions, "GangScheduled")
        await sched.stop()
        assert cond is not None
        return cond.status, cond.reason or "", cond.message or ""

    status, reason, message = run_virtual(main)
    assert (status, reason) == ("True", "Scheduled"), message
    assert "members created" not in message
