"""A gang held back in PreEnqueue is first reported only after a grace: members created
over a few seconds (5 s), or waiting behind the operator's scheduling gate (30 s: the owner's
grace; the gate is lifted once the operator has initialized the PodGang, which takes longer
than 5 s on a busy API server), get no GangIncomplete Warning on a healthy workload. A gang
that stays incomplete or gated past its grace is reported."""

from __future__ import annotations

import asyncio

from phalanx.api import labels as L
from phalanx.api.core import Event, PodSchedulingGate
from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import NAMESPACE, make_gangs, make_nodes


async def _events(cluster: MemoryCluster) -> dict[str, list[str]]:
    events: dict[str, list[str]] = {}
    for e in (await cluster.list(Event, NAMESPACE)).items:
        events.setdefault(e.involved_object.name, []).append(f"{e.reason}: {e.message}")
    return events


def _incomplete(events: dict[str, list[str]], pod: str) -> list[str]:
    return [m for m in events.get(pod, []) if m.startswith("GangIncomplete: ")]


def test_transient_incompleteness_is_not_reported_and_lasting_incompleteness_is() -> None:
    async def main() -> tuple[dict[str, list[str]], dict[str, list[str]],
                              dict[str, str | None]]:
        cluster = MemoryCluster()
        for node in make_nodes(8):
            await cluster.create(node)
        gangs = make_gangs(16, 4, 4, seed=3)
        assert len(gangs) == 4
        sched = Scheduler(cluster)
        await sched.start()
        gate = PodSchedulingGate(name=L.GATE_PODGANG_PENDING_CREATION)
        slow, lifted, gated, short = gangs
        await cluster.create(slow[0])
        for pod in slow[1]:  # one member a second: 3 s from the first to the last
            await cluster.create(pod)
            await asyncio.sleep(1)
        for gang, _ in (lifted, gated, short):  # the PodGang first, as the operator does
            await cluster.create(gang)
        for pod in lifted[1] + gated[1]:
            pod.spec.scheduling_gates = [gate]
            await cluster.create(pod)
        for pod in short[1][:2]:  # 2 of 4, for good
            await cluster.create(pod)
        await asyncio.sleep(2)  # within the grace (5 s): lift one gang's gates
        for pod in lifted[1]:
            await cluster.patch(Pod, pod.name, {"spec": {"schedulingGates": None}}, NAMESPACE)
        await asyncio.sleep(10)  # past the incomplete grace, within the owner's
        early = await _events(cluster)
        await asyncio.sleep(25)  # past the owner's grace too
        await sched.wait_idle(timeout=60)
        await sched.stop()
        nodes = {p.name: p.spec.node_name for p in (await cluster.list(Pod, NAMESPACE)).items}
        return early, await _events(cluster), nodes

    early, events, nodes = run_virtual(main)
    for gang in ("gang-00000", "gang-00001"):  # slow, lifted: placed, never reported
        for j in range(4):
            assert nodes[f"{gang}-{j}"]
            assert _incomplete(events, f"{gang}-{j}") == []
    for j in range(4):  # gated for good: reported once the owner's grace is over
        assert not nodes[f"gang-00002-{j}"]
        assert _incomplete(early, f"gang-00002-{j}") == [], early
        assert any("still have scheduling gates" in m
                   for m in _incomplete(events, f"gang-00002-{j}")), events
    for j in range(2):  # incomplete for good: reported after the incomplete grace
        assert any("2/4 members created" in m for m in _incomplete(early, f"gang-00003-{j}")), early


def test_a_change_looks_at_the_changed_gang_not_at_every_waiting_gang(monkeypatch) -> None:
    """While hundreds of gangs are in their grace, each member created wakes the status
    worker; it must look again at that gang only. Re-checking every waiting gang on every
    change made the worker quadratic: 4x fewer pods/s at 5,000 nodes and 50,000 pods."""
    from phalanx.scheduler.gang.manager import GangManager

    calls = 0
    blocked = GangManager.blocked

    def counting(self, st):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return blocked(self, st)

    monkeypatch.setattr(GangManager, "blocked", counting)

    async def main() -> int:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        gangs = make_gangs(800, 4, 4, seed=1)  # 200 gangs of 4; 3 of each gang's members
        sched = Scheduler(cluster)
        await sched.start()
        created = 0
        for _, pods in gangs:  # the gangs stay incomplete: every one waits in its grace
            for pod in pods[:3]:
                await cluster.create(pod)
                created += 1
                await asyncio.sleep(0.001)
        await asyncio.sleep(10)
        await sched.wait_idle(timeout=60)
        await sched.stop()
        return created

    created = run_virtual(main)
    # PreEnqueue itself asks `blocked` about a pod's gang; the status worker adds a couple
    # of looks per change. The quadratic worker made 101,100 calls here for 600 pods.
    assert calls < 10 * created, (calls, created)


def test_a_podgang_its_operator_has_not_initialized_gets_the_owners_grace() -> None:
    """The gate-free path: every member exists, ungated, and the scheduler holds them until
    the operator marks the PodGang Initialized and BackendSynced. That hold is the owner's:
    reported only after 30 s, not after 5."""
    from tests.scheduler.gang.builders import members, podgang

    async def main() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        sched = Scheduler(cluster)
        await sched.start()
        gang = podgang("held", {"w": 4}, namespace=NAMESPACE)
        gang.metadata.labels[L.LABEL_MANAGED_BY] = L.MANAGED_BY_VALUE  # no conditions yet
        await cluster.create(gang)
        for pod in members("held", "w", 4, namespace=NAMESPACE):
            await cluster.create(pod)
        await asyncio.sleep(10)
        early = await _events(cluster)
        await asyncio.sleep(25)
        await sched.wait_idle(timeout=60)
        await sched.stop()
        return early, await _events(cluster)

    early, events = run_virtual(main)
    assert all(_incomplete(early, f"w-{j}") == [] for j in range(4)), early
    for j in range(4):
        assert any("PodGang held is not Initialized yet" in m
                   for m in _incomplete(events, f"w-{j}")), events
