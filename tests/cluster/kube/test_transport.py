"""The transport's client-side rate limit (client-go's QPS and burst), and its urgent lane
(phalanx/cluster/lanes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from phalanx.cluster.kube import connection_for
from phalanx.cluster.kube.transport import TokenBucket, Transport
from phalanx.cluster.lanes import urgent

from .local_server import serve


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


def test_an_urgent_caller_takes_its_token_at_once_and_the_next_one_waits_for_it() -> None:
    async def body() -> None:
        bucket = TokenBucket(qps=10, burst=1)
        await bucket.acquire()  # the burst
        queued = asyncio.create_task(bucket.acquire())
        await asyncio.sleep(0)  # reserved the next token; sleeps ~0.1 s for it
        with pytest.raises(StopIteration):  # never suspends
            bucket.acquire(urgent=True).send(None)
        assert bucket._tokens < -1.9  # counted: owed by the callers after it
        loop = asyncio.get_running_loop()
        start = loop.time()
        await bucket.acquire()  # waits for the queued caller's token and the urgent one's
        assert loop.time() - start >= 0.25
        await queued

    asyncio.run(body())


async def _held_server(release: asyncio.Event, arrived: list[str]) -> tuple[Any, int]:
    """A local HTTP server that answers /held only once `release` is set."""
    async def handler(request: web.Request) -> web.Response:
        arrived.append(request.path)
        if request.path == "/held":
            await release.wait()
        return web.json_response({"path": request.path})

    return await serve(handler)


def test_an_urgent_request_is_not_queued_behind_a_full_pool() -> None:
    async def body() -> None:
        release, arrived = asyncio.Event(), []
        runner, port = await _held_server(release, arrived)
        transport = Transport(connection_for(f"http://127.0.0.1:{port}"), qps=0, burst=1,
                              connections=2)
        try:
            held = [asyncio.create_task(transport.request("GET", "/held")) for _ in range(3)]
            async with asyncio.timeout(10):
                while arrived.count("/held") < 2:  # the pool's two connections are busy
                    await asyncio.sleep(0.01)
            normal = asyncio.create_task(transport.request("GET", "/normal"))
            with urgent():
                answer = await asyncio.wait_for(transport.request("GET", "/urgent"), 10)
            assert answer == {"path": "/urgent"}
            assert not normal.done() and "/normal" not in arrived  # still waits for the pool
            release.set()
            assert (await asyncio.wait_for(normal, 10)) == {"path": "/normal"}
            await asyncio.wait_for(asyncio.gather(*held), 10)
        finally:
            release.set()
            await transport.close()
            await runner.cleanup()

    asyncio.run(body())
