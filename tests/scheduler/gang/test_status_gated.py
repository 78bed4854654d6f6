"""Members that all exist but still carry scheduling gates (the operator's, lifted right
after it initializes the PodGang) are not reported at once: a healthy workload gets no
GangIncomplete Warning on every pod. Gates that stay past the grace are reported."""

from __future__ import annotations

import asyncio

from phalanx.api import labels as L
from phalanx.api.core import Event, PodSchedulingGate
from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import NAMESPACE, make_gangs, make_nodes


def test_gates_lifted_within_the_grace_are_not_reported_and_gates_that_stay_are() -> None:
    async def main() -> tuple[dict[str, list[str]], dict[str, str | None]]:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        gangs = make_gangs(8, 4, 4, seed=3)
        assert len(gangs) == 2
        sched = Scheduler(cluster)
        await sched.start()
        for gang, pods in gangs:
            await cluster.create(gang)
            for pod in pods:
                gate = PodSchedulingGate(name=L.GATE_PODGANG_PENDING_CREATION)
                pod.spec.scheduling_gates = [gate]
                await cluster.create(pod)
        await asyncio.sleep(2)  # within the grace (5 s): lift the first gang's gates
        for pod in gangs[0][1]:
            await cluster.patch(Pod, pod.name, {"spec": {"schedulingGates": None}}, NAMESPACE)
        await asyncio.sleep(10)
        await sched.wait_idle(timeout=60)
        await sched.stop()
        events: dict[str, list[str]] = {}
        for e in (await cluster.list(Event, NAMESPACE)).items:
            events.setdefault(e.involved_object.name, []).append(f"{e.reason}: {e.message}")
        nodes = {p.name: p.spec.node_name for p in (await cluster.list(Pod, NAMESPACE)).items}
        return events, nodes

    events, nodes = run_virtual(main)
    first, second = "gang-00000", "gang-00001"
    for j in range(4):
        assert nodes[f"{first}-{j}"] and not nodes[f"{second}-{j}"]
        assert [m for m in events.get(f"{first}-{j}", []) if "GangIncomplete" in m] == []
        assert any(m.startswith("GangIncomplete: ") and "still have scheduling gates" in m
                   for m in events[f"{second}-{j}"]), events
