"""Bounded waits fail saying what they waited for and what they saw last."""

import asyncio

import pytest

from phalanx.envtest import Pending, WaitTimeout, wait_until, wait_until_async


def test_returns_the_first_truthy_value():
    calls = iter([0, None, Pending("1/3"), "done"])
    assert wait_until(lambda: next(calls), 5, what="x", interval=0) == "done"


def test_timeout_names_the_wait_and_the_last_state():
    with pytest.raises(WaitTimeout) as err:
        wait_until(lambda: Pending("2/3 pods Running"), 0.05, what="3 pods Running",
                   interval=0.01)
    assert "waiting for 3 pods Running" in str(err.value)
    assert "last seen: 2/3 pods Running" in str(err.value)


def test_exceptions_are_retried_and_reported():
    def boom():
        raise ConnectionError("refused")

    with pytest.raises(WaitTimeout, match="ConnectionError: refused"):
        wait_until(boom, 0.05, what="a server", interval=0.01)


def test_async_predicates_and_a_hanging_call_are_cut_off():
    async def hangs():
        await asyncio.Event().wait()

    async def main():
        assert await wait_until_async(lambda: 7, 1, what="x") == 7
        with pytest.raises(WaitTimeout, match="did not return before the deadline"):
            await wait_until_async(hangs, 0.1, what="a hanging check")

    asyncio.run(main())


def test_a_check_cut_off_at_the_deadline_keeps_what_the_one_before_saw():
    calls = []

    async def slower_each_time():
        calls.append(1)
        if len(calls) > 1:
            await asyncio.Event().wait()
        return Pending("2 pods left")

    async def main():
        with pytest.raises(WaitTimeout) as err:
            await wait_until_async(slower_each_time, 0.2, what="x", interval=0.01)
        assert "last seen: 2 pods left (then a check did not return" in str(err.value)

    asyncio.run(main())


def test_a_stall_wait_lasts_while_the_state_changes_and_ends_when_it_does_not() -> None:
    import asyncio

    from phalanx.envtest.wait import Pending, WaitTimeout, wait_until_async

    async def main() -> None:
        ticks = iter(range(1000))

        def progressing() -> object:  # a new state on every call, done at the 30th
            n = next(ticks)
            return n >= 30 or Pending(f"{n}/30")

        # 30 calls at 0.01 s: longer than the 0.1 s stall, but the state keeps changing.
        assert await wait_until_async(progressing, 5, what="progress", interval=0.01,
                                      stall=0.1) is True

        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await wait_until_async(lambda: Pending("0/3"), 5, what="3 pods", interval=0.01,
                                   stall=0.1)
        except WaitTimeout as err:
            assert "nothing changed for 0.1s" in str(err) and "0/3" in str(err)
        else:
            raise AssertionError("a wait on which nothing moves must fail")
        assert loop.time() - started < 1  # after the stall, not the 5 s timeout

    asyncio.run(main())
