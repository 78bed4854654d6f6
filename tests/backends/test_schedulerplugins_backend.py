"""scheduler-plugins (scheduling.x-k8s.io, issue 22 item 8): the PodGroup field by field for
the Grove multi-node disaggregated sample, pod preparation, updates that keep what others set,
deletion, admission, config errors; and the embedded scheduler gang-schedules what the
backend writes, all or nothing across the PodGang's groups."""

from __future__ import annotations

import pytest

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Node, NodeSpec, NodeStatus, PriorityClass
from phalanx.api.pod import Pod
from phalanx.api.schedulerplugins import POD_GROUP_LABEL, SchedulerPluginsPodGroup
from phalanx.backends import BackendRegistry
from phalanx.backends.base import Capability
from phalanx.backends.schedulerplugins import (
    SchedulerPluginsBackend,
    SchedulerPluginsBackendConfig,
)
from phalanx.cluster.client import NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.scheduler import Scheduler

from . import samples as s

GROUPS = [g for g, _ in s.BASE_GROUPS]


def test_podgroup_field_by_field_pod_preparation_and_deletion() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = SchedulerPluginsBackend(
            SchedulerPluginsBackendConfig.model_validate({"scheduleTimeout": "2m"}))
        await backend.init(client)
        pg = await client.create(s.podgang())
        await backend.sync_podgang(pg)
        obj = await client.get(SchedulerPluginsPodGroup, s.BASE_PODGANG, "default")
        assert [(r.kind, r.name, r.uid) for r in obj.metadata.owner_references] == [
            ("PodGang", s.BASE_PODGANG, pg.metadata.uid)]
        # The whole PodGang is one gang: 1 + 4 + 1 + 2.
        assert obj.to_dict()["spec"] == {"minMember": 8, "scheduleTimeoutSeconds": 120}
        assert obj.metadata.labels[labels.LABEL_PODGANG] == s.BASE_PODGANG

        pod = s.grove_pod(GROUPS[1])
        backend.prepare_pod(pod)
        assert pod.spec.scheduler_name == "scheduler-plugins-scheduler"
        assert pod.metadata.labels[POD_GROUP_LABEL] == s.BASE_PODGANG

        await backend.on_podgang_delete(pg)
        with pytest.raises(NotFound):
            await client.get(SchedulerPluginsPodGroup, s.BASE_PODGANG, "default")
        await backend.on_podgang_delete(pg)  # idempotent

    run_virtual(main)


def test_update_keeps_what_others_set() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = SchedulerPluginsBackend(SchedulerPluginsBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang())
        await backend.sync_podgang(pg)
        live = await client.get(SchedulerPluginsPodGroup, s.BASE_PODGANG, "default")
        live.spec.min_resources = {"cpu": "4"}
        live = await client.update(live)
        live.status.phase = "Scheduling"
        await client.update_status(live)

        pg.spec.pod_groups[1].min_replicas = 2
        await backend.sync_podgang(pg)
        after = await client.get(SchedulerPluginsPodGroup, s.BASE_PODGANG, "default")
        assert after.metadata.uid == live.metadata.uid
        assert after.spec.min_member == 6 and after.spec.schedule_timeout_seconds is None
        assert after.spec.min_resources == {"cpu": "4"} and after.status.phase == "Scheduling"

    run_virtual(main)


def test_admission_reports_what_coscheduling_cannot_keep() -> None:
    backend = SchedulerPluginsBackend(SchedulerPluginsBackendConfig())
    assert backend.validate_podcliqueset(s.pcs("scheduler-plugins-scheduler")) == []
    pcs = s.pcs("scheduler-plugins-scheduler", topologyConstraint={"packDomain": "zone"})
    worker = pcs.clique("pworker")
    assert worker is not None
    worker.spec.min_available = 2  # 2 of 4 may start: only a per-group minimum keeps it
    found = {(i.feature, i.field) for i in backend.validate_podcliqueset(pcs)}
    assert found == {
        (Capability.TOPOLOGY, "spec.template.topologyConstraint.packDomain"),
        (Capability.GROUP_MINIMUMS, "spec.template.cliques[1].spec.minAvailable"),
    }


def test_profile_is_known_and_its_config_errors_name_the_key() -> None:
    registry = BackendRegistry.from_profiles([("scheduler-plugins", None)], "scheduler-plugins")
    assert registry.get("scheduler-plugins-scheduler").name == "scheduler-plugins"
    OperatorConfiguration.model_validate({"scheduler": {
        "profiles": [{"name": "scheduler-plugins"}], "defaultProfileName": "scheduler-plugins"}})
    with pytest.raises(ValueError, match="scheduleTimeout"):
        SchedulerPluginsBackendConfig.model_validate({"scheduleTimeout": "500ms"})
    with pytest.raises(ValueError, match="scheduleTimeout"):
        SchedulerPluginsBackendConfig.model_validate({"scheduleTimeout": "soon"})


def _node(name: str) -> Node:
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return Node(metadata=ObjectMeta(name=name), spec=NodeSpec(),
                status=NodeStatus(allocatable=alloc, capacity=alloc))


@pytest.mark.parametrize("worker_cpu", ["10m", "5"])
def test_the_embedded_scheduler_places_the_podgang_whole_or_not_at_all(worker_cpu: str) -> None:
    """3 nodes of 8 CPUs: 4 prefill workers of 5 CPUs cannot all be placed, so no pod of the
    base PodGang is bound (leaders included); with 10m workers all of them are."""

    async def main() -> None:
        cluster = MemoryCluster()
        for i in range(3):
            await cluster.create(_node(f"node-{i}"))
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="inference-high"), value=1000))
        config = OperatorConfiguration.model_validate({"scheduler": {
            "profiles": [{"name": "scheduler-plugins"}],
            "defaultProfileName": "scheduler-plugins"}})
        pcs = s.pcs("scheduler-plugins-scheduler")
        worker = pcs.clique("pworker")
        assert worker is not None
        requests = worker.spec.pod_spec.containers[0].resources.requests
        requests["cpu"] = worker_cpu  # type: ignore[index]
        async with OperatorManager(cluster, config) as op:
            scheduler = Scheduler(cluster)
            await scheduler.start()
            try:
                await cluster.create(pcs)
                for _ in range(3):
                    await op.wait_idle()
                    await scheduler.wait_idle()
            finally:
                await scheduler.stop()
            pods = (await cluster.list(Pod, "default")).items
            base = {p.name for p in pods
                    if p.metadata.labels[labels.LABEL_PODGANG] == s.BASE_PODGANG}
            bound = {p.name for p in pods if p.spec.node_name}
            assert len(base) == 8
            assert all(p.metadata.labels[POD_GROUP_LABEL] == p.metadata.labels[labels.LABEL_PODGANG]
                       for p in pods)
            if worker_cpu == "10m":
                assert base <= bound
            else:
                assert bound & base == set()

    run_virtual(main)
