"""KAI's Queue CRD installed after the scheduler started: its Queues are read once
discovery serves them (phalanx/cluster/deferred_informers.py), with no restart."""

from __future__ import annotations

import asyncio

from phalanx.api.queue import Queue, queue_dict
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.deferred_informers import RECHECK_SECONDS
from phalanx.scheduler import Scheduler
from phalanx.scheduler.queues.runtime import SHARED_KEY
from tests.scheduler.without_crd import WithoutCRD


def test_queues_created_after_their_crd_is_installed_late_are_read() -> None:
    async def main() -> tuple[bool, bool]:
        client = WithoutCRD(Queue)
        sched = Scheduler(client)
        await sched.start(sync_timeout=30)  # before: never synced (Queue answered 404)
        runtime = sched.shared(SHARED_KEY, lambda: None)
        before = runtime.active
        client.install()
        await client.create(Queue.model_validate(queue_dict("team-a", gpu={"quota": 8, "limit": -1})))
        await asyncio.sleep(RECHECK_SECONDS + 1)
        after = runtime.active
        await sched.stop()
        return before, after

    assert run_virtual(main) == (False, True)
