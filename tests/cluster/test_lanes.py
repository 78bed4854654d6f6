"""The urgent lane's marker: set inside `urgent()`, carried into tasks started there."""

from __future__ import annotations

import asyncio

from phalanx.cluster.lanes import is_urgent, urgent


def test_urgent_inside_the_block_only_and_in_the_tasks_it_starts() -> None:
    async def body() -> None:
        assert not is_urgent()
        outside = asyncio.create_task(asyncio.sleep(0, result="x"))
        with urgent():
            assert is_urgent()
            inside = asyncio.create_task(_report())
        assert not is_urgent()
        assert await inside is True
        later = asyncio.create_task(_report())
        assert await later is False
        await outside

    asyncio.run(body())


def test_nested_blocks_restore_what_was_there() -> None:
    with urgent():
        with urgent():
            assert is_urgent()
        assert is_urgent()
    assert not is_urgent()


async def _report() -> bool:
    await asyncio.sleep(0)
    return is_urgent()
