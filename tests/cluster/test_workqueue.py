"""Work queue: dedup, no concurrent processing of a key, delays, backoff, shutdown."""

import asyncio

import pytest

from phalanx.cluster.clock import run_virtual, settle, wait_for_condition
from phalanx.cluster.workqueue import ExponentialBackoff, ShutDown, WorkQueue


def test_dedup_while_queued():
    async def main():
        q = WorkQueue("t")
        for k in ["a", "b", "a", "c", "b"]:
            q.add(k)
        assert len(q) == 3
        assert [await q.get() for _ in range(3)] == ["a", "b", "c"]
    run_virtual(main)


def test_key_being_processed_is_requeued_once_after_done():
    async def main():
        q = WorkQueue("t")
        q.add("a")
        key = await q.get()
        q.add("a")
        q.add("a")
        assert len(q) == 0  # not handed to another worker while processing
        q.done(key)
        assert len(q) == 1
        assert await q.get() == "a"
        q.done("a")
        assert q.idle()
    run_virtual(main)


def test_never_processed_concurrently_with_many_workers():
    async def main():
        q = WorkQueue("t")
        running: set[str] = set()
        overlaps = []
        processed = []

        async def worker():
            while True:
                try:
                    k = await q.get()
                except ShutDown:
                    return
                if k in running:
                    overlaps.append(k)
                running.add(k)
                await asyncio.sleep(0.1)
                q.add(k) if processed.count(k) < 2 else None  # re-add while processing
                processed.append(k)
                running.discard(k)
                q.done(k)

        workers = [asyncio.create_task(worker()) for _ in range(8)]
        for k in "abcabc":
            q.add(k)
        assert await wait_for_condition(q.idle, timeout=10)
        q.shutdown()
        await asyncio.gather(*workers)
        assert overlaps == []
        assert sorted(processed) == sorted("aaabbbccc")
    run_virtual(main)


def test_add_after_keeps_the_earliest_time():
    async def main():
        loop = asyncio.get_running_loop()
        q = WorkQueue("t")
        q.add_after("a", 10)
        q.add_after("a", 5)
        q.add_after("a", 20)
        t0 = loop.time()
        assert q.next_delayed() == t0 + 5
        assert not q.idle(until=t0 + 5) and q.idle(until=t0 + 4)
        assert await q.get() == "a"
        assert loop.time() - t0 == 5
        q.done("a")
        assert q.idle(until=t0 + 100)
    run_virtual(main)


def test_rate_limited_backoff_and_forget():
    async def main():
        loop = asyncio.get_running_loop()
        q = WorkQueue("t", ExponentialBackoff(base=1.0, max_delay=5.0))
        times = []
        for _ in range(5):
            t0 = loop.time()
            q.add_rate_limited("a")
            await q.get()
            q.done("a")
            times.append(loop.time() - t0)
        assert times == [1.0, 2.0, 4.0, 5.0, 5.0]
        assert q.num_requeues("a") == 5
        q.forget("a")
        t0 = loop.time()
        q.add_rate_limited("a")
        await q.get()
        assert loop.time() - t0 == 1.0
    run_virtual(main)


def test_shutdown_wakes_waiting_workers():
    async def main():
        q = WorkQueue("t")
        waiting = asyncio.create_task(q.get())
        await settle()
        q.add_after("x", 5)
        q.shutdown()
        with pytest.raises(ShutDown):
            await waiting
        q.add("y")
        assert len(q) == 0
    run_virtual(main)


def test_cancelled_getter_passes_its_wakeup_on():
    async def main():
        q = WorkQueue("t")
        first = asyncio.create_task(q.get())
        second = asyncio.create_task(q.get())
        await settle()
        q.add("a")  # wakes `first`...
        first.cancel()  # ...which is cancelled before it runs
        assert await asyncio.wait_for(second, 1) == "a"
    run_virtual(main)
