"""Permit timeouts of the waiting-pods map: each plugin's timeout rejects the pod when it
passes, counted from when the pod was parked; pods allowed or rejected before never time out;
and once no parked pod is left to time out, no timer is left on the loop (a virtual clock
would otherwise jump to it)."""

from __future__ import annotations

import asyncio

from phalanx.cluster.clock import run_virtual
from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.waiting import WaitingPodImpl, WaitingPods

from ..helpers import pod


def _park(waiting: WaitingPods, name: str, **timeouts: float) -> WaitingPodImpl:
    wp = WaitingPodImpl(PodInfo(pod(name)), "n1", timeouts)
    waiting.add(wp)
    return wp


def _timers(loop: asyncio.AbstractEventLoop) -> int:
    return sum(1 for h in loop._scheduled if not h.cancelled())  # type: ignore[attr-defined]


def test_each_plugin_timeout_rejects_at_its_own_time():
    async def main() -> list[tuple[str, float, str]]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        waiting = WaitingPods()
        seen: list[tuple[str, float, str]] = []

        async def watch(wp: WaitingPodImpl) -> None:
            st = await wp.wait()
            seen.append((wp.info.name, round(loop.time() - t0, 6), st.plugin))
            assert st.code == Code.UNSCHEDULABLE and "timeout after waiting" in st.message

        a = _park(waiting, "a", Slow=30.0, Fast=10.0)
        await asyncio.sleep(5)
        b = _park(waiting, "b", Slow=2.0)
        c = _park(waiting, "c", Slow=1.0)
        await asyncio.gather(watch(a), watch(b), watch(c))
        return seen

    assert run_virtual(main) == [("c", 6.0, "Slow"), ("b", 7.0, "Slow"), ("a", 10.0, "Fast")]


def test_resolved_pods_never_time_out_and_leave_no_timer():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        waiting = WaitingPods()
        before = _timers(loop)
        allowed = _park(waiting, "allowed", Coscheduling=5.0)
        rejected = _park(waiting, "rejected", Coscheduling=3.0)
        late = _park(waiting, "late", Coscheduling=8.0)
        assert _timers(loop) == before + 1  # one timer for the map, not one per pod
        allowed.allow("Coscheduling")
        rejected.reject("Coscheduling", "gang rejected")
        assert (await allowed.wait()).is_success
        assert (await rejected.wait()).message == "gang rejected"
        st = await late.wait()
        assert st.plugin == "Coscheduling" and "8s" in st.message
        assert _timers(loop) == before
        # Many pods parked and allowed: the heap is rebuilt without them, the map keeps
        # one timer, and none once nothing is left waiting.
        keep = _park(waiting, "keep", Coscheduling=100.0)
        for i in range(1000):
            _park(waiting, f"p{i}", Coscheduling=50.0).allow("Coscheduling")
        assert len(waiting._due) <= 256 + 1 and _timers(loop) == before + 1
        keep.allow("Coscheduling")
        assert _timers(loop) == before and not waiting._due

    run_virtual(main)
