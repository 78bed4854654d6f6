"""default-scheduler backend: the API calls it makes per PodGang (issue 28: at 500 gangs each
needless read or write is 500 round trips). Every call is counted, reads included."""

from __future__ import annotations

from phalanx.api.base import set_condition
from phalanx.api.podgang import PODGANG_BACKEND_SYNCED
from phalanx.api.workloads import PodGroupV1Alpha2, WorkloadV1Alpha2
from phalanx.backends.kube import KubeBackend, KubeBackendConfig
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

WL, PG = "scheduling.k8s.io/v1alpha2/Workload", "scheduling.k8s.io/v1alpha2/PodGroup"


def _backend() -> KubeBackend:
    return KubeBackend(KubeBackendConfig.model_validate(
        {"gangScheduling": True, "workloadAPIVersion": "v1alpha2"}))


def test_a_new_podgang_gets_its_objects_created_without_a_read() -> None:
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        backend = _backend()
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        client.calls.clear()
        await backend.sync_podgang(pg)
        name = s.BASE_PODGANG
        assert client.calls == [("create", WL, name), ("create", PG, name)]
        assert (await client.get(PodGroupV1Alpha2, name, "default")).min_count == \
            sum(n for _, n in s.BASE_GROUPS)

    run_virtual(main)


def test_a_new_podgang_first_synced_after_its_references_were_written_makes_no_list() -> None:
    """A backlog of new gangs is synced after the PodGang controller has written their pod
    references (generation 2): still two creates, no LIST of PodGroups looking for ones an
    earlier sync left (there was none: the Workload, named after the PodGang in every layout,
    did not exist)."""
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        backend = _backend()
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        pg.spec = s.podgang(refs=True).spec
        pg = await client.update(pg)
        assert pg.metadata.generation == 2
        client.calls.clear()
        await backend.sync_podgang(pg)
        name = s.BASE_PODGANG
        assert client.calls == [("create", WL, name), ("create", PG, name)]

    run_virtual(main)


def test_a_spec_change_that_keeps_the_minimum_makes_no_call() -> None:
    """The PodGang controller writing pod references bumps the generation; the Workload and
    PodGroup depend on the minimum only."""
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        backend = _backend()
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        with_refs = s.podgang(refs=True)
        pg.spec = with_refs.spec
        pg = await client.update(pg)
        client.calls.clear()
        await backend.sync_podgang(pg)
        assert client.calls == []
        pg.spec.pod_groups[0].min_replicas += 1  # a new minimum: read, then re-created
        await backend.sync_podgang(pg)
        assert ("get", WL, s.BASE_PODGANG) in client.calls

    run_virtual(main)


def test_a_podgang_synced_before_a_restart_is_read_not_created_again() -> None:
    """After a restart, gangs whose status shows a backend verdict read before writing: no
    create that would only be refused as AlreadyExists."""
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        await _backend().init(client)
        pg = await s.create_podgang(client, s.podgang())
        first = _backend()
        await first.init(client)
        await first.sync_podgang(pg)
        set_condition(pg.status.conditions, PODGANG_BACKEND_SYNCED, True, "Synced")
        restarted = _backend()
        await restarted.init(client)
        client.calls.clear()
        await restarted.sync_podgang(pg)
        assert [c for c in client.calls if c[0] != "get"] == []

    run_virtual(main)


def test_a_new_podgang_whose_objects_exist_is_merged_not_failed() -> None:
    """Create-first meeting AlreadyExists (another operator got there) falls back to the
    read-and-merge path and succeeds."""
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        pg = await s.create_podgang(client, s.podgang())
        other = _backend()
        await other.init(client)
        await other.sync_podgang(pg)
        backend = _backend()
        await backend.init(client)
        client.calls.clear()
        await backend.sync_podgang(pg)
        assert client.calls[0] == ("create", WL, s.BASE_PODGANG)  # refused: it exists
        assert ("create", PG, s.BASE_PODGANG) not in client.calls  # then read, not created
        assert len((await client.list(WorkloadV1Alpha2, "default")).items) == 1

    run_virtual(main)


def test_delete_finds_the_podgroups_of_its_last_sync_without_listing() -> None:
    async def main() -> None:
        client = s.CallLog(MemoryCluster())
        backend = _backend()
        await backend.init(client)
        pg = await s.create_podgang(client, s.podgang())
        await backend.sync_podgang(pg)
        client.calls.clear()
        await backend.on_podgang_delete(pg)
        assert ("list", PG, "") not in client.calls
        assert ("delete", PG, s.BASE_PODGANG) in client.calls
        assert ("delete", WL, s.BASE_PODGANG) in client.calls

    run_virtual(main)
