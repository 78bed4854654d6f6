"""KubeCluster's wire behaviour against the REST facade over MemoryCluster."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from phalanx.api.core import ConfigMap, Namespace
from phalanx.api.pod import Pod
from phalanx.cluster.client import AlreadyExists, Conflict, Gone, Invalid, NotFound
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.kube import KubeCluster, connection_for, update_with_retry
from phalanx.cluster.kube import cluster as kube_cluster_module
from phalanx.cluster.memory import MemoryCluster

from .facade import Facade, run_over_facade, start_facade

run = run_over_facade


def cm(name: str, ns: str = "ns", **data: str) -> ConfigMap:
    return ConfigMap.model_validate({"metadata": {"name": name, "namespace": ns}, "data": data})


def pod(name: str, gated: bool = False) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if gated:
        spec["schedulingGates"] = [{"name": "grove.io/podgang-pending-creation"}]
    return Pod.model_validate({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


def test_crud_and_errors_map_to_client_errors() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        created = await kube.create(cm("a", x="1"))
        assert created.metadata.uid and created.metadata.resource_version
        with pytest.raises(AlreadyExists):
            await kube.create(cm("a"))
        with pytest.raises(NotFound):
            await kube.get(ConfigMap, "missing", "ns")
        with pytest.raises(Invalid) as bad:
            await kube.create(cm("Not_A_Name"))
        assert bad.value.field == "metadata.name"
        got = await kube.get(ConfigMap, "a", "ns")
        got.data = {"x": "2"}
        updated = await kube.update(got)
        assert updated.data == {"x": "2"}
        got.data = {"x": "3"}  # stale resourceVersion
        with pytest.raises(Conflict):
            await kube.update(got)
        patched = await kube.patch(ConfigMap, "a", {"data": {"y": "1"}}, "ns")
        assert patched.data == {"x": "2", "y": "1"}
        with pytest.raises(Conflict):
            await kube.delete(ConfigMap, "a", "ns", uid="another-uid")
        await kube.delete(ConfigMap, "a", "ns")
        with pytest.raises(NotFound):
            await kube.delete(ConfigMap, "a", "ns")
        assert mem.count(ConfigMap) == 0

    run(body)


def test_every_selector_shape_goes_over_the_wire_as_memory_cluster_reads_it() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        for name, team, tier in (("a", "x", "web"), ("b", "x", "db"), ("c", "y", "web")):
            obj = cm(name)
            obj.metadata.labels = {"team": team, "tier": tier}
            await kube.create(obj)
        shapes = (
            "team=x,tier!=db",
            {"team": "x", "tier": "web"},
            {"matchLabels": {"team": "x"},
             "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
        )
        for shape in shapes:
            over_wire = await kube.list(ConfigMap, "ns", label_selector=shape)
            local = await mem.list(ConfigMap, "ns", label_selector=shape)
            assert [o.name for o in over_wire.items] == [o.name for o in local.items] == ["a"]
        sent = len(facade.requests)
        with pytest.raises(Invalid) as bad:
            await kube.list(ConfigMap, "ns", label_selector={"matchExpressions": [
                {"key": "tier", "operator": "Near", "values": ["db"]}]})
        assert bad.value.field == "selector" and "unknown operator 'Near'" in bad.value.message
        with pytest.raises(Invalid):
            await anext(aiter(kube.watch(ConfigMap, "ns", label_selector="tier in (")))
        assert len(facade.requests) == sent  # refused before any request

    run(body)


def test_cluster_scoped_kinds_and_status_subresource() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        ns = await kube.create(Namespace.model_validate({"metadata": {"name": "team-a"}}))
        assert ns.namespace is None
        ns.status.phase = "Active"
        ns = await kube.update_status(ns)
        assert (await mem.get(Namespace, "team-a")).status.phase == "Active"
        assert ("PATCH", "/api/v1/namespaces/team-a/status") in facade.requests

    run(body)


def test_update_sends_only_the_difference() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        p = await kube.create(pod("p", gated=True))
        p.spec.scheduling_gates = []
        p.metadata.labels["x"] = "y"
        p = await kube.update(p)
        assert p.spec.scheduling_gates == [] and p.metadata.labels == {"x": "y"}
        # An object not decoded by this client (cache miss): read once, then patch.
        fresh = KubeCluster(kube.transport)
        other = (await mem.get(Pod, "p", "ns"))
        other.metadata.labels["z"] = "1"
        assert (await fresh.update(other)).metadata.labels == {"x": "y", "z": "1"}
        stale = (await mem.get(Pod, "p", "ns"))
        stale.metadata.resource_version = "1"
        with pytest.raises(Conflict):
            await fresh.update(stale)

    run(body)


def test_bind_subresource() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        await kube.create(pod("gated", gated=True))
        with pytest.raises(Conflict, match="schedulingGates"):
            await kube.bind("gated", "ns", "node-1")
        await kube.create(pod("free"))
        await kube.bind("free", "ns", "node-1")
        assert (await kube.get(Pod, "free", "ns")).spec.node_name == "node-1"
        with pytest.raises(Conflict):
            await kube.bind("free", "ns", "node-2")

    run(body)


def test_list_follows_continue_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_cluster_module, "LIST_PAGE_SIZE", 3)

    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        for i in range(8):
            await mem.create(cm(f"c{i}", ns="a" if i % 2 else "b", i=str(i)))
        everything = await kube.list(ConfigMap)
        assert sorted(o.name for o in everything.items) == [f"c{i}" for i in range(8)]
        assert everything.resource_version == mem.resource_version
        pages = [r for r in facade.requests if r == ("GET", "/api/v1/configmaps")]
        assert len(pages) == 3
        only_a = await kube.list(ConfigMap, "a")
        assert {o.name for o in only_a.items} == {"c1", "c3", "c5", "c7"}

    run(body)


def test_kinds_read_without_bases_list_watch_and_update_as_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`lists_without_bases`: the same objects from paged lists, gets and watches; an update
    of one reads its server form first (no base was kept)."""
    monkeypatch.setattr(kube_cluster_module, "LIST_PAGE_SIZE", 3)

    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        for i in range(5):
            await mem.create(pod(f"p{i}"))
        plain = await kube.list(Pod, "ns")
        kube = KubeCluster(kube.transport)  # no base of any pod yet
        kube.lists_without_bases.add(Pod)
        fast = await kube.list(Pod, "ns")
        assert fast.items == plain.items and fast.resource_version == plain.resource_version
        assert await kube.get(Pod, "p1", "ns") == await mem.get(Pod, "p1", "ns")
        stream = kube.watch(Pod, "ns", resource_version=fast.resource_version)
        await stream.established
        await mem.create(pod("p9"))
        event = await anext(stream)
        assert (event.type, event.object) == ("ADDED", await mem.get(Pod, "p9", "ns"))
        await stream.aclose()
        reads = len(facade.requests)
        p = fast.items[0]
        p.metadata.labels["x"] = "y"
        assert (await kube.update(p)).metadata.labels == {"x": "y"}
        assert ("GET", "/api/v1/namespaces/ns/pods/p0") in facade.requests[reads:]

    run(body)


