"""KAI's Queue CRD installed after the scheduler started: its Queues are read once
discovery serves them (phalanx/cluster/deferred_informers.py), with no restart."""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.queue import Queue, queue_dict
from phalanx.cluster.client import NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.deferred_informers import RECHECK_SECONDS
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.queues.runtime import SHARED_KEY


class LateQueues(MemoryCluster):
    installed = False

    async def serves(self, kind: type) -> bool:
        return kind is not Queue or self.installed

    async def list(self, kind: Any, *a: Any, **kw: Any) -> Any:
        if kind is Queue and not self.installed:
            raise NotFound("the server could not find the requested resource")
        return await super().list(kind, *a, **kw)


def test_queues_created_after_their_crd_is_installed_late_are_read() -> None:
    async def main() -> tuple[bool, bool]:
        client = LateQueues()
        sched = Scheduler(client)
        await sched.start(sync_timeout=30)  # before: never synced (Queue answered 404)
        runtime = sched.shared(SHARED_KEY, lambda: None)
        before = runtime.active
        client.installed = True
        await client.create(Queue.model_validate(queue_dict("team-a", gpu={"quota": 8, "limit": -1})))
        await asyncio.sleep(RECHECK_SECONDS + 1)
        after = runtime.active
        await sched.stop()
        return before, after

    assert run_virtual(main) == (False, True)
