"""KubeCluster on the real kube-apiserver, where the contract suite cannot say it: 410 Gone
after a real etcd compaction, what the watch cache serves instead, bookmarks moving a quiet
watch forward, list pagination, server-side apply, the events.k8s.io series."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import phalanx.cluster.kube.cluster as kube_cluster_module
from phalanx.api.core import ConfigMap, Event
from phalanx.cluster.client import Conflict, Gone
from phalanx.cluster.events import EventRecorder
from phalanx.cluster.kube.watch import watch_events
from phalanx.envtest import wait_until_async

from ..kinds import PodTemplate


def cm(name: str, ns: str, **data: str) -> ConfigMap:
    return ConfigMap.model_validate({"metadata": {"name": name, "namespace": ns}, "data": data})


def run(plane: Any, body: Any) -> None:
    async def main() -> None:
        async with plane.client() as kube:
            await asyncio.wait_for(body(kube), 60)

    asyncio.run(main())


async def first_event(stream: Any, timeout: float = 10.0) -> Any:
    async with asyncio.timeout(timeout):
        async for ev in stream:
            return ev
    return None


def test_gone_after_a_real_compaction(control_plane, kube_namespace):
    """PodTemplates are served without a watch cache on the test server (tests/conftest.py),
    so etcd answers: a version below the compaction point is 410 Gone; one after it works."""
    ns = kube_namespace

    async def body(kube):
        pt = await kube.create(PodTemplate.model_validate(
            {"metadata": {"name": "t", "namespace": ns}, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}))
        old = pt.metadata.resource_version
        for i in range(3):
            pt = await kube.patch(PodTemplate, "t", {"metadata": {"labels": {"i": str(i)}}}, ns)
        compacted = control_plane.compact()
        assert compacted > int(old)
        with pytest.raises(Gone):
            await first_event(kube.watch(PodTemplate, ns, resource_version=old))
        after = kube.watch(PodTemplate, ns, resource_version=pt.metadata.resource_version)
        await kube.patch(PodTemplate, "t", {"metadata": {"labels": {"i": "last"}}}, ns)
        ev = await first_event(after)
        assert (ev.type, ev.object.metadata.labels) == ("MODIFIED", {"i": "last"})

    run(control_plane, body)


def test_the_watch_cache_still_serves_compacted_versions_it_holds(control_plane,
                                                                  kube_namespace):
    """Compaction alone does not make a version Gone: kube-apiserver's watch cache keeps
    recent events in memory, so callers must handle Gone whenever it comes, never expect it."""
    ns = kube_namespace

    async def body(kube):
        c = await kube.create(cm("c", ns, v="0"))
        old = c.metadata.resource_version
        await kube.patch(ConfigMap, "c", {"data": {"v": "1"}}, ns)
        control_plane.compact()
        ev = await first_event(kube.watch(ConfigMap, ns, resource_version=old))
        assert (ev.type, ev.object.data) == ("MODIFIED", {"v": "1"})

    run(control_plane, body)


def test_bookmarks_move_a_quiet_watch_forward(control_plane, kube_namespace):
    """A watch on a namespace where nothing changes resumes, after the server ends it, from
    the version of the server's BOOKMARK, not from where it started."""
    ns, busy = kube_namespace, control_plane.create_namespace("busy")

    async def body(kube):
        start = (await kube.list(ConfigMap, ns)).resource_version
        asked: list[str] = []
        original = kube.transport.stream_lines

        def spy(path, *, query, read_timeout, **kw):
            asked.append(dict(query)["resourceVersion"])
            return original(path, query=query, read_timeout=read_timeout, **kw)

        kube.transport.stream_lines = spy
        events = watch_events(kube, ConfigMap, ns, start, None, timeout_seconds=3)
        reader = asyncio.create_task(first_event(events, timeout=60))
        for i in range(5):  # other namespaces move the resourceVersion on
            await kube.create(cm(f"noise-{i}", busy))

        async def resumed_ahead():
            return len(asked) >= 2 and int(asked[-1]) > int(start) or asked

        await wait_until_async(resumed_ahead, 30, what="a resumed watch from a bookmark's "
                               "version", interval=0.2)
        reader.cancel()

    run(control_plane, body)


def test_lists_follow_continue_tokens_with_one_version(control_plane, kube_namespace,
                                                       monkeypatch):
    monkeypatch.setattr(kube_cluster_module, "LIST_PAGE_SIZE", 3)
    ns = kube_namespace

    async def body(kube):
        for i in range(8):
            await kube.create(cm(f"c{i}", ns))
        listed = await kube.list(ConfigMap, ns)
        assert sorted(o.name for o in listed.items) == [f"c{i}" for i in range(8)]
        newest = max(int(o.metadata.resource_version) for o in listed.items)
        assert int(listed.resource_version) >= newest

    run(control_plane, body)


def test_server_side_apply_merges_by_field_owner(control_plane, kube_namespace):
    ns = kube_namespace

    async def body(kube):
        other = control_plane.client(field_manager="someone-else")
        try:
            await kube.apply(cm("applied", ns, mine="1"))
            await other.apply(cm("applied", ns, theirs="2"))
            both = await kube.get(ConfigMap, "applied", ns)
            assert both.data == {"mine": "1", "theirs": "2"}
            with pytest.raises(Conflict):  # their field, unforced
                await kube.apply(cm("applied", ns, mine="1", theirs="3"), force=False)
            taken = await kube.apply(cm("applied", ns, mine="1", theirs="3"), force=True)
            assert taken.data == {"mine": "1", "theirs": "3"}
        finally:
            await other.close()

    run(control_plane, body)


def test_events_go_through_events_k8s_io_with_a_series(control_plane, kube_namespace):
    ns = kube_namespace

    async def body(kube):
        obj = await kube.create(cm("evented", ns))
        rec = EventRecorder(kube, "phalanx-test", max_similar=1)
        # A repeat (a series patch), then a combined Event whose note changes (core/v1 patch).
        for message in ("first", "first", "second", "third"):
            rec.normal(obj, "Tested", message)
            await rec.flush()
        assert rec.failed == 0
        events = {e.message: e for e in (await kube.list(Event, ns)).items}
        assert events["first"].occurrences == 2
        assert events["(combined from similar events): third"].occurrences == 2
        v1 = await kube.transport.request(
            "GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events/{events['first'].name}")
        assert v1["series"]["count"] == 2 and v1["reportingController"] == "phalanx-test"
        assert v1["action"] == "Tested" and v1["eventTime"]

    run(control_plane, body)
