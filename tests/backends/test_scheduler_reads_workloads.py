"""Issue 9 end to end: whichever Workload API version the default-scheduler backend writes
(1.35 embedded pod groups, 1.36/1.37 standalone PodGroups), the Phalanx scheduler reads it
as kube-scheduler does: each pod group all-or-nothing, and since the backend writes one pod
group per PodGang (issue 15 item 6), the whole PodGang is."""

from __future__ import annotations

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Node, NodeSpec, NodeStatus, PriorityClass
from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.scheduler import Scheduler

from . import samples as s


def _node(name: str) -> Node:
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return Node(metadata=ObjectMeta(name=name), spec=NodeSpec(), status=NodeStatus(allocatable=alloc, capacity=alloc))


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2", "v1beta1"])
@pytest.mark.parametrize("worker_cpu", ["10m", "5"])
def test_scheduler_gang_schedules_each_workload_version(version: str, worker_cpu: str) -> None:
    """With 3 nodes of 8 CPUs, 4 prefill workers of 5 CPUs cannot all be placed (one per
    node): the base PodGang is one gang, so none of its pods is bound, leaders included.
    With 10m workers everything in the base gang is placed."""

    async def main() -> None:
        cluster = MemoryCluster()
        for i in range(3):
            await cluster.create(_node(f"node-{i}"))
        # The sample's pods name this class; without it no pod exists and nothing is tested.
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="inference-high"), value=1000))
        config = OperatorConfiguration.model_validate({"scheduler": {"profiles": [
            {"name": "default-scheduler",
             "config": {"gangScheduling": True, "workloadAPIVersion": version}}]}})
        pcs = s.pcs()
        worker = pcs.clique("pworker")
        assert worker is not None
        worker.spec.pod_spec.containers[0].resources.requests["cpu"] = worker_cpu  # type: ignore[index, union-attr]
        async with OperatorManager(cluster, config) as op:
            scheduler = Scheduler(cluster)
            await scheduler.start()
            try:
                await cluster.create(pcs)
                for _ in range(3):  # operator and scheduler react to each other
                    await op.wait_idle()
                    await scheduler.wait_idle()
            finally:
                await scheduler.stop()
            pods = (await cluster.list(Pod, "default")).items
            bound = {p.name for p in pods if p.spec.node_name}
            base = {p.name for p in pods if p.metadata.labels.get("grove.io/podgang") == s.BASE_PODGANG}
            assert len(base) == 8
            if worker_cpu == "10m":
                assert base <= bound
            else:
                assert bound & base == set()  # all-or-nothing across the PodGang's groups

    run_virtual(main)
