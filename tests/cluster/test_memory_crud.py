"""Create/get/list/update/patch semantics, against the Client protocol."""

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Service
from phalanx.cluster.client import AlreadyExists, Conflict, Invalid, NotFound, ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from .kinds import Gadget, GadgetSpec, Note, Widget, widget
from .util import assert_now


def test_create_sets_server_fields(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        b = await c.create(widget("b"))
        assert a.metadata.uid and a.metadata.uid != b.metadata.uid
        assert a.metadata.generation == 1
        assert_now(client_factory, c, a.metadata.creation_timestamp)
        assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
        assert a.metadata.namespace == "default"
        got = await c.get(Widget, "a")
        assert got == a
    client_factory.run(main)


def test_runs_are_deterministic():
    async def main():
        c = MemoryCluster()
        out = []
        for i in range(3):
            o = await c.create(Widget(metadata=ObjectMeta(generate_name="w-")))
            out.append((o.name, o.metadata.uid, o.metadata.resource_version))
        return out
    assert run_virtual(main) == run_virtual(main)


def test_returned_objects_are_private_copies(client_factory):
    async def main():
        c = client_factory()
        mine = widget("a", replicas=2)
        created = await c.create(mine)
        mine.spec.replicas = 99
        created.spec.replicas = 98
        got = await c.get(Widget, "a")
        assert got.spec.replicas == 2
        got.metadata.labels["x"] = "y"
        assert (await c.get(Widget, "a")).metadata.labels == {}
        assert (await c.list(Widget)).items[0].spec.replicas == 2
    client_factory.run(main)


def test_create_without_the_result_writes_the_same_object(client_factory):
    """`returning=False` (Event writers): nothing comes back, what is stored is unchanged,
    and the caller's object stays its own."""
    async def main():
        c = client_factory()
        mine = widget("a", replicas=2)
        assert await c.create(mine, returning=False) is None
        mine.spec.replicas = 99
        got = await c.get(Widget, "a")
        assert got.spec.replicas == 2 and got.metadata.uid and got.metadata.generation == 1
        with pytest.raises(AlreadyExists):
            await c.create(widget("a"), returning=False)
        named = await c.create(Widget(metadata=ObjectMeta(generate_name="w-")), returning=False)
        assert named is None
        assert len((await c.list(Widget)).items) == 2
    client_factory.run(main)


def test_create_handed_over_stores_what_was_written(client_factory):
    """`hand_over=True` (an Event recorder's create): the server's fields are set, status
    is still the subresource's business, and a refused create is refused as before."""
    async def main():
        c = client_factory()
        note = Note(metadata=ObjectMeta(name="n", namespace="a", labels={"k": "v"}),
                    data={"x": "1"})
        assert await c.create(note, returning=False, hand_over=True) is None
        got = await c.get(Note, "n", "a")
        assert (got.data, got.metadata.labels, got.metadata.generation) == ({"x": "1"},
                                                                             {"k": "v"}, 1)
        assert got.metadata.uid and got.metadata.resource_version
        assert_now(client_factory, c, got.metadata.creation_timestamp)
        with pytest.raises(AlreadyExists):
            await c.create(Note(metadata=ObjectMeta(name="n", namespace="a")),
                           returning=False, hand_over=True)
        mine = widget("w", replicas=3)
        mine.status.ready = 5
        await c.create(mine, returning=False, hand_over=True)
        stored = await c.get(Widget, "w")
        assert (stored.spec.replicas, stored.status.ready) == (3, 0)
        named = Widget(metadata=ObjectMeta(generate_name="w-"))
        meta = await c.create(named, returning="metadata", hand_over=True)
        assert meta.name.startswith("w-") and meta.uid
        assert (await c.get(Widget, meta.name)).metadata.uid == meta.uid
        assert len((await c.list(Widget)).items) == 2
    client_factory.run(main)


def test_create_handed_over_is_stored_without_a_copy():
    """The embedded server keeps the handed-over object itself (what the option saves):
    watchers get that very object, with the server's metadata, and with the kind's default
    status where a create resets it; the metadata asked for back is a private copy."""
    async def main():
        c = MemoryCluster()
        stream = c.watch(Note, "a")
        note = Note(metadata=ObjectMeta(name="n", namespace="a",
                                        deletion_grace_period_seconds=30))
        await c.create(note, returning=False, hand_over=True)
        ev = await anext(stream)
        assert ev.object is note
        assert note.metadata.uid and note.metadata.resource_version
        assert note.metadata.deletion_grace_period_seconds is None
        widgets = c.watch(Widget)
        mine = widget("w")
        mine.status.ready = 5
        meta = await c.create(mine, returning="metadata", hand_over=True)
        assert (await anext(widgets)).object is mine and mine.status.ready == 0
        assert meta is not mine.metadata and meta.uid == mine.metadata.uid
        kept = Note(metadata=ObjectMeta(name="m", namespace="a"))
        await c.create(kept, returning=False)
        assert (await anext(stream)).object is not kept
    run_virtual(main)


def test_update_status_handed_over(client_factory):
    """`update_status(hand_over=True)` (the simulated kubelet's writes): the status lands as
    without it, the preconditions hold, and a write that changes nothing is still none."""
    async def main():
        c = client_factory()
        await c.create(widget("a", replicas=1))
        live = await c.get(Widget, "a")
        live.status.ready = 3
        assert await c.update_status(live, returning=False, hand_over=True) is None
        got = await c.get(Widget, "a")
        assert got.status.ready == 3 and got.metadata.generation == 1
        with pytest.raises(Conflict):  # `live` is stale now
            await c.update_status(live, returning=False, hand_over=True)
        rv = got.metadata.resource_version
        assert await c.update_status(got, returning=False, hand_over=True) is None
        assert (await c.get(Widget, "a")).metadata.resource_version == rv
    client_factory.run(main)


def test_update_status_handed_over_is_stored_without_a_copy():
    """The embedded server keeps the handed-over status itself; without the option, or
    with the result asked for, it stores a copy."""
    async def main():
        c = MemoryCluster()
        stream = c.watch(Widget)
        await c.create(widget("a"))
        await anext(stream)  # ADDED
        for hand_over, returning, kept in ((True, False, True), (False, False, False),
                                           (True, True, False)):
            live = await c.get(Widget, "a")
            live.status.ready += 1
            await c.update_status(live, returning=returning, hand_over=hand_over)
            ev = await anext(stream)
            assert (ev.object.status is live.status) is kept, (hand_over, returning)
            assert ev.object.status.ready == live.status.ready
    run_virtual(main)


def test_create_returning_metadata(client_factory):
    """`returning="metadata"` (a controller recording the uid it created): the server's
    metadata of the stored object, a private copy; generated names come back filled."""
    async def main():
        c = client_factory()
        meta = await c.create(widget("a", replicas=2), returning="metadata")
        assert isinstance(meta, ObjectMeta)
        got = await c.get(Widget, "a")
        assert (meta.name, meta.uid, meta.resource_version, meta.generation) == (
            "a", got.metadata.uid, got.metadata.resource_version, 1)
        meta.labels["x"] = "y"
        assert (await c.get(Widget, "a")).metadata.labels == {}
        named = await c.create(Widget(metadata=ObjectMeta(generate_name="w-")),
                               returning="metadata")
        assert named.name.startswith("w-") and named.uid
        assert (await c.get(Widget, named.name)).metadata.uid == named.uid
    client_factory.run(main)


def test_writes_without_the_result(client_factory):
    """`returning=False` on update, update_status and patch: nothing comes back, the write
    lands as it would with the result, and the next write from a fresh read still works
    (the real client keeps the server's answer as the base of its next merge patch)."""
    async def main():
        c = client_factory()
        await c.create(widget("a", replicas=1))
        got = await c.get(Widget, "a")
        got.spec.replicas = 2
        assert await c.update(got, returning=False) is None
        got.spec.replicas = 99  # the caller's object stays its own
        live = await c.get(Widget, "a")
        assert live.spec.replicas == 2 and live.metadata.generation == 2
        live.status.ready = 3
        assert await c.update_status(live, returning=False) is None
        assert await c.patch(Widget, "a", {"spec": {"replicas": 4}}, returning=False) is None
        after = await c.get(Widget, "a")
        assert (after.spec.replicas, after.status.ready) == (4, 3)
        assert await c.patch(Widget, "a", {"status": {"ready": 5}}, subresource="status",
                             returning=False) is None
        after = await c.get(Widget, "a")
        after.spec.replicas = 6
        assert (await c.update(after)).spec.replicas == 6
        assert (await c.get(Widget, "a")).status.ready == 5
        stale = after.model_copy(deep=True)
        stale.spec.replicas = 7
        with pytest.raises(Conflict):  # preconditions hold as with the result
            await c.update(stale, returning=False)
        with pytest.raises(NotFound):
            await c.patch(Widget, "nope", {"spec": {"replicas": 1}}, returning=False)
    client_factory.run(main)


def test_already_exists_and_not_found(client_factory):
    async def main():
        c = client_factory()
        await c.create(widget("a"))
        with pytest.raises(AlreadyExists):
            await c.create(widget("a"))
        await c.create(widget("a", ns="other"))  # names are per namespace
        with pytest.raises(NotFound):
            await c.get(Widget, "missing")
        with pytest.raises(NotFound):
            await c.update(widget("missing"))
        with pytest.raises(NotFound):
            await c.delete(Widget, "missing")
        with pytest.raises(NotFound):
            await c.patch(Widget, "missing", {"spec": {"replicas": 2}})
    client_factory.run(main)


def test_create_rejects_bad_input(client_factory):
    async def main():
        c = client_factory()
        with pytest.raises(Invalid) as err:
            await c.create(Widget())
        assert err.value.field == "metadata.name"
        with pytest.raises(Invalid) as err:
            await c.create(widget("Bad_Name"))
        assert err.value.field == "metadata.name"
        w = widget("a")
        w.metadata.labels = {"bad key": "x"}
        with pytest.raises(Invalid) as err:
            await c.create(w)
        assert err.value.field == "metadata.labels"
        live = await c.create(widget("b"))
        # resourceVersion must not be set on create; kube-apiserver says so with a 500.
        with pytest.raises(ServerError if client_factory.real else Invalid) as err:
            await c.create(live.model_copy(update={"metadata": ObjectMeta(
                name="c", resource_version=live.metadata.resource_version)}))
        assert "resourceVersion" in str(err.value)
        bad = widget("d")
        bad.spec.replicas = "many"  # models do not validate on assignment; the server does
        with pytest.raises(Invalid) as err:
            await c.create(bad)
        assert err.value.field == "spec.replicas"
    client_factory.run(main)


def test_generate_name_is_deterministic_and_unique(client_factory):
    async def main():
        c = client_factory()
        names = [
            (await c.create(Widget(metadata=ObjectMeta(generate_name="job-")))).name
            for _ in range(50)
        ]
        assert len(set(names)) == 50
        assert all(n.startswith("job-") and len(n) == 9 for n in names)
        return names
    first = client_factory.run(main)
    if not client_factory.real:  # the real server's suffixes are random
        assert client_factory.run(main) == first


def test_cluster_scoped_kind_ignores_namespace(client_factory):
    async def main():
        c = client_factory()
        g = await c.create(Gadget(metadata=ObjectMeta(name="g1", namespace="x")))
        assert g.metadata.namespace is None and g.key == "g1"
        assert (await c.get(Gadget, "g1")).name == "g1"
        assert [o.name for o in (await c.list(Gadget, "anything")).items] == ["g1"]
    client_factory.run(main)


def test_list_filters_and_returns_resource_version(client_factory):
    async def main():
        c = client_factory()
        for i, ns in enumerate(["a", "a", "b"]):
            w = widget(f"w{i}", ns=ns, node_name=f"n{i % 2}")
            w.metadata.labels = {"idx": str(i), "team": "x" if i < 2 else "y"}
            await c.create(w)
        all_ = await c.list(Widget)
        assert [o.key for o in all_.items] == ["a/w0", "a/w1", "b/w2"]
        newest = max(int(o.metadata.resource_version) for o in all_.items)
        if client_factory.real:  # the list's version is at least its newest item's
            assert int(all_.resource_version) >= newest
        else:
            assert all_.resource_version == "3" == str(newest)
        assert [o.name for o in (await c.list(Widget, "a")).items] == ["w0", "w1"]
        assert [o.name for o in (await c.list(Widget, label_selector="team=y")).items] == ["w2"]
        assert [o.name for o in (await c.list(Widget, label_selector={"team": "x"},
                                              field_selector="spec.nodeName=n1")).items] == ["w1"]
        with pytest.raises(Invalid):
            await c.list(Widget, label_selector="a in (")
    client_factory.run(main)


def test_list_metadata_is_the_lists_metadata_alone(client_factory):
    async def main():
        c = client_factory()
        for i, ns in enumerate(["a", "a", "b"]):
            w = widget(f"w{i}", ns=ns, node_name=f"n{i}")
            w.metadata.labels = {"team": "x" if i < 2 else "y"}
            await c.create(w)
        full = await c.list(Widget)
        metas = await c.list_metadata(Widget)
        assert metas.items == [o.metadata for o in full.items]
        assert all(type(m) is ObjectMeta for m in metas.items)
        assert [m.name for m in (await c.list_metadata(Widget, "a")).items] == ["w0", "w1"]
        assert [m.name for m in (await c.list_metadata(
            Widget, label_selector={"team": "y"})).items] == ["w2"]
        with pytest.raises(Invalid):
            await c.list_metadata(Widget, label_selector="a in (")
        if client_factory.real:  # and the server was asked for metadata only
            from phalanx.cluster.kube.cluster import METADATA_LIST_ACCEPT
            from phalanx.cluster.kube.paths import collection_path

            raw = await c.transport.request_bytes("GET", collection_path(Widget, None),
                                                  accept=METADATA_LIST_ACCEPT)
            assert b'"kind":"PartialObjectMetadataList"' in raw and b'"nodeName"' not in raw
    client_factory.run(main)


def test_update_conflict_on_stale_resource_version(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        first = a.copy_deep()
        first.spec.replicas = 2
        await c.update(first)
        a.spec.replicas = 3
        with pytest.raises(Conflict):
            await c.update(a)  # a still carries the old resourceVersion
        assert (await c.get(Widget, "a")).spec.replicas == 2
    client_factory.run(main)


def test_update_without_resource_version_is_unconditional(client_factory):
    async def main():
        c = client_factory()
        await c.create(widget("a"))
        blind = widget("a", replicas=7)
        assert blind.metadata.resource_version is None
        out = await c.update(blind)
        assert out.spec.replicas == 7
    client_factory.run(main)


def test_uid_precondition(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        a.metadata.uid = "someone-else"
        with pytest.raises(Conflict):
            await c.update(a)
        with pytest.raises(Conflict):
            await c.delete(Widget, "a", uid="someone-else")
    client_factory.run(main)


def test_server_managed_metadata_is_kept(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        uid, created = a.metadata.uid, a.metadata.creation_timestamp
        a.metadata.uid = None
        a.metadata.generation = 42
        a.metadata.creation_timestamp = None
        out = await c.update(a)
        assert (out.metadata.uid, out.metadata.creation_timestamp) == (uid, created)
        assert out.metadata.generation == 1
    client_factory.run(main)


def test_generation_bumps_on_spec_changes_only(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        a.metadata.labels["x"] = "1"
        a = await c.update(a)
        assert a.metadata.generation == 1
        a.spec.replicas = 5
        a = await c.update(a)
        assert a.metadata.generation == 2
        a.status.ready = 5
        a = await c.update_status(a)
        assert a.metadata.generation == 2
        a = await c.patch(Widget, "a", {"spec": {"image": "v2"}})
        assert a.metadata.generation == 3
    client_factory.run(main)


def test_generation_for_kinds_without_spec(client_factory):
    async def main():
        c = client_factory()
        n = await c.create(Note(metadata=ObjectMeta(name="n"), data={"a": "1"}))
        n.metadata.annotations["x"] = "y"
        n = await c.update(n)
        assert n.metadata.generation == 1
        n.data["a"] = "2"
        n = await c.update(n)
        assert n.metadata.generation == 2
    client_factory.run(main)


def test_status_subresource(client_factory):
    async def main():
        c = client_factory()
        a = widget("a")
        a.status.ready = 9  # status is dropped on create
        a = await c.create(a)
        assert a.status.ready == 0
        a.status.ready = 3
        a.spec.replicas = 4
        out = await c.update(a)  # update ignores status
        assert (out.status.ready, out.spec.replicas) == (0, 4)
        out.status.ready = 3
        out.spec.replicas = 10
        st = await c.update_status(out)  # update_status ignores everything else
        assert (st.status.ready, st.spec.replicas) == (3, 4)
        with pytest.raises(Conflict):
            await c.update_status(out)  # stale
        p = await c.patch(Widget, "a", {"status": {"phase": "Running"}}, subresource="status")
        assert p.status.phase == "Running" and p.status.ready == 3
        # The main resource ignores status.
        p = await c.patch(Widget, "a", {"status": {"phase": "Lost"}})
        assert p.status.phase == "Running"
    client_factory.run(main)


def test_update_status_of_a_kind_with_an_opaque_status(client_factory):
    # A Service's status is plain JSON (no model): update_status copies it all the same.
    async def main():
        c = client_factory()
        svc = await c.create(Service.model_validate({  # only a LoadBalancer has ingress
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}))
        svc.status = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "ipMode": "VIP"}]}}
        out = await c.update_status(svc)
        assert out.status == {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "ipMode": "VIP"}]}}
        svc.status["loadBalancer"]["ingress"][0]["ip"] = "changed after the write"
        got = await c.get(Service, "s", "ns")
        assert got.status == out.status
        assert int(got.metadata.resource_version) > int(svc.metadata.resource_version)
    client_factory.run(main)


