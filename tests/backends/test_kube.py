"""default-scheduler backend: non-gang, and the Workload API of Kubernetes 1.35 / 1.36 / 1.37."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.base import Resource
from phalanx.api.pod import Pod
from phalanx.api.scheduling import Workload
from phalanx.api.workloads import PodGroupV1Alpha2, PodGroupV1Beta1, WorkloadV1Alpha2, WorkloadV1Beta1
from phalanx.backends import BackendConfigError, BackendRegistry, SyncPending
from phalanx.backends.base import Capability
from phalanx.backends.kube import KubeBackend, KubeBackendConfig
from phalanx.cluster.client import NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

GROUPS = [g for g, _ in s.BASE_GROUPS]


def _backend(**config: Any) -> KubeBackend:
    return KubeBackend(KubeBackendConfig.model_validate(config))


def _owner_and_labels(obj: Resource, pg_uid: str) -> None:
    ref = obj.metadata.owner_references
    assert [(r.kind, r.name, r.uid, r.controller) for r in ref] == [
        ("PodGang", s.BASE_PODGANG, pg_uid, True)
    ]
    assert obj.metadata.labels == {
        labels.LABEL_MANAGED_BY: labels.MANAGED_BY_VALUE,
        labels.LABEL_PODGANG: s.BASE_PODGANG,
        labels.LABEL_PART_OF: s.PCS_NAME,
    }


def test_without_gang_scheduling_only_the_scheduler_name_is_set() -> None:
    async def main() -> None:
        client = s.RecordingClient(MemoryCluster())
        backend = _backend()
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        client.writes.clear()
        await backend.sync_podgang(pg)
        await backend.on_podgang_delete(pg)
        assert client.writes == []  # no scheduler object at all
        pod = s.grove_pod(GROUPS[1])
        pod.spec.scheduler_name = "something-else"
        before = pod.to_dict()
        backend.prepare_pod(pod)
        after = pod.to_dict()
        assert pod.spec.scheduler_name == "default-scheduler"
        after["spec"].pop("schedulerName", None)
        before["spec"].pop("schedulerName")
        assert after == before  # nothing else touched
        # No gangs without the Workload API; every pod field is still kube-scheduler's own.
        assert Capability.GANG not in backend.capabilities
        assert Capability.DYNAMIC_RESOURCES in backend.capabilities

    run_virtual(main)


GANG_MIN = sum(n for _, n in s.BASE_GROUPS)  # 1 + 4 + 1 + 2


def test_v1alpha1_workload_field_by_field() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="scheduling.k8s.io/v1alpha1")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        wl = await client.get(Workload, s.BASE_PODGANG, "default")
        _owner_and_labels(wl, pg.metadata.uid or "")
        # One pod group for the whole PodGang: 1.35 gangs each pod group on its own.
        assert wl.to_dict()["spec"] == {
            "controllerRef": {
                "apiGroup": "scheduler.grove.io",
                "kind": "PodGang",
                "name": s.BASE_PODGANG,
            },
            "podGroups": [{"name": s.BASE_PODGANG, "policy": {"gang": {"minCount": GANG_MIN}}}],
        }
        # 1.35 has no standalone PodGroups.
        assert (await client.list(PodGroupV1Alpha2)).items == []

        for group in (GROUPS[0], GROUPS[1]):  # leader and worker: the same gang
            pod = s.grove_pod(group)
            backend.prepare_pod(pod)
            assert pod.to_dict()["spec"]["workloadRef"] == {
                "name": s.BASE_PODGANG,
                "podGroup": s.BASE_PODGANG,
            }
            assert pod.spec.scheduling_group is None
            assert pod.spec.scheduler_name == "default-scheduler"

    run_virtual(main)


@pytest.mark.parametrize(
    ("version", "workload_kind", "podgroup_kind"),
    [
        ("scheduling.k8s.io/v1alpha2", WorkloadV1Alpha2, PodGroupV1Alpha2),
        ("v1beta1", WorkloadV1Beta1, PodGroupV1Beta1),  # short form accepted
    ],
)
def test_v1alpha2_and_v1beta1_one_workload_and_one_podgroup_per_podgang(
    version: str, workload_kind: type[Resource], podgroup_kind: type[Resource]
) -> None:
    async def main() -> None:
        client = s.RecordingClient(MemoryCluster())
        backend = _backend(gangScheduling=True, workloadAPIVersion=version)
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        client.writes.clear()
        await backend.sync_podgang(pg)

        api = workload_kind.API_VERSION
        # KEP-4671 creation order: the Workload, then its PodGroup (pods come after).
        assert client.writes == [
            ("create", f"{api}/Workload", s.BASE_PODGANG),
            ("create", f"{api}/PodGroup", s.BASE_PODGANG),
        ]
        wl = await client.get(workload_kind, s.BASE_PODGANG, "default")
        _owner_and_labels(wl, pg.metadata.uid or "")
        assert wl.to_dict()["spec"] == {
            "controllerRef": {
                "apiGroup": "scheduler.grove.io",
                "kind": "PodGang",
                "name": s.BASE_PODGANG,
            },
            "podGroupTemplates": [
                {"name": s.BASE_PODGANG, "schedulingPolicy": {"gang": {"minCount": GANG_MIN}}}
            ],
        }
        obj = await client.get(podgroup_kind, s.BASE_PODGANG, "default")
        _owner_and_labels(obj, pg.metadata.uid or "")
        assert obj.metadata.finalizers == [labels.FINALIZER_PODGROUP_PROTECTION]
        assert obj.to_dict()["spec"] == {
            "podGroupTemplateRef": {
                "workload": {"workloadName": s.BASE_PODGANG,
                             "podGroupTemplateName": s.BASE_PODGANG}
            },
            "schedulingPolicy": {"gang": {"minCount": GANG_MIN}},
        }
        # 1.35's embedded form is not written on 1.36+.
        assert (await client.list(Workload)).items == []

        for group in GROUPS:  # every clique of the PodGang points at the one PodGroup
            pod = s.grove_pod(group)
            backend.prepare_pod(pod)
            spec = pod.to_dict()["spec"]
            assert spec["schedulingGroup"] == {"podGroupName": s.BASE_PODGANG}
            assert "workloadRef" not in spec

        # A second sync with nothing new writes nothing.
        client.writes.clear()
        await backend.sync_podgang(pg)
        assert client.writes == []

    run_virtual(main)


def test_unknown_workload_api_version_names_the_field() -> None:
    with pytest.raises(BackendConfigError) as err:
        BackendRegistry.from_profiles(
            [("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v2"})],
            "default-scheduler",
        )
    assert err.value.field == "scheduler.profiles[0].config.workloadAPIVersion"
    assert "unknown Workload API version 'v2'" in str(err.value)
    assert "scheduling.k8s.io/v1beta1" in str(err.value)  # says what is known


class _Server(MemoryCluster):
    """A MemoryCluster that answers API discovery like a server of one Kubernetes version."""

    def __init__(self, served: set[str]) -> None:
        super().__init__()
        self.served = served

    async def serves(self, kind: type[Resource]) -> bool:
        return kind.API_VERSION in self.served


def test_discovery_picks_the_newest_served_version() -> None:
    async def main() -> None:
        backend = _backend(gangScheduling=True)
        await backend.init(_Server({"scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1alpha2"}))
        assert backend.workload_api_version == "scheduling.k8s.io/v1alpha2"
        backend = _backend(gangScheduling=True)
        await backend.init(_Server({"scheduling.k8s.io/v1alpha1"}))
        assert backend.workload_api_version == "scheduling.k8s.io/v1alpha1"
        # A client that cannot tell: the newest Phalanx knows.
        backend = _backend(gangScheduling=True)
        await backend.init(MemoryCluster())
        assert backend.workload_api_version == "scheduling.k8s.io/v1beta1"

    run_virtual(main)


def test_configured_version_the_server_does_not_serve_fails_at_start_up() -> None:
    async def main() -> None:
        registry = BackendRegistry.from_profiles(
            [
                ("kai-scheduler", {"defaultQueue": "q"}),
                ("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v1beta1"}),
            ],
            "default-scheduler",
        )
        with pytest.raises(BackendConfigError) as err:
            await registry.init_all(_Server({"scheduling.k8s.io/v1alpha1"}))
        assert err.value.field == "scheduler.profiles[1].config.workloadAPIVersion"
        assert "served: scheduling.k8s.io/v1alpha1" in str(err.value)

        no_api = BackendRegistry.from_profiles(
            [("default-scheduler", {"gangScheduling": True})], "default-scheduler"
        )
        with pytest.raises(BackendConfigError) as err:
            await no_api.init_all(_Server(set()))
        assert err.value.field == "scheduler.profiles[0].config.gangScheduling"

    run_virtual(main)


def test_immutable_workload_is_recreated_when_the_gang_changes() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha1")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        first = await client.get(Workload, s.BASE_PODGANG, "default")
        pg.spec.pod_groups[1].min_replicas = 3
        await backend.sync_podgang(pg)
        second = await client.get(Workload, s.BASE_PODGANG, "default")
        assert second.metadata.uid != first.metadata.uid
        gang = second.spec.pod_groups[0].policy.gang
        assert gang is not None and gang.min_count == GANG_MIN - 1

    run_virtual(main)


def test_a_changed_minimum_replaces_the_podgroup_once_its_pods_are_gone() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        first = await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        pod = s.grove_pod(GROUPS[1])
        backend.prepare_pod(pod)
        pod = await client.create(pod)

        pg.spec.pod_groups[1].min_replicas = 3
        with pytest.raises(SyncPending) as pending:  # its pod still uses it
            await backend.sync_podgang(pg)
        assert pod.name in str(pending.value)
        await client.delete(Pod, pod.name, "default")
        await backend.sync_podgang(pg)
        second = await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        assert second.metadata.uid != first.metadata.uid
        assert second.min_count == GANG_MIN - 1
        assert second.metadata.finalizers == [labels.FINALIZER_PODGROUP_PROTECTION]

    run_virtual(main)


def test_delete_releases_the_podgroup_only_after_its_pods_are_gone() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        pods = []
        for group in (GROUPS[0], GROUPS[3]):
            pod = s.grove_pod(group)
            backend.prepare_pod(pod)
            pods.append(await client.create(pod))

        with pytest.raises(SyncPending) as pending:
            await backend.on_podgang_delete(pg)
        assert "2 pod(s)" in str(pending.value)
        held = await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        assert held.metadata.deletion_timestamp is not None  # deleting, protected

        await client.delete(Pod, pods[0].name, "default")
        with pytest.raises(SyncPending):  # the decode worker still uses it
            await backend.on_podgang_delete(pg)
        await client.delete(Pod, pods[1].name, "default")
        await backend.on_podgang_delete(pg)
        with pytest.raises(NotFound):
            await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        with pytest.raises(NotFound):
            await client.get(WorkloadV1Alpha2, s.BASE_PODGANG, "default")
        await backend.on_podgang_delete(pg)  # idempotent

    run_virtual(main)


def test_more_than_eight_groups_fit_one_podgroup_template() -> None:
    """Eight templates per Workload was a limit of one-PodGroup-per-group; one gang per
    PodGang needs one template, however many cliques it has."""
    many = s.pcs(
        podCliqueScalingGroups=[
            {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 5, "minAvailable": 4},
            {"name": "decode", "cliqueNames": ["dleader", "dworker"], "replicas": 1},
        ]
    )
    assert _backend(gangScheduling=True).validate_podcliqueset(many) == []
    assert _backend().validate_podcliqueset(many) == []


def test_podgroups_of_the_per_group_layout_are_released_after_a_restart() -> None:
    """PodGroups an earlier Phalanx wrote per PodGang group are owned by the PodGang: a
    changed PodGang (generation 2) seen by a restarted operator finds and releases them."""

    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        gang_pg = await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        old = gang_pg.copy_deep()
        old.metadata = gang_pg.metadata.model_copy(update={
            "name": GROUPS[0], "uid": None, "resource_version": None,
            "creation_timestamp": None})
        await client.create(old)
        pg.spec.pod_groups = pg.spec.pod_groups[1:]
        pg = await client.update(pg)  # generation 2
        restarted = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await restarted.init(client)
        await restarted.sync_podgang(pg)
        left = sorted(o.name for o in (await client.list(PodGroupV1Alpha2, "default")).items)
        assert left == [s.BASE_PODGANG]
        now = await client.get(PodGroupV1Alpha2, s.BASE_PODGANG, "default")
        assert now.min_count == GANG_MIN - 1  # the leader group went away

    run_virtual(main)
