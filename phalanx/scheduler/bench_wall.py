"""Where a bench run's wall time went, from the kernel's per-thread scheduling counters.

The scheduler bench runs in one thread on virtual time, so the wall time of its window is
time on a CPU, time runnable but waiting for one (other processes held the CPUs), or time
blocked (page faults, I/O). The split tells a slower scheduler apart from a busier machine.
"""

from __future__ import annotations

from typing import Any


def thread_schedstat() -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for one) of the calling thread, from
    /proc/thread-self/schedstat (Linux with schedstats); None where the kernel has none."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            on_cpu_ns, wait_ns, _ = f.read().split()
    except (OSError, ValueError):
        return None
    return int(on_cpu_ns) / 1e9, int(wait_ns) / 1e9


def wall_split(first: tuple[float, float] | None, last: tuple[float, float] | None,
               span: float, window: float, bound: int) -> dict[str, Any]:
    """`span` (first cycle until the scheduler is idle, a little past the last bind) split by
    the kernel: on a CPU, waiting for one, blocked.

    `pods_per_second_uncontended` is the rate with the run-queue wait taken out of the
    window (first cycle .. last bind), the wait's share of the span applied to it: what this
    build does when it has a CPU to itself (other load still moves it through caches)."""
    if first is None or last is None or span <= 0:
        return {}
    on_cpu = last[0] - first[0]
    waited = last[1] - first[1]
    return {
        "split_seconds": round(span, 3),
        "on_cpu_seconds": round(on_cpu, 3),
        "runqueue_wait_seconds": round(waited, 3),
        "blocked_seconds": round(max(span - on_cpu - waited, 0.0), 3),
        "pods_per_second_uncontended": round(bound / max(window * (1 - min(waited / span, 1.0)), 1e-9), 1),
    }