def test_kind_without_status_subresource_writes_status_with_object():
    async def main():
        c = MemoryCluster()
        g = await c.create(Gadget(metadata=ObjectMeta(name="g"), spec=GadgetSpec(size=1)))
        with pytest.raises(NotFound, match="no status subresource"):
            await c.update_status(g)
    run_virtual(main)


def test_no_op_writes_store_nothing():
    async def main():
        c = MemoryCluster()
        a = await c.create(widget("a"))
        same = await c.update(a)
        assert same.metadata.resource_version == a.metadata.resource_version
        same = await c.update_status(a)
        assert same.metadata.resource_version == a.metadata.resource_version
        same = await c.patch(Widget, "a", {"spec": {"replicas": 1}})
        assert same.metadata.resource_version == a.metadata.resource_version
        assert c.stats.noops[("update", "Widget")] == 1
        assert c.stats.total_writes() == 1
    run_virtual(main)


def test_merge_patch(client_factory):
    async def main():
        c = client_factory()
        a = widget("a", image="v1")
        a.metadata.labels = {"keep": "1", "drop": "2"}
        await c.create(a)
        out = await c.patch(Widget, "a", {"metadata": {"labels": {"drop": None, "new": "3"}},
                                          "spec": {"replicas": 4}})
        assert out.metadata.labels == {"keep": "1", "new": "3"}
        assert (out.spec.replicas, out.spec.image) == (4, "v1")
        out = await c.patch(Widget, "a", {"spec": {"image": None}})  # null resets to default
        assert out.spec.image == ""
        with pytest.raises(Invalid) as err:
            await c.patch(Widget, "a", {"spec": {"replicas": "lots"}})
        assert err.value.field == "spec.replicas"
        with pytest.raises(Invalid) as err:
            await c.patch(Widget, "a", {"spec": {"unknownField": 1}})
        assert err.value.field == "spec.unknownField"
    client_factory.run(main)


