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
        assert backend.capabilities == frozenset()

    run_virtual(main)


def test_v1alpha1_workload_field_by_field() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="scheduling.k8s.io/v1alpha1")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        wl = await client.get(Workload, s.BASE_PODGANG, "default")
        _owner_and_labels(wl, pg.metadata.uid or "")
        assert wl.to_dict()["spec"] == {
            "controllerRef": {
                "apiGroup": "scheduler.grove.io",
                "kind": "PodGang",
                "name": s.BASE_PODGANG,
            },
            "podGroups": [
                {"name": g, "policy": {"gang": {"minCount": n}}} for g, n in s.BASE_GROUPS
            ],
        }
        # 1.35 has no standalone PodGroups.
        assert (await client.list(PodGroupV1Alpha2)).items == []

        pod = s.grove_pod(GROUPS[1])
        backend.prepare_pod(pod)
        assert pod.to_dict()["spec"]["workloadRef"] == {
            "name": s.BASE_PODGANG,
            "podGroup": GROUPS[1],
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
def test_v1alpha2_and_v1beta1_workload_and_podgroups_field_by_field(
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
        # KEP-4671 creation order: the Workload, then its PodGroups (pods come after).
        assert client.writes == [("create", f"{api}/Workload", s.BASE_PODGANG)] + [
            ("create", f"{api}/PodGroup", g) for g in GROUPS
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
                {"name": g, "schedulingPolicy": {"gang": {"minCount": n}}} for g, n in s.BASE_GROUPS
            ],
        }
        for g, n in s.BASE_GROUPS:
            obj = await client.get(podgroup_kind, g, "default")
            _owner_and_labels(obj, pg.metadata.uid or "")
            assert obj.metadata.finalizers == [labels.FINALIZER_PODGROUP_PROTECTION]
            assert obj.to_dict()["spec"] == {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": s.BASE_PODGANG, "podGroupTemplateName": g}
                },
                "schedulingPolicy": {"gang": {"minCount": n}},
            }
        # 1.35's embedded form is not written on 1.36+.
        assert (await client.list(Workload)).items == []

        pod = s.grove_pod(GROUPS[3])
        backend.prepare_pod(pod)
        spec = pod.to_dict()["spec"]
        assert spec["schedulingGroup"] == {"podGroupName": GROUPS[3]}
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
        assert second.spec.pod_groups[1].policy.gang.min_count == 3  # type: ignore[union-attr]

    run_virtual(main)


def test_delete_releases_podgroups_only_after_their_pods_are_gone() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        pod = s.grove_pod(GROUPS[0])
        backend.prepare_pod(pod)
        pod = await client.create(pod)

        with pytest.raises(SyncPending) as pending:
            await backend.on_podgang_delete(pg)
        assert pod.name in str(pending.value)
        held = await client.get(PodGroupV1Alpha2, GROUPS[0], "default")
        assert held.metadata.deletion_timestamp is not None  # deleting, protected

        await client.delete(Pod, pod.name, "default")
        await backend.on_podgang_delete(pg)
        for g in GROUPS:
            with pytest.raises(NotFound):
                await client.get(PodGroupV1Alpha2, g, "default")
        with pytest.raises(NotFound):
            await client.get(WorkloadV1Alpha2, s.BASE_PODGANG, "default")
        await backend.on_podgang_delete(pg)  # idempotent

    run_virtual(main)


def test_more_than_eight_groups_rejected_in_gang_mode_only() -> None:
    many = s.pcs(
        podCliqueScalingGroups=[
            {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 5, "minAvailable": 4},
            {"name": "decode", "cliqueNames": ["dleader", "dworker"], "replicas": 1},
        ]
    )
    issues = _backend(gangScheduling=True).validate_podcliqueset(many)
    assert [(i.field, i.feature) for i in issues] == [("spec.template.cliques", None)]
    assert "10 groups" in issues[0].message and "at most 8" in issues[0].message
    assert _backend().validate_podcliqueset(many) == []


def test_podgroups_of_removed_groups_are_released() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1beta1")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        pg.spec.pod_groups = pg.spec.pod_groups[:2]  # the decode cliques went away
        await backend.sync_podgang(pg)
        left = sorted(o.name for o in (await client.list(PodGroupV1Beta1, "default")).items)
        assert left == GROUPS[:2]
        wl = await client.get(WorkloadV1Beta1, s.BASE_PODGANG, "default")
        assert [t.name for t in wl.spec.pod_group_templates] == GROUPS[:2]

    run_virtual(main)


def test_after_a_restart_stale_podgroups_are_found_by_listing() -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        pg.spec.pod_groups = pg.spec.pod_groups[1:]
        pg = await client.update(pg)  # generation 2
        restarted = _backend(gangScheduling=True, workloadAPIVersion="v1alpha2")
        await restarted.init(client)
        await restarted.sync_podgang(pg)
        left = sorted(o.name for o in (await client.list(PodGroupV1Alpha2, "default")).items)
        assert left == sorted(GROUPS[1:])

    run_virtual(main)
