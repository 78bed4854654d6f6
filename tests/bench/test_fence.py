"""Killable processes: the connection is cut and every task of the process ends at once."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import ConfigMap
from phalanx.bench.fence import Process, ProcessKilled, track_tasks
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def cm(name: str) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace="default"))


@pytest.mark.parametrize("before", [True, False])
def test_kill_at_the_nth_write_lands_it_or_not_and_ends_the_process(before: bool) -> None:
    async def main() -> tuple[list[str], bool, bool]:
        api = MemoryCluster()
        track_tasks(asyncio.get_running_loop())
        proc = Process("writer", api)
        proc.client.kill_after(3, before_write=before)
        stream = proc.client.watch(ConfigMap, "default")
        seen: list[str] = []

        async def writer() -> None:
            for i in range(10):
                await proc.client.create(cm(f"c{i}"))

        async def reader() -> None:
            async for ev in stream:
                seen.append(ev.object.name)

        with proc.running():
            w = asyncio.create_task(writer())
            r = asyncio.create_task(reader())
        await proc.client.killed.wait()
        await proc.reap()
        stored = sorted(o.name for o in (await api.list(ConfigMap)).items)
        with pytest.raises(ProcessKilled):
            await proc.client.get(ConfigMap, "c0", "default")
        return stored, w.cancelled() or w.done(), r.done()

    stored, writer_ended, reader_ended = run_virtual(main)
    assert stored == (["c0", "c1"] if before else ["c0", "c1", "c2"])
    assert writer_ended and reader_ended


def test_work_the_api_server_does_for_a_killed_process_is_not_cancelled() -> None:
    async def main() -> bool:
        api = MemoryCluster()
        loop = asyncio.get_running_loop()
        track_tasks(loop)
        proc = Process("p", api)
        server_side: list[asyncio.Task[None]] = []
        original = api.create

        async def create_and_spawn(obj, **kw):  # the "server" starts background work
            server_side.append(loop.create_task(asyncio.sleep(5)))
            return await original(obj, **kw)

        api.create = create_and_spawn  # type: ignore[method-assign]
        with proc.running():
            await proc.client.create(cm("x"))
            mine = loop.create_task(asyncio.sleep(5))
        proc.kill()
        await proc.reap()
        return mine.cancelled() and not server_side[0].cancelled()

    assert run_virtual(main)


def test_a_process_counts_the_writes_the_api_accepted_from_it_by_verb_and_kind() -> None:
    from phalanx.cluster.client import AlreadyExists

    async def main() -> dict[tuple[str, str], int]:
        api = MemoryCluster()
        proc = Process("writer", api)
        await proc.client.create(cm("a"))
        await api.create(cm("b"))  # someone else's write
        with pytest.raises(AlreadyExists):  # refused: not counted
            await proc.client.create(cm("a"))
        await proc.client.patch(ConfigMap, "a", {"data": {"k": "v"}}, "default")
        await proc.client.delete(ConfigMap, "a", "default")
        return dict(proc.client.accepted)

    assert run_virtual(main()) == {("create", "ConfigMap"): 1, ("patch", "ConfigMap"): 1,
                                   ("delete", "ConfigMap"): 1}


def test_a_process_hands_a_created_object_over_to_the_api() -> None:
    """`hand_over` reaches the server: the Event recorders' creates are not copied twice."""
    async def main() -> tuple[bool, bool]:
        api = MemoryCluster()
        proc = Process("writer", api)
        stream = api.watch(ConfigMap, "default")
        handed, kept = cm("a"), cm("b")
        await proc.client.create(handed, returning=False, hand_over=True)
        await proc.client.create(kept, returning=False)
        return (await anext(stream)).object is handed, (await anext(stream)).object is kept

    assert run_virtual(main()) == (True, False)
