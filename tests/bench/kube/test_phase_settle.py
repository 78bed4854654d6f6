"""Before t0 the bench waits (bounded) for the machine to settle, and records what it saw."""

import asyncio
import os

from phalanx.bench.kube.phase import until_machine_settles


def _busy_counter(per_sample: list[float]):
    """A machine_busy_seconds stand-in: each read after the first adds the next amount."""
    state = {"total": 0.0, "reads": 0}

    def read() -> float:
        if state["reads"] % 2 == 1 and per_sample:
            state["total"] += per_sample.pop(0)
        state["reads"] += 1
        return state["total"]

    return read


def test_returns_once_a_sample_is_quiet():
    cpus = os.cpu_count() or 1
    busy = _busy_counter([0.9 * cpus * 0.01, 0.8 * cpus * 0.01, 0.0])
    got = asyncio.run(until_machine_settles(sample=0.01, max_wait=5.0, busy_seconds=busy))
    assert got["busy_first"] == 0.9 and got["busy_at_t0"] == 0.0
    assert got["seconds"] < 5.0


def test_gives_up_after_max_wait_on_a_busy_machine():
    cpus = os.cpu_count() or 1
    busy = _busy_counter([cpus * 0.01] * 1000)
    got = asyncio.run(until_machine_settles(sample=0.01, max_wait=0.05, busy_seconds=busy))
    assert got["busy_at_t0"] == 1.0 and got["seconds"] >= 0.05
