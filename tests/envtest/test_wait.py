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
