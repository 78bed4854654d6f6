"""A pod's `SchedulingGated` PodScheduled condition does not outlive its gates once the
scheduler has tried it (issue 15 item 8). kube-apiserver sets the condition on creation;
kube-scheduler replaces it at the pod's first attempt (Unschedulable, or True on binding).
A gang is tried through its representative, so when the gang is found unschedulable every
member counts as tried."""

from __future__ import annotations

import asyncio

from phalanx.api.base import ObjectMeta
from phalanx.api.pod import Pod, PodSchedulingGate, PodSpec, ResourceRequirements
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes

def test_the_api_server_rule_memory_cluster_follows() -> None:
    async def main() -> tuple[str | None, str | None]:
        cluster = MemoryCluster()
        gates = [PodSchedulingGate(name="x")]
        gated = await cluster.create(Pod(metadata=ObjectMeta(name="g", namespace="default"),
                                         spec=PodSpec(containers=[{"name": "c", "image": "x"}],
                                                      scheduling_gates=gates)))
        plain = await cluster.create(Pod(metadata=ObjectMeta(name="p", namespace="default"),
                                         spec=PodSpec(containers=[{"name": "c", "image": "x"}])))
        cond = gated.get_condition("PodScheduled")
        return (cond.reason if cond else None), (c.reason if (c := plain.get_condition(
            "PodScheduled")) else None)

    assert run_virtual(main) == ("SchedulingGated", None)


def test_members_of_a_gang_found_unschedulable_lose_the_stale_gated_condition() -> None:
    async def main() -> dict[str, tuple[str, str | None, str]]:
        cluster = MemoryCluster()
        for node in make_nodes(4):  # 32 GPUs; the gang needs 9 pods of 8
            await cluster.create(node)
        [(gang, pods)] = make_gangs(9, 9, 9, seed=3)
        await cluster.create(gang)
        for pod in pods:  # created gated, as the operator does
            pod.spec.scheduling_gates = [
                PodSchedulingGate(name="grove.io/podgang-pending-creation")]
            pod.spec.containers[0].resources = ResourceRequirements.from_requests(
                {"cpu": "8", "nvidia.com/gpu": "8"})
            await cluster.create(pod)
        sched = Scheduler(cluster)
        await sched.start()
        try:
            for pod in pods:  # the gang is complete: gates lifted
                await cluster.patch(Pod, pod.name, {"spec": {"schedulingGates": None}},
                                    pod.namespace)
            for _ in range(3):
                await asyncio.sleep(10)  # past the gang status settle and min interval
                await sched.wait_idle(timeout=60)
            got = (await cluster.list(Pod, gang.namespace)).items
        finally:
            await sched.stop()
        out = {}
        for p in got:
            cond = p.get_condition("PodScheduled")
            assert cond is not None, p.name
            out[p.name] = (cond.status, cond.reason, cond.message or "")
        return out

    conditions = run_virtual(main)
    assert len(conditions) == 9
    assert all(status == "False" for status, _, _ in conditions.values())
    assert {reason for _, reason, _ in conditions.values()} == {"Unschedulable"}, conditions
    assert all(message for _, _, message in conditions.values())
