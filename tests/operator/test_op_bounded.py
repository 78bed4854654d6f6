"""`bounded`: jobs with a limit in flight, a shared semaphore across calls, and a nested call
under the same semaphore refused at once instead of waiting forever for its own permits."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.operator.context import bounded


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def test_at_most_the_limit_in_flight_and_results_in_order():
    async def main():
        now = most = 0

        async def job(i):
            nonlocal now, most
            now += 1
            most = max(most, now)
            await asyncio.sleep(0.001 * (5 - i % 5))
            now -= 1
            if i == 3:
                raise ValueError("three")
            return i

        out = await bounded([lambda i=i: job(i) for i in range(10)], 3)
        return most, out

    most, out = run(main())
    assert most == 3
    assert [r if not isinstance(r, BaseException) else "err" for r in out] == \
        [0, 1, 2, "err", 4, 5, 6, 7, 8, 9]


def test_calls_side_by_side_share_one_semaphore():
    async def main():
        sem = asyncio.Semaphore(2)
        now = most = 0

        async def job():
            nonlocal now, most
            now += 1
            most = max(most, now)
            await asyncio.sleep(0.001)
            now -= 1

        await asyncio.gather(*(bounded([job] * 4, sem) for _ in range(3)))
        return most

    assert run(main()) == 2


def test_a_nested_call_with_its_own_limit_runs():
    async def main():
        sem = asyncio.Semaphore(1)

        async def outer(i):
            inner = await bounded([lambda j=j: asyncio.sleep(0, result=(i, j)) for j in range(2)], 2)
            return inner

        return await bounded([lambda i=i: outer(i) for i in range(2)], sem)

    assert run(main()) == [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]


def test_a_nested_call_under_the_same_semaphore_is_refused_not_left_hanging():
    # Both permits held by the outer jobs: their inner jobs could never start.
    async def main():
        sem = asyncio.Semaphore(2)

        async def outer():
            return await bounded([lambda: asyncio.sleep(0)] * 2, sem)

        return await bounded([outer, outer], sem)

    out = run(main())
    assert all(isinstance(r, RuntimeError) for r in out)
    assert "nested bounded()" in str(out[0])


def test_the_semaphore_may_be_used_again_once_the_job_that_held_it_ended():
    async def main():
        sem = asyncio.Semaphore(1)
        first = await bounded([lambda: asyncio.sleep(0, result=1)], sem)
        second = await bounded([lambda: asyncio.sleep(0, result=2)], sem)
        return first + second

    assert run(main()) == [1, 2]


@pytest.mark.parametrize("limit", [1, 4])
def test_cancelling_the_caller_cancels_every_job(limit):
    async def main():
        started, cancelled = [], []

        async def job(i):
            started.append(i)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise

        task = asyncio.create_task(bounded([lambda i=i: job(i) for i in range(4)], limit))
        while len(started) < limit:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return started, cancelled

    started, cancelled = run(main())
    assert sorted(cancelled) == sorted(started)
