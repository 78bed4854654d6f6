"""The transport's client-side rate limit (client-go's QPS and burst)."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.cluster.kube.transport import TokenBucket


def test_a_burst_passes_at_once_and_the_rest_is_paced_at_qps_in_order() -> None:
    async def body() -> None:
        bucket = TokenBucket(qps=200, burst=5)
        loop = asyncio.get_running_loop()
        start = loop.time()
        done: list[tuple[int, float]] = []

        async def one(i: int) -> None:
            await bucket.acquire()
            done.append((i, loop.time() - start))

        await asyncio.gather(*(one(i) for i in range(25)))
        assert [i for i, _ in done] == list(range(25))  # served in the order asked
        # The 20 after the burst need 20 refills at 200/s: not before 0.1 s.
        assert done[-1][1] >= 20 / 200 - 0.005
        assert bucket._tokens <= 0
        # A full bucket's burst is taken without suspending at all.
        fresh = TokenBucket(qps=200, burst=5)
        for _ in range(5):
            with pytest.raises(StopIteration):
                fresh.acquire().send(None)

    asyncio.run(body())


def test_a_cancelled_wait_gives_its_token_back() -> None:
    async def body() -> None:
        bucket = TokenBucket(qps=10, burst=1)
        await bucket.acquire()  # the burst
        waiting = asyncio.create_task(bucket.acquire())
        await asyncio.sleep(0)  # it has reserved the next token and sleeps for it
        assert bucket._tokens < 0
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert bucket._tokens > -0.5  # returned: the next caller waits one refill, not two

    asyncio.run(body())


def test_no_limit_when_qps_is_zero() -> None:
    async def body() -> None:
        bucket = TokenBucket(qps=0, burst=1)
        for _ in range(1000):
            await bucket.acquire()
        assert bucket._tokens == 1

    asyncio.run(body())
