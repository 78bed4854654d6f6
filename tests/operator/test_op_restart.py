"""Restart: the operator stopped halfway through materialising a large PodCliqueSet; a fresh
operator converges with no duplicate and no missing object."""

from __future__ import annotations

import asyncio

from op_harness import NS, Binder, make_pcs

from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodGang
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.sim.kubelet import Kubelet
from tests.podnames import hostname

REPLICAS = 60


def expected_pods() -> list[str]:
    out = [f"big-{i}-{c}-{k}" for i in range(REPLICAS) for c, n in (("a", 4), ("b", 2))
           for k in range(n)]
    out += [f"big-{i}-grp-{j}-{c}-{k}" for i in range(REPLICAS) for j in range(2)
            for c, n in (("leader", 1), ("worker", 2)) for k in range(n)]
    return sorted(out)


def test_restart_halfway_converges_without_duplicates() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        binder, kubelet = Binder(cluster), Kubelet(cluster)
        await binder.start()
        await kubelet.start()
        first = OperatorManager(cluster)
        await first.start()
        half = len(expected_pods()) // 2
        stopping: list[asyncio.Task[None]] = []

        def on_pod(pod: Pod) -> None:
            if len(first.ctx.pods) >= half and not stopping:
                stopping.append(asyncio.get_running_loop().create_task(first.stop()))

        first.ctx.pods.add_handler(on_add=on_pod)
        await cluster.create(make_pcs("big", [("a", 4), ("b", 2), ("leader", 1), ("worker", 2)],
                                      replicas=REPLICAS,
                                      groups=[("grp", ["leader", "worker"], 2, 1)]))
        while not stopping:
            await asyncio.sleep(0)
        await stopping[0]
        await binder.manager.wait_idle()
        await kubelet.manager.wait_idle()
        made = cluster.count(Pod, NS)
        assert 0 < made < len(expected_pods()), "the first operator must stop mid-way"
        gated = sum(1 for p in (await cluster.list(Pod, NS)).items if p.spec.scheduling_gates)
        assert gated > 0

        second = OperatorManager(cluster)
        await second.start()
        for _ in range(20):
            await second.wait_idle()
            await binder.manager.wait_idle()
            await kubelet.manager.wait_idle()
            if not (second.manager.busy() or binder.manager.busy() or kubelet.manager.busy()):
                break

        pods = (await cluster.list(Pod, NS)).items
        assert sorted(hostname(p) for p in pods) == expected_pods()  # none missing, no duplicate
        assert all(p.status.phase == "Running" and not p.spec.scheduling_gates for p in pods)
        gangs = (await cluster.list(PodGang, NS)).items
        assert sorted(g.name for g in gangs) == sorted(
            [f"big-{i}" for i in range(REPLICAS)] + [f"big-{i}-grp-0" for i in range(REPLICAS)])
        for g in gangs:
            assert g.is_initialized and g.status.phase == "Running"
            referenced = sorted(g.pod_names())
            assert referenced == sorted(p.name for p in pods
                                        if p.metadata.labels["grove.io/podgang"] == g.name)
        assert cluster.count(PodClique, NS) == REPLICAS * (2 + 2 * 2)
        assert cluster.count(PodCliqueScalingGroup, NS) == REPLICAS
        # Every pod was created exactly once (no delete-and-recreate to "fix" anything).
        assert cluster.stats.writes[("create", "Pod")] == len(expected_pods())
        assert cluster.stats.writes.get(("delete", "Pod"), 0) == 0
        await second.stop()
        await kubelet.stop()
        await binder.stop()

    run_virtual(main)
