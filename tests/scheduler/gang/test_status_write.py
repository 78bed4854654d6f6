"""The gang verdict written as each gang object's schema allows (issue 22 items 6 and 7):
with the object where the kind has no status subresource (Volcano), not at all where it has
no conditions (Koordinator's PodGroup: said once), never with observedGeneration where the
peer's conditions have none (KAI), and a refusal said once at warning level, not retried in a
loop and not counted as written."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from phalanx.api.base import set_status_condition
from phalanx.api.podgang import PodGang
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup
from phalanx.cluster.client import Invalid, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.lanes import is_urgent
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler.gang.model import ObjectRef
from phalanx.scheduler.gang.status_write import ConditionWriter

TYPE = "GangScheduled"


def _ref(kind: type) -> ObjectRef:
    return ObjectRef(kind.API_VERSION, kind.KIND, "default", "g")


async def _cluster(kind: type) -> MemoryCluster:
    client = MemoryCluster()
    await client.create(kind.model_validate({"metadata": {"name": "g", "namespace": "default"},
                                             "spec": {"minMember": 2}}))
    return client


def test_a_kind_without_status_subresource_gets_the_condition_with_the_object() -> None:
    async def main() -> None:
        client = await _cluster(VolcanoPodGroup)
        writer = ConditionWriter()
        assert await writer.write(client, _ref(VolcanoPodGroup), TYPE, False, "Unschedulable",
                                  "no room")
        live = await client.get(VolcanoPodGroup, "g", "default")
        assert [(c.type, c.reason) for c in live.status.conditions] == [(TYPE, "Unschedulable")]
        assert writer.writes == 1

    run_virtual(main)


def test_kai_conditions_carry_no_observed_generation() -> None:
    async def main() -> None:
        client = await _cluster(KaiPodGroup)
        live = await client.get(KaiPodGroup, "g", "default")
        live.spec.min_member = 3
        await client.update(live)  # generation 2
        writer = ConditionWriter()
        assert await writer.write(client, _ref(KaiPodGroup), TYPE, True, "Scheduled", "placed")
        stored = (await client.get(KaiPodGroup, "g", "default")).to_dict()["status"]
        assert "observedGeneration" not in stored["conditions"][0]
        # Written once: the same verdict again is no write (no generation to chase).
        assert await writer.write(client, _ref(KaiPodGroup), TYPE, True, "Scheduled", "placed")
        assert writer.writes == 1

    run_virtual(main)


def test_a_kind_without_conditions_is_said_once_and_not_written(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        client = await _cluster(CoschedulingPodGroup)
        writer = ConditionWriter()
        with caplog.at_level(logging.WARNING):
            for reason in ("Unschedulable", "GangIncomplete"):
                assert await writer.write(client, _ref(CoschedulingPodGroup), TYPE, False,
                                          reason, "why")
        assert writer.writes == 0
        assert (await client.get(CoschedulingPodGroup, "g", "default")).to_dict().get(
            "status", {}) == {}

    run_virtual(main)
    said = [r.getMessage() for r in caplog.records]
    assert said == ["scheduling.sigs.k8s.io/v1alpha1 PodGroup has no status.conditions in its "
                    "schema: verdicts of its gangs go to their pods only"]


def test_a_refused_write_is_said_once_with_the_field_and_not_retried(
        caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[str] = []

    async def main() -> None:
        client = await _cluster(KaiPodGroup)

        def refuse(verb: str, kind: str, key: str) -> Any:
            if verb == "update_status":
                attempts.append(key)
                return Invalid('PodGroup.scheduling.run.ai "g" is invalid: strict decoding '
                               'error: unknown field "status.conditions[0].observedGeneration"',
                               kind=kind, name=key,
                               field="status.conditions[0].observedGeneration")
            return None

        client.faults.add_hook(refuse)
        writer = ConditionWriter()
        with caplog.at_level(logging.WARNING):
            for reason in ("Unschedulable", "GangIncomplete"):
                assert await writer.write(client, _ref(KaiPodGroup), TYPE, False, reason, "m")
        assert (writer.writes, writer.refusals) == (0, 2)

    run_virtual(main)
    assert len(attempts) == 2  # one attempt per verdict, no retry loop
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1, said
    assert "field status.conditions[0].observedGeneration" in said[0] and "Invalid" in said[0]


def test_a_transient_failure_asks_to_be_tried_again() -> None:
    async def main() -> None:
        client = await _cluster(KaiPodGroup)
        client.faults.add_hook(lambda verb, kind, key: ServerError("injected", kind=kind)
                               if verb == "update_status" else None)
        writer = ConditionWriter()
        assert not await writer.write(client, _ref(KaiPodGroup), TYPE, False, "Unschedulable",
                                      "m")
        assert (writer.writes, writer.refusals) == (0, 0)

    run_virtual(main)


def test_a_podgang_without_a_phase_gets_pending_with_the_condition() -> None:
    """Grove's PodGang CRD requires status.phase: a condition written before the operator's
    first status write must carry one, or the API server refuses the whole write."""
    from phalanx.api.podgang import PodGang

    async def main() -> None:
        client = MemoryCluster()
        await client.create(PodGang.model_validate({
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"podgroups": [{"name": "a", "minReplicas": 1, "podReferences": []}]}}))
        writer = ConditionWriter()
        assert await writer.write(client, _ref(PodGang), TYPE, False, "Unschedulable", "no room")
        live = await client.get(PodGang, "g", "default")
        assert live.status.phase == "Pending"
        assert [c.type for c in live.status.conditions] == [TYPE]

    run_virtual(main)


class _Reads:
    """A client that counts its reads (and says `status_subresource`, as KubeCluster does)."""

    def __init__(self, inner: MemoryCluster) -> None:
        self.inner = inner
        self.gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets += 1
        return await self.inner.get(*args, **kwargs)


@pytest.mark.parametrize("kind", [PodGang, KaiPodGroup, VolcanoPodGroup])
def test_the_informers_copy_is_written_without_a_read(kind: type) -> None:
    async def main() -> None:
        mem = await _cluster(kind) if kind is not PodGang else await _podgang_cluster()
        client = _Reads(mem)
        cached = await mem.get(kind, "g", "default")
        writer = ConditionWriter()
        assert await writer.write(client, _ref(kind), TYPE, True, "Scheduled", "placed",
                                  cached=cached)
        assert (client.gets, writer.writes) == (0, 1)
        assert cached.status is None or not cached.status.conditions  # the copy is untouched
        live = await mem.get(kind, "g", "default")
        assert [(c.type, c.status, c.reason) for c in live.status.conditions] == [
            (TYPE, "True", "Scheduled")]

    run_virtual(main)


def test_a_stale_copy_conflicts_and_the_write_reads_the_object_and_keeps_its_change() -> None:
    async def main() -> None:
        mem = await _podgang_cluster()
        client = _Reads(mem)
        stale = await mem.get(PodGang, "g", "default")
        live = await mem.get(PodGang, "g", "default")
        set_status_condition(live, "Initialized", True, "Ready", "all pods created")
        await mem.update_status(live)  # someone else's condition, after the informer's copy
        writer = ConditionWriter()
        assert await writer.write(client, _ref(PodGang), TYPE, True, "Scheduled", "placed",
                                  cached=stale)
        assert (client.gets, writer.writes) == (1, 1)
        got = await mem.get(PodGang, "g", "default")
        assert sorted(c.type for c in got.status.conditions) == [TYPE, "Initialized"]

    run_virtual(main)


def test_a_copy_that_already_says_so_is_not_trusted() -> None:
    """The informer's copy may show the condition the server no longer has: read it."""
    async def main() -> None:
        mem = await _podgang_cluster()
        client = _Reads(mem)
        cached = await mem.get(PodGang, "g", "default")
        set_status_condition(cached, TYPE, True, "Scheduled", "placed", None,
                             cached.metadata.generation)
        writer = ConditionWriter()
        assert await writer.write(client, _ref(PodGang), TYPE, True, "Scheduled", "placed",
                                  cached=cached)
        assert (client.gets, writer.writes) == (1, 1)
        got = await mem.get(PodGang, "g", "default")
        assert [c.type for c in got.status.conditions] == [TYPE]

    run_virtual(main)


