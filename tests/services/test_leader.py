"""Leader election: one leader at a time, failover after a partition, clean hand-over."""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.core import Lease
from phalanx.cluster.client import ServiceUnavailable
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.services.leader import LeaderElector, LeaseTiming


class Partitionable:
    """A client wrapper whose calls fail while `cut` (a replica partitioned from the API)."""

    def __init__(self, inner: MemoryCluster) -> None:
        self.inner = inner
        self.cut = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name == "clock":
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.cut:
                raise ServiceUnavailable("partitioned")
            return await attr(*args, **kwargs)

        return call

    @property
    def clock(self) -> Any:
        return self.inner.clock


def test_partitioned_leader_steps_down_before_the_standby_takes_over() -> None:
    async def main() -> list[tuple[str, float, float]]:
        mem = MemoryCluster()
        loop = asyncio.get_running_loop()
        terms: list[tuple[str, float, float]] = []
        clients = {n: Partitionable(mem) for n in ("a", "b")}

        def lead(who: str):
            async def work() -> None:
                start = loop.time()
                try:
                    await asyncio.sleep(10_000)
                finally:
                    terms.append((who, start, loop.time()))
            return work

        electors = {n: LeaderElector(clients[n], name="phalanx-operator", namespace="sys",
                                     identity=n, timing=LeaseTiming(15, 10, 2))
                    for n in ("a", "b")}
        ra = asyncio.create_task(electors["a"].run(lead("a")))
        await asyncio.sleep(1)
        rb = asyncio.create_task(electors["b"].run(lead("b")))
        await asyncio.sleep(30)
        assert electors["a"].is_leader and not electors["b"].is_leader
        clients["a"].cut = True
        assert await ra is False  # a gave up leadership by itself
        await asyncio.sleep(30)
        assert electors["b"].is_leader
        lease = await mem.get(Lease, "phalanx-operator", "sys")
        assert lease.spec.holder_identity == "b" and lease.spec.lease_transitions == 1
        rb.cancel()
        await asyncio.gather(rb, return_exceptions=True)
        return terms

    terms = run_virtual(main())
    (who1, s1, e1), (who2, s2, e2) = sorted(terms, key=lambda t: t[1])
    assert (who1, who2) == ("a", "b")
    assert e1 < s2  # never two leaders at once


def test_release_lets_a_standby_take_over_at_once() -> None:
    async def main() -> float:
        mem = MemoryCluster()
        loop = asyncio.get_running_loop()
        timing = LeaseTiming(15, 10, 2)
        a = LeaderElector(mem, name="l", namespace="sys", identity="a", timing=timing)
        b = LeaderElector(mem, name="l", namespace="sys", identity="b", timing=timing)
        done = asyncio.Event()

        async def short_term() -> None:
            await asyncio.sleep(5)

        async def b_leads() -> None:
            done.set()

        assert await a.run(short_term) is True  # finished: lease released
        released_at = loop.time()
        assert await b.run(b_leads) is True
        return loop.time() - released_at

    # b sees an empty holder and acquires on its first try, without waiting 15s.
    assert run_virtual(main()) < 1


def test_bad_timing_is_rejected() -> None:
    import pytest

    with pytest.raises(ValueError, match="leaseDuration > renewDeadline"):
        LeaseTiming(10, 10, 2)
    # client-go's NewLeaderElector: renewDeadline > retryPeriod * JitterFactor (1.2).
    with pytest.raises(ValueError, match=r"retryPeriod x 1.2 \(client-go's JitterFactor\)"):
        LeaseTiming(10, 2.2, 2)
    assert LeaseTiming(10, 2.5, 2).renew_deadline == 2.5


def test_a_clean_stop_releases_the_lease_without_saying_it_was_lost(caplog: Any) -> None:
    """Issue 15 item 8: SIGTERM logged `lost lease`. `run_with_leadership` cancels the
    elector on a requested stop, as the services do on SIGTERM."""
    import logging

    from phalanx.services.metrics import PhalanxMetrics
    from phalanx.services.runtime import run_with_leadership

    async def main() -> tuple[int, str | None]:
        cluster = MemoryCluster()
        stop = asyncio.Event()
        leading = asyncio.Event()

        async def lead() -> None:
            leading.set()
            await asyncio.Event().wait()

        task = asyncio.ensure_future(run_with_leadership(
            cluster, enabled=True, lease="l", namespace="ns", timing=LeaseTiming(),
            metrics=PhalanxMetrics(), stop=stop, lead=lead))
        await asyncio.wait_for(leading.wait(), 30)
        await asyncio.sleep(30)  # a few renewals
        stop.set()
        code = await asyncio.wait_for(task, 30)
        lease = await cluster.get(Lease, "l", "ns")
        return code, lease.spec.holder_identity

    with caplog.at_level(logging.INFO, logger="phalanx.leader"):
        code, holder = run_virtual(main)
    assert code == 0 and not holder
    messages = [r.getMessage() for r in caplog.records if r.name == "phalanx.leader"]
    assert any("acquired lease ns/l" in m for m in messages)
    assert any("released lease ns/l" in m for m in messages)
    assert not any("lost" in m for m in messages), messages


def test_readiness_fails_while_the_lease_cannot_be_reached_and_names_why() -> None:
    """The `leader-election` readiness check: a replica that cannot read its Lease (a
    partition here, RBAC on a real server) is not ready; one that can is, leader or not."""
    from phalanx.services.metrics import PhalanxMetrics
    from phalanx.services.runtime import run_with_leadership
    from phalanx.services.server import Probes

    async def main() -> list[tuple[bool, list[str]]]:
        mem = MemoryCluster()
        seen: list[tuple[bool, list[str]]] = []
        probes = {n: Probes() for n in ("a", "b")}
        clients = {n: Partitionable(mem) for n in ("a", "b")}
        stop = asyncio.Event()
        leading = asyncio.Event()

        async def lead() -> None:
            leading.set()
            await asyncio.Event().wait()

        clients["b"].cut = True
        tasks = [asyncio.ensure_future(run_with_leadership(
            clients[n], enabled=True, lease="l", namespace="ns", timing=LeaseTiming(15, 10, 2),
            metrics=PhalanxMetrics(), stop=stop, lead=lead, probes=probes[n]))
            for n in ("a", "b")]
        await asyncio.wait_for(leading.wait(), 30)
        await asyncio.sleep(5)
        seen += [await probes[n].run(probes[n].readiness) for n in ("a", "b")]
        clients["b"].cut = False
        await asyncio.sleep(5)  # b's next attempt sees a live leader
        seen.append(await probes["b"].run(probes["b"].readiness))
        stop.set()
        await asyncio.gather(*tasks)
        return seen

    (a_ok, _), (b_ok, b_lines), (b_later, _) = run_virtual(main)
    assert a_ok and not b_ok and b_later
    assert b_lines == ["[-]leader-election failed: lease ns/l: ServiceUnavailable: partitioned"]
