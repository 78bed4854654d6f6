"""Pod rules: scheduling gates, spec immutability, the binding subresource."""

import pytest

from phalanx.cluster.client import Conflict, Invalid, NotFound
from phalanx.cluster.clock import run_virtual

from .kinds import Pod, make_pod


def test_gates_may_be_removed_but_not_added(client_factory):
    async def main():
        c = client_factory()
        p = await c.create(make_pod("p", gates=("a.io/one", "b.io/two")))
        p.spec.scheduling_gates = [g for g in p.spec.scheduling_gates if g.name == "b.io/two"]
        p = await c.update(p)
        assert [g.name for g in p.spec.scheduling_gates] == ["b.io/two"]
        added = p.spec.scheduling_gates + [type(p.spec.scheduling_gates[0])(name="c.io/new")]
        p.spec.scheduling_gates = added
        with pytest.raises(Invalid) as err:
            await c.update(p)
        assert err.value.field.startswith("spec.schedulingGates")  # [1].name on a real server
        ungated = await c.create(make_pod("q"))
        with pytest.raises(Invalid):
            await c.patch(Pod, ungated.name, {"spec": {"schedulingGates": [{"name": "x.io/y"}]}})
        p = await c.patch(Pod, "p", {"spec": {"schedulingGates": None}})
        assert p.spec.scheduling_gates == []
    client_factory.run(main)


def test_pod_spec_is_immutable_except_allowed_fields(client_factory):
    async def main():
        c = client_factory()
        p = await c.create(make_pod("p", gates=("g.io/x",)))
        # While gated: nodeSelector additions are allowed.
        p = await c.patch(Pod, "p", {"spec": {"nodeSelector": {"zone": "a"}}})
        p = await c.patch(Pod, "p", {"spec": {"nodeSelector": {"rack": "r1"}}})
        assert p.spec.node_selector == {"zone": "a", "rack": "r1"}
        with pytest.raises(Invalid) as err:
            await c.patch(Pod, "p", {"spec": {"nodeSelector": {"zone": "b"}}})
        assert err.value.field == "spec.nodeSelector"
        # Always: container images.
        p = await c.patch(Pod, "p", {"spec": {"containers": [{"name": "main", "image": "v2"}]}})
        assert p.spec.containers[0].image == "v2"
        with pytest.raises(Invalid) as err:
            await c.patch(Pod, "p", {"spec": {"containers": [{"name": "other", "image": "v2"}]}})
        assert err.value.field in ("spec", "spec.containers")  # "spec" on a real server
        with pytest.raises(Invalid) as err:
            await c.patch(Pod, "p", {"spec": {"priority": 5}})
        assert err.value.field in ("spec", "spec.priority")  # "spec" on a real server
        with pytest.raises(Invalid) as err:
            await c.patch(Pod, "p", {"spec": {"nodeName": "n1"}})
        assert err.value.field in ("spec", "spec.nodeName")  # "spec" on a real server
        # Once ungated, nodeSelector is frozen.
        p = await c.patch(Pod, "p", {"spec": {"schedulingGates": []}})
        with pytest.raises(Invalid):
            await c.patch(Pod, "p", {"spec": {"nodeSelector": {"more": "x"}}})
    client_factory.run(main)


def test_create_with_gates_and_node_name_is_invalid(client_factory):
    async def main():
        c = client_factory()
        with pytest.raises(Invalid) as err:
            await c.create(make_pod("p", gates=("g.io/x",), node="n1"))
        assert err.value.field == "spec.nodeName"
    client_factory.run(main)


def test_bind(client_factory):
    async def main():
        c = client_factory()
        await c.create(make_pod("p"))
        await c.bind("p", "default", "node-1")
        p = await c.get(Pod, "p")
        assert p.spec.node_name == "node-1"
        scheduled = [x for x in p.status.conditions if x.type == "PodScheduled"]
        assert [x.status for x in scheduled] == ["True"]
        with pytest.raises(Conflict):
            await c.bind("p", "default", "node-2")
        with pytest.raises(NotFound):
            await c.bind("missing", "default", "node-1")
        await c.create(make_pod("gated", gates=("g.io/x",)))
        with pytest.raises(Conflict, match="schedulingGates"):  # 409, as kube-apiserver
            await c.bind("gated", "default", "node-1")
    client_factory.run(main)


def test_bind_replaces_an_unschedulable_condition_and_keeps_the_others(client_factory):
    async def main():
        c = client_factory()
        await c.create(make_pod("p"))
        await c.patch(Pod, "p", {"status": {"conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no fit"},
            {"type": "example.com/Checked", "status": "True"},
        ]}}, "default", subresource="status")
        await c.bind("p", "default", "node-1")
        conds = {x.type: x for x in (await c.get(Pod, "p")).status.conditions}
        assert conds["PodScheduled"].status == "True"
        assert conds["PodScheduled"].reason in ("", None) and conds["PodScheduled"].message in ("", None)
        assert conds["example.com/Checked"].status == "True"
        assert len(conds) == 2
    client_factory.run(main)


def test_pod_status_is_reset_on_create(client_factory):
    async def main():
        c = client_factory()
        p = make_pod("p")
        p.status.phase = "Running"
        p = await c.create(p)
        assert p.status.phase in (None, "Pending")
    client_factory.run(main)


def test_a_pod_bound_or_created_on_a_node_gets_its_zone_and_region_labels(client_factory):
    """PodTopologyLabels (kube-apiserver 1.35+, on by default): the binding subresource and
    a create with spec.nodeName copy the node's topology.kubernetes.io/zone and region
    labels onto the pod, replacing the pod's own values; no other label, and nothing for a
    node that does not exist."""
    from phalanx.api.core import Node

    async def main():
        c = client_factory()
        node = Node.model_validate({"metadata": {"name": "topology-labels-n1", "labels": {
            "topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1",
            "topology.k8s.io/zone": "other", "rack": "a"}}})
        await c.create(node)
        try:
            topology = {"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1"}
            await c.create(make_pod("bound", labels={"app": "x"}))
            await c.create(make_pod("own-zone", labels={"topology.kubernetes.io/zone": "mine"}))
            await c.bind("bound", "default", "topology-labels-n1")
            await c.bind("own-zone", "default", "topology-labels-n1")
            created = await c.create(make_pod("created", labels={"app": "x"},
                                              node="topology-labels-n1"))
            assert created.metadata.labels == {"app": "x", **topology}
            await c.create(make_pod("elsewhere", labels={"app": "x"}, node="no-such-node"))
            await c.create(make_pod("unbound", labels={"app": "x"}))
            labels = {p.name: p.metadata.labels for p in (await c.list(Pod, "default")).items}
            assert labels == {"bound": {"app": "x", **topology}, "own-zone": topology,
                              "created": {"app": "x", **topology},
                              "elsewhere": {"app": "x"}, "unbound": {"app": "x"}}
        finally:
            await c.delete(Node, "topology-labels-n1")
    client_factory.run(main)
