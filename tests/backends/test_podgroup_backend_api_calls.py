"""kai-scheduler, volcano, koordinator and scheduler-plugins: the calls a PodGang's PodGroups
cost (issue 28: at hundreds of new gangs, each needless read is hundreds of round trips).

A PodGang no backend has reported on yet (no BackendSynced condition) gets its PodGroups
created at once; one with a verdict (after an operator restart) is read first, as before; a
new one whose PodGroup exists already (another operator made it) falls back to read and
merge, and the sync still succeeds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.base import set_condition
from phalanx.api.grove import PodCliqueSet
from phalanx.api.podgang import PODGANG_BACKEND_SYNCED
from phalanx.api.schedulerplugins import SchedulerPluginsPodGroup
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup
from phalanx.backends.kai import KaiBackend, KaiBackendConfig
from phalanx.backends.koordinator import KoordinatorBackend, KoordinatorBackendConfig
from phalanx.backends.schedulerplugins import (
    SchedulerPluginsBackend,
    SchedulerPluginsBackendConfig,
)
from phalanx.backends.volcano import VolcanoBackend, VolcanoBackendConfig
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

GROUPS = [g for g, _ in s.BASE_GROUPS]

# backend factory, PodGroup kind, the PodGroups one PodGang gets
CASES: dict[str, tuple[Callable[[], Any], type, list[str]]] = {
    "kai": (lambda: KaiBackend(KaiBackendConfig()), KaiPodGroup, [s.BASE_PODGANG]),
    "volcano": (lambda: VolcanoBackend(VolcanoBackendConfig()), VolcanoPodGroup,
                [s.BASE_PODGANG]),
    "koordinator": (lambda: KoordinatorBackend(KoordinatorBackendConfig()),
                    CoschedulingPodGroup, GROUPS),
    "scheduler-plugins": (lambda: SchedulerPluginsBackend(SchedulerPluginsBackendConfig()),
                          SchedulerPluginsPodGroup, [s.BASE_PODGANG]),
}


def _kind(kind: type) -> str:
    return f"{kind.API_VERSION}/{kind.KIND}"  # type: ignore[attr-defined]


def _calls_on(client: s.CallLog, kind: type) -> list[tuple[str, str, str]]:
    return [c for c in client.calls if c[1] == _kind(kind)]


async def _setup(case: str) -> tuple[s.CallLog, Any, Any]:
    factory, _, _ = CASES[case]
    client = s.CallLog(MemoryCluster())
    pcs = s.pcs(queue="team-a")
    pcs.metadata.labels[labels.LABEL_VOLCANO_QUEUE] = "team-a"  # KAI's label is set
    await client.create(pcs)
    backend = factory()
    await backend.init(client)
    return client, backend, await s.create_podgang(client, s.podgang())


async def _another_backend(case: str, client: s.CallLog) -> Any:
    """A second instance of the case's backend (a restarted or another operator's)."""
    backend = CASES[case][0]()
    await backend.init(client)
    return backend


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_new_podgang_gets_its_podgroups_created_without_a_read(case: str) -> None:
    async def main() -> None:
        client, backend, pg = await _setup(case)
        _, kind, names = CASES[case]
        client.calls.clear()
        await backend.sync_podgang(pg)
        assert _calls_on(client, kind) == [("create", _kind(kind), n) for n in names]
        for n in names:
            await client.get(kind, n, "default")  # they exist

    run_virtual(main)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_podgang_with_a_verdict_is_read_before_it_is_written(case: str) -> None:
    """After a restart the objects most likely exist: a create would only be refused."""
    async def main() -> None:
        client, backend, pg = await _setup(case)
        _, kind, names = CASES[case]
        await backend.sync_podgang(pg)
        set_condition(pg.status.conditions, PODGANG_BACKEND_SYNCED, True, "Synced")
        restarted = await _another_backend(case, client)
        client.calls.clear()
        await restarted.sync_podgang(pg)
        mine = _calls_on(client, kind)
        assert [c for c in mine if c[0] == "create"] == []
        assert [c for c in mine if c[0] == "get"] == [("get", _kind(kind), n) for n in names]

    run_virtual(main)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_new_podgang_whose_podgroups_exist_is_merged_not_failed(case: str) -> None:
    async def main() -> None:
        client, backend, pg = await _setup(case)
        _, kind, names = CASES[case]
        await (await _another_backend(case, client)).sync_podgang(pg)
        client.calls.clear()
        await backend.sync_podgang(pg)
        mine = _calls_on(client, kind)
        assert mine[0] == ("create", _kind(kind), names[0])  # refused: it exists
        assert ("get", _kind(kind), names[0]) in mine  # then read and merged
        assert len((await client.list(kind, "default")).items) == len(names)

    run_virtual(main)


class PcsCache:
    """A CacheReader holding one PodCliqueSet."""

    def __init__(self, pcs: Any) -> None:
        self.pcs = pcs

    def cached(self, kind: type, name: str, namespace: str | None) -> Any:
        pcs = self.pcs
        return pcs if (kind.KIND, name, namespace) == (  # type: ignore[attr-defined]
            "PodCliqueSet", pcs.name, pcs.namespace) else None


@pytest.mark.parametrize("case", ["kai", "volcano"])
@pytest.mark.parametrize("cached", [False, True])
def test_the_queue_comes_from_the_cached_podcliqueset(case: str, cached: bool) -> None:
    """KAI and Volcano find a PodGang's queue on its PodCliqueSet: read from the operator's
    cache when it holds it (as Grove's backends read through controller-runtime's cached
    client), else from the API server."""
    async def main() -> None:
        client, backend, pg = await _setup(case)
        _, kind, _ = CASES[case]
        if cached:
            backend.cache = PcsCache(await client.get(PodCliqueSet, s.PCS_NAME, "default"))
        client.calls.clear()
        await backend.sync_podgang(pg)
        reads = [c for c in client.calls if c[0] == "get" and c[1].endswith("/PodCliqueSet")]
        assert len(reads) == (0 if cached else 1)
        group = await client.get(kind, s.BASE_PODGANG, "default")
        assert group.spec.queue == "team-a"

    run_virtual(main)