def test_watch_from_list_version_sees_every_change_in_order() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        await mem.create(cm("before"))
        listed = await kube.list(ConfigMap, "ns")
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for ev in kube.watch(ConfigMap, "ns", resource_version=listed.resource_version):
                seen.append((ev.type, ev.object.name))
                if ev.type == "DELETED":
                    return

        task = asyncio.create_task(consume())
        await mem.create(cm("x"))
        await mem.patch(ConfigMap, "x", {"data": {"a": "1"}}, "ns")
        await asyncio.sleep(5)  # bookmarks flow while nothing happens
        await mem.delete(ConfigMap, "x", "ns")
        await asyncio.wait_for(task, 30)
        assert seen == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]

    run(body, bookmark_interval=1.0)


def test_watch_of_an_expired_version_raises_gone() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        for i in range(5):
            await mem.create(cm(f"c{i}"))
        with pytest.raises(Gone):
            async for _ in kube.watch(ConfigMap, "ns", resource_version="1"):
                pass

    async def small_history() -> None:
        mem = MemoryCluster(history_size=2)
        facade, runner, url = await start_facade(mem)
        kube = KubeCluster.from_connection(connection_for(url))
        try:
            await body(kube, mem, facade)
        finally:
            await kube.close()
            await runner.cleanup()

    run_virtual(small_history())


def test_update_with_retry_rereads_on_conflict() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        await kube.create(cm("counter", n="0"))
        raced = False

        async def bump(obj: ConfigMap) -> None:
            nonlocal raced
            if not raced:  # someone else writes between our read and our write
                raced = True
                await mem.patch(ConfigMap, "counter", {"data": {"other": "1"}}, "ns")
            assert obj.data is not None
            obj.data["n"] = str(int(obj.data["n"]) + 1)

        result = await update_with_retry(kube, ConfigMap, "counter", "ns", bump)
        assert result.data == {"n": "1", "other": "1"}

    run(body)


def test_missing_kind_names_the_crds() -> None:
    from phalanx.cluster.kube.errors import error_from_status

    err = error_from_status(
        404, {"message": "the server could not find the requested resource"}, kind="PodGang"
    )
    assert isinstance(err, NotFound) and "CRDs" in str(err)


def test_mutating_opaque_fields_is_seen_by_update() -> None:
    from phalanx.services.kinds import ValidatingWebhookConfiguration

    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        facade.register(ValidatingWebhookConfiguration)
        await mem.create(ValidatingWebhookConfiguration.model_validate(
            {"metadata": {"name": "v"}, "webhooks": [{"name": "a", "clientConfig": {}}]}))
        cfg = await kube.get(ValidatingWebhookConfiguration, "v")
        cfg.webhooks[0]["clientConfig"]["caBundle"] = "Q0E="  # inside an opaque dict
        await kube.update(cfg)
        stored = await mem.get(ValidatingWebhookConfiguration, "v")
        assert stored.webhooks[0]["clientConfig"] == {"caBundle": "Q0E="}

    run(body)


def test_a_wrongly_typed_value_is_the_servers_invalid_without_a_python_warning() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        bad = cm("typed")
        bad.data = {"x": 1}  # models do not validate on assignment
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a serializer warning would fail here
            with pytest.raises(Invalid) as err:
                await kube.create(bad)
        assert err.value.field == "data.x"

    run(body)