def test_patch_resource_version_is_a_precondition(client_factory):
    async def main():
        c = client_factory()
        a = await c.create(widget("a"))
        rv = a.metadata.resource_version
        await c.patch(Widget, "a", {"metadata": {"resourceVersion": rv}, "spec": {"replicas": 2}})
        with pytest.raises(Conflict):
            await c.patch(Widget, "a", {"metadata": {"resourceVersion": rv},
                                        "spec": {"replicas": 3}})
        assert (await c.get(Widget, "a")).spec.replicas == 2
    client_factory.run(main)


def test_one_class_per_kind():
    class OtherWidget(Widget):
        pass

    async def main():
        c = MemoryCluster()
        await c.create(widget("a"))
        with pytest.raises(TypeError, match="one class per kind"):
            await c.get(OtherWidget, "a")
    run_virtual(main)


def test_dump_is_the_listed_objects_as_kubectl_shows_them_in_key_order():
    async def main() -> None:
        api = MemoryCluster()
        for ns, name in (("b", "w2"), ("a", "w1"), ("b", "w1")):
            await api.create(widget(name, ns))
        listed = sorted((await api.list(Widget)).items, key=lambda o: o.key)
        dumped = api.dump(Widget)
        assert dumped == [o.to_dict() for o in listed]
        assert [d["metadata"]["namespace"] + "/" + d["metadata"]["name"] for d in dumped] == [
            "a/w1", "b/w1", "b/w2"]
        dumped[0]["metadata"]["labels"] = {"changed": "here"}  # a fresh dict: the store is not
        assert api.dump(Widget)[0] == listed[0].to_dict()
        assert api.dump(Service) == []  # a kind never stored

    run_virtual(main())