async def _podgang_cluster() -> MemoryCluster:
    client = MemoryCluster()
    await client.create(PodGang.model_validate({
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"podgroups": [{"name": "a", "minReplicas": 1,
                                "podReferences": [{"namespace": "default", "name": "p"}]}]}}))
    return client


class _Lanes:
    """Records, per call, whether it was made in the urgent lane."""

    def __init__(self, inner: MemoryCluster) -> None:
        self.inner = inner
        self.calls: list[tuple[str, bool]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("get", "patch", "update", "update_status"):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, is_urgent()))
            return await attr(*args, **kwargs)

        return call


def test_the_gang_condition_is_read_and_written_in_the_urgent_lane() -> None:
    """Not queued behind a burst's binds and Events (phalanx/cluster/lanes.py)."""
    async def main() -> None:
        mem = await _podgang_cluster()
        stale = await mem.get(PodGang, "g", "default")
        live = await mem.get(PodGang, "g", "default")
        set_status_condition(live, "Initialized", True, "Ready", "all pods created")
        await mem.update_status(live)
        client = _Lanes(mem)
        writer = ConditionWriter()
        assert await writer.write(client, _ref(PodGang), TYPE, True, "Scheduled", "placed",
                                  cached=stale)  # patch (409), read, write
        assert [name for name, _ in client.calls] == ["patch", "get", "update_status"]
        assert all(lane for _, lane in client.calls)
        assert not is_urgent()

    run_virtual(main)
