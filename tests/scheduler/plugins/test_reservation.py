"""GangReservation: a large gang behind a stream of small pods is not starved, and the small
ones still use the room the reservation does not need (backfill)."""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import (
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulerProfile,
)

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler


def _stream(client: MemoryCluster, sched: Scheduler, rounds: int) -> Any:
    """8 small 1-GPU pods fill 4 x 2-GPU nodes; a 4 x 2-GPU gang arrives; then each round
    one small pod finishes and a new one arrives."""

    async def body() -> tuple[dict[str, list[str | None]], dict[str, str | None]]:
        for i in range(8):
            await client.create(pod(f"small-{i}", gpu=1, cpu="100m"))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("big", {"w": 4}))
        for p in members("big", "w", 4, gpu=2, cpu="100m"):
            await client.create(p)
        assert await sched.wait_idle(timeout=30)
        for r in range(rounds):
            await client.delete(Pod, f"small-{r}", "default")
            await client.create(pod(f"small-{8 + r}", gpu=1, cpu="100m"))
            assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client), await bound_nodes(client)

    return body()


NODES = [node(f"n{i}", gpu=2) for i in range(4)]
# Reserve as soon as the gang is unschedulable (the default waits an hour of virtual time).
AT_ONCE = SchedulerProfile(
    scheduler_name="phalanx-scheduler",
    plugin_config=[PluginConfig(name="GangReservation", args={"minWaitSeconds": 0})],
)


def _at_once(client: MemoryCluster) -> Scheduler:
    return Scheduler(client, [AT_ONCE])


def test_the_waiting_gang_reserves_room_and_runs_once_its_nodes_drain() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        return await _stream(client, sched, 8)

    by_gang, nodes = run_scheduler(body, nodes=NODES, scheduler_factory=_at_once)
    assert all(by_gang["big"]), by_gang
    # The small pods that arrived while the gang waited did not take its room.
    assert sum(1 for n, at in nodes.items() if n.startswith("small") and at) == 0


def test_without_reservation_the_stream_starves_the_gang() -> None:
    off = SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugins=Plugins(multi_point=PluginSet(disabled=[PluginRef(name="GangReservation")])),
    )

    async def body(client: MemoryCluster, sched: Scheduler):
        return await _stream(client, sched, 8)

    by_gang, nodes = run_scheduler(
        body, nodes=NODES, scheduler_factory=lambda c: Scheduler(c, [off])
    )
    assert by_gang["big"] == [None] * 4
    assert sum(1 for n, at in nodes.items() if n.startswith("small") and at) == 8


def test_backfill_uses_room_beyond_the_reservation() -> None:
    """The gang reserves 2 of 3 nodes (2 x 2 GPUs); a small pod still starts on the third."""

    async def body(client: MemoryCluster, sched: Scheduler):
        for i in range(6):
            await client.create(pod(f"small-{i}", gpu=1, cpu="100m"))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("big", {"w": 2}))
        for p in members("big", "w", 2, gpu=2, cpu="100m"):
            await client.create(p)
        assert await sched.wait_idle(timeout=30)
        # One small pod on each node finishes: 1 GPU free on each node.
        nodes = await bound_nodes(client)
        for n in ("n0", "n1", "n2"):
            victim = next(p for p, at in sorted(nodes.items()) if at == n)
            await client.delete(Pod, victim, "default")
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("late", gpu=1, cpu="100m"))
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client), sched

    nodes, sched = run_scheduler(
        body, nodes=[node(f"n{i}", gpu=2) for i in range(3)], scheduler_factory=_at_once
    )
    book = sched.shared("phalanx.scheduler.reservations", lambda: None)
    reserved = {n for r in book.active.values() for n in r.nodes}
    assert len(reserved) == 2 and nodes["late"] is not None and nodes["late"] not in reserved


def test_by_default_a_gang_reserves_only_after_an_hour_of_waiting() -> None:
    """Default minWaitSeconds (3600): after the first failure nothing is reserved; an hour
    later (virtual) the next failure reserves."""
    import asyncio

    async def body(client: MemoryCluster, sched: Scheduler):
        for i in range(8):
            await client.create(pod(f"small-{i}", gpu=1, cpu="100m"))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("big", {"w": 4}))
        for p in members("big", "w", 4, gpu=2, cpu="100m"):
            await client.create(p)
        assert await sched.wait_idle(timeout=30)
        book = sched.shared("phalanx.scheduler.reservations", lambda: None)
        early = len(book.active)
        await asyncio.sleep(3700)
        await client.delete(Pod, "small-0", "default")  # an event: the gang retries
        assert await sched.wait_idle(timeout=60)
        return early, len(book.active)

    early, later = run_scheduler(body, nodes=NODES)
    assert (early, later) == (0, 1)
