"""The topology objects each backend's scheduler reads, written from the ClusterTopology
(issue 22 items 6 and 9, and Volcano's HyperNodes): KAI's Topology without level aliases and
replaced when the levels change (KAI's are immutable), Volcano's HyperNode tree from the
nodes' labels, and Koordinator's `default` ClusterNetworkTopology defining every layer the
gang annotations name; each left alone or reported where it is not the operator's."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.core import Node
from phalanx.api.grove import ClusterTopology
from phalanx.api.kai_topology import KaiTopology
from phalanx.api.koordinator_topology import ClusterNetworkTopology
from phalanx.api.scheduling import CoschedulingPodGroup, VolcanoPodGroup
from phalanx.api.volcano_topology import HyperNode
from phalanx.backends.kai import KaiBackend, KaiBackendConfig
from phalanx.backends.koordinator import (
    KoordinatorBackend,
    KoordinatorBackendConfig,
    cluster_network_topology,
)
from phalanx.backends.topology import TopologyLevels
from phalanx.backends.volcano import HYPERNODE_REFRESH, VolcanoBackend, VolcanoBackendConfig
from phalanx.backends.volcano_hypernodes import hypernode_name, hypernode_tree
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from . import samples as s

LEVELS = TopologyLevels.from_cluster_topology(s.cluster_topology())


def _node(name: str, zone: str | None, block: str | None, rack: str | None) -> Node:
    lbl = {k: v for k, v in ((s.ZONE, zone), (s.BLOCK, block), (s.RACK, rack)) if v}
    lbl[s.HOST] = name
    return Node.model_validate({"metadata": {"name": name, "labels": lbl}})


# Two blocks of one zone; block b1 has racks r1, r2; block b2 has rack r3; one node without
# a rack label (in no rack HyperNode, but in its block's).
NODES = [_node("n1", "z", "b1", "r1"), _node("n2", "z", "b1", "r1"), _node("n3", "z", "b1", "r2"),
         _node("n4", "z", "b2", "r3"), _node("n5", "z", "b2", None)]


def _name(domain: str, value: str) -> str:
    return hypernode_name("grove-topology", domain, value)


# --- Volcano -------------------------------------------------------------------------------


def test_hypernode_tree_field_by_field() -> None:
    tree = {h.name: h.to_dict()["spec"] for h in hypernode_tree(
        LEVELS, (n.metadata.labels for n in NODES))}

    def exact(domain: str, *values: str) -> list[dict[str, Any]]:
        return [{"type": "HyperNode", "selector": {"exactMatch": {"name": _name(domain, v)}}}
                for v in values]

    assert tree == {
        _name("rack", "r1"): {"tier": 1, "tierName": "rack", "members": [
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": {s.RACK: "r1"}}}}]},
        _name("rack", "r2"): {"tier": 1, "tierName": "rack", "members": [
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": {s.RACK: "r2"}}}}]},
        _name("rack", "r3"): {"tier": 1, "tierName": "rack", "members": [
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": {s.RACK: "r3"}}}}]},
        _name("block", "b1"): {"tier": 2, "tierName": "block",
                               "members": exact("rack", "r1", "r2")},
        _name("block", "b2"): {"tier": 2, "tierName": "block", "members": exact("rack", "r3")},
        _name("zone", "z"): {"tier": 3, "tierName": "zone", "members": exact("block", "b1", "b2")},
    }
    # Tier numbers are the ones the PodGroup's networkTopology names.
    assert [LEVELS.volcano_tier(k) for k in (s.RACK, s.BLOCK, s.ZONE)] == [1, 2, 3]


def test_hypernode_names_are_dns_and_keep_unlike_values_apart() -> None:
    a, b = hypernode_name("t", "rack", "Rack_1"), hypernode_name("t", "rack", "rack-1")
    assert a != b and b == "t-rack-rack-1"
    assert a.startswith("t-rack-rack-1-") and a == a.lower()
    assert len(hypernode_name("t" * 80, "rack", "x")) <= 63


def test_a_child_under_two_parents_stays_under_the_first() -> None:
    tree = hypernode_tree(LEVELS, [n.metadata.labels for n in (
        _node("a", "z", "b2", "r1"), _node("b", "z", "b1", "r1"))])
    members = {h.name: [m.selector.exact_match.name for m in h.spec.members or ()
                        if m.selector and m.selector.exact_match] for h in tree}
    assert members[_name("block", "b1")] == [_name("rack", "r1")]
    assert members[_name("block", "b2")] == []  # r1 stays under b1 alone: a tree


async def _volcano_cluster() -> tuple[MemoryCluster, VolcanoBackend]:
    client = MemoryCluster()
    await client.create(s.pcs("volcano"))
    await client.create(s.cluster_topology())
    for n in NODES:
        await client.create(n)
    backend = VolcanoBackend(VolcanoBackendConfig())
    await backend.init(client)
    return client, backend


def test_volcano_writes_the_hypernodes_its_podgroups_tier_names() -> None:
    async def main() -> None:
        client, backend = await _volcano_cluster()
        await backend.sync_podgang(await client.create(s.podgang(name="plain-0")))
        assert (await client.list(HyperNode)).items == []  # no pack constraint, no tree

        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        written = {h.name: h for h in (await client.list(HyperNode)).items}
        assert set(written) == {h.name for h in hypernode_tree(
            LEVELS, (n.metadata.labels for n in NODES))}
        ct = await client.get(ClusterTopology, "grove-topology")
        for h in written.values():
            assert [(r.kind, r.uid) for r in h.metadata.owner_references] == \
                [("ClusterTopology", ct.metadata.uid)]
        group = await client.get(VolcanoPodGroup, s.BASE_PODGANG, "default")
        assert group.to_dict()["spec"]["networkTopology"] == \
            {"mode": "hard", "highestTierAllowed": 3}
        assert written[_name("zone", "z")].spec.tier == 3

    run_virtual(main)


def test_volcano_refreshes_hypernodes_as_nodes_come_and_go() -> None:
    async def main() -> None:
        client, backend = await _volcano_cluster()
        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        await client.create(_node("n6", "z", "b3", "r9"))
        await client.delete(Node, "n4")
        await client.delete(Node, "n5")  # block b2 is gone
        await backend.sync_podgang(pg)  # within the refresh interval: nothing listed yet
        names = {h.name for h in (await client.list(HyperNode)).items}
        assert _name("rack", "r9") not in names and _name("block", "b2") in names

        await _sleep(HYPERNODE_REFRESH)
        await backend.sync_podgang(pg)
        names = {h.name for h in (await client.list(HyperNode)).items}
        assert {_name("rack", "r9"), _name("block", "b3")} <= names
        assert _name("block", "b2") not in names and _name("rack", "r3") not in names
        zone = await client.get(HyperNode, _name("zone", "z"))
        assert [m.selector.exact_match.name for m in zone.spec.members] == \
            [_name("block", "b1"), _name("block", "b3")]

        # The ClusterTopology controller's hook writes them at once, whatever the interval.
        await client.create(_node("n7", "z", "b3", "r10"))
        await backend.sync_cluster_topology(await client.get(ClusterTopology, "grove-topology"))
        assert await client.get(HyperNode, _name("rack", "r10"))

    run_virtual(main)


def test_volcanos_topology_check_reads_one_list_and_repairs_only_what_differs() -> None:
    """The ClusterTopology controller checks every HyperNode: from one list, not a read per
    HyperNode (hundreds at 5,000 nodes), writing only a changed or deleted one back."""

    async def main() -> None:
        client, backend = await _volcano_cluster()
        ct = await client.get(ClusterTopology, "grove-topology")
        await backend.sync_cluster_topology(ct)
        tree = {h.name: h.spec for h in hypernode_tree(LEVELS, (n.metadata.labels for n in NODES))}
        assert len(tree) == 6  # 3 racks, 2 blocks, 1 zone

        client.stats.reset()
        await backend.sync_cluster_topology(ct)  # all in line
        assert client.stats.reads[("get", "HyperNode")] == 0
        assert client.stats.reads[("list", "HyperNode")] == 1
        assert client.stats.total_writes("HyperNode") == 0

        edited = await client.get(HyperNode, _name("rack", "r1"))
        edited.spec.tier = 7
        await client.update(edited)
        await client.delete(HyperNode, _name("block", "b2"))
        client.stats.reset()
        await backend.sync_cluster_topology(ct)
        assert client.stats.writes == {("update", "HyperNode"): 1, ("create", "HyperNode"): 1}
        live = {h.name: h.spec for h in (await client.list(HyperNode)).items}
        assert live == tree

    run_virtual(main)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


class _NotServing:
    """A client that says (like KubeCluster's discovery) the given kinds are not served."""

    def __init__(self, inner: MemoryCluster, missing: tuple[type, ...]) -> None:
        self.inner, self.missing = inner, missing

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def serves(self, kind: type) -> bool:
        return kind not in self.missing


@pytest.mark.parametrize("backend_kind", ["volcano", "kai", "koordinator"])
def test_a_topology_crd_not_installed_is_said_once_and_not_written(
        backend_kind: str, caplog: pytest.LogCaptureFixture) -> None:
    kinds = {"volcano": HyperNode, "kai": KaiTopology, "koordinator": ClusterNetworkTopology}
    backends = {"volcano": lambda: VolcanoBackend(VolcanoBackendConfig()),
                "kai": lambda: KaiBackend(KaiBackendConfig()),
                "koordinator": lambda: KoordinatorBackend(KoordinatorBackendConfig())}
    missing = kinds[backend_kind]

    async def main() -> None:
        client, _ = await _volcano_cluster()
        backend = backends[backend_kind]()
        await backend.init(_NotServing(client, (missing,)))  # type: ignore[arg-type]
        pg = await client.create(s.podgang(topology=True))
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                await backend.sync_podgang(pg)
        assert (await client.list(missing)).items == []

    run_virtual(main)
    said = [r.getMessage() for r in caplog.records if "is not served" in r.getMessage()]
    assert len(said) == 1 and missing.KIND in said[0], said


# --- KAI -----------------------------------------------------------------------------------


def test_kai_replaces_its_topology_when_the_levels_change() -> None:
    """KAI's Topology levels are immutable (CEL `self == oldSelf`): a changed ClusterTopology
    is a new Topology, never an update of the levels."""

    async def main() -> None:
        client = MemoryCluster()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        ct = await client.create(s.cluster_topology())
        await backend.sync_cluster_topology(ct)
        first = await client.get(KaiTopology, "grove-topology")
        ct.spec.levels = [lv for lv in ct.spec.levels if lv.domain != "block"]
        ct = await client.update(ct)
        await backend.sync_cluster_topology(ct)
        second = await client.get(KaiTopology, "grove-topology")
        assert second.metadata.uid != first.metadata.uid
        assert [lv.node_label for lv in second.spec.levels] == [s.ZONE, s.RACK, s.HOST]
        await backend.sync_cluster_topology(ct)  # unchanged: left as it is
        assert (await client.get(KaiTopology, "grove-topology")).metadata.uid == \
            second.metadata.uid

    run_virtual(main)


# --- Koordinator ---------------------------------------------------------------------------


def test_koordinator_network_topology_defines_every_layer_it_names() -> None:
    cnt = cluster_network_topology(LEVELS)
    assert cnt.name == "default"
    assert cnt.to_dict()["spec"] == {"networkTopologySpec": [
        {"topologyLayer": "ZoneTopologyLayer", "labelKey": [s.ZONE]},
        {"topologyLayer": "BlockTopologyLayer", "parentTopologyLayer": "ZoneTopologyLayer",
         "labelKey": [s.BLOCK]},
        {"topologyLayer": "RackTopologyLayer", "parentTopologyLayer": "BlockTopologyLayer",
         "labelKey": [s.RACK]},
        {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackTopologyLayer"},
    ]}
    # Without a host level the chain still starts at Koordinator's NodeTopologyLayer.
    no_host = TopologyLevels([lv for lv in LEVELS.levels if lv.domain != "host"], "t")
    layers = cluster_network_topology(no_host).spec.network_topology_spec
    assert [(lv.topology_layer, lv.parent_topology_layer) for lv in layers][-1] == \
        ("NodeTopologyLayer", "RackTopologyLayer")


def _chain(cnt: ClusterNetworkTopology) -> list[str]:
    """Koordinator's walk (sortNetworkTopologySpecFromParentToChild): from NodeTopologyLayer
    up the parents, as many steps as there are entries."""
    assert cnt.spec is not None
    by_layer = {lv.topology_layer: lv for lv in cnt.spec.network_topology_spec}
    out, layer = [], "NodeTopologyLayer"
    for _ in cnt.spec.network_topology_spec:
        spec = by_layer[layer]  # KeyError: Koordinator's "topology layer not found"
        out.append(layer)
        layer = spec.parent_topology_layer or ""
    return out


def test_koordinator_writes_the_layers_its_gang_annotations_name() -> None:
    async def main() -> None:
        client, _ = await _volcano_cluster()
        backend = KoordinatorBackend(KoordinatorBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True))
        await backend.sync_podgang(pg)
        cnt = await client.get(ClusterNetworkTopology, "default")
        ct = await client.get(ClusterTopology, "grove-topology")
        assert [r.uid for r in cnt.metadata.owner_references] == [ct.metadata.uid]
        group = await client.get(CoschedulingPodGroup, s.BASE_GROUPS[0][0], "default")
        spec = json.loads(group.metadata.annotations[labels.ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC])
        named = {rule["layer"] for rule in spec["gatherStrategy"]}
        assert named and named <= set(_chain(cnt)), (named, _chain(cnt))

    run_virtual(main)


def test_koordinator_leaves_a_network_topology_it_does_not_own(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        client, _ = await _volcano_cluster()
        admin = ClusterNetworkTopology.model_validate({"metadata": {"name": "default"}, "spec": {
            "networkTopologySpec": [{"topologyLayer": "NodeTopologyLayer"}]}})
        await client.create(admin)
        backend = KoordinatorBackend(KoordinatorBackendConfig())
        await backend.init(client)
        pg = await client.create(s.podgang(topology=True))
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                await backend.sync_podgang(pg)
        live = await client.get(ClusterNetworkTopology, "default")
        assert live.spec == admin.spec

    run_virtual(main)
    said = [r.getMessage() for r in caplog.records if "left as it is" in r.getMessage()]
    assert len(said) == 1, said


def test_topology_controller_hooks_report_what_kept_the_object_from_being_written() -> None:
    """sync_cluster_topology raises (the topology controller puts it in the binding's status)
    where sync_podgang only logs: the CRD not installed, or `default` someone else's."""

    async def main() -> None:
        client, _ = await _volcano_cluster()
        ct = await client.get(ClusterTopology, "grove-topology")
        volcano = VolcanoBackend(VolcanoBackendConfig())
        await volcano.init(_NotServing(client, (HyperNode,)))  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="HyperNode is not served"):
            await volcano.sync_cluster_topology(ct)
        await client.create(ClusterNetworkTopology.model_validate({
            "metadata": {"name": "default"},
            "spec": {"networkTopologySpec": [{"topologyLayer": "NodeTopologyLayer"}]}}))
        koord = KoordinatorBackend(KoordinatorBackendConfig())
        await koord.init(client)
        with pytest.raises(RuntimeError, match="left as it is"):
            await koord.sync_cluster_topology(ct)

    run_virtual(main)


def test_koordinator_checks_an_admins_network_topology_for_drift() -> None:
    async def main() -> None:
        client, _ = await _volcano_cluster()
        ct = await client.get(ClusterTopology, "grove-topology")
        koord = KoordinatorBackend(KoordinatorBackendConfig())
        await koord.init(client)
        assert (await koord.check_topology_drift(ct, "mine"))[:2] == \
            (False, "ClusterNetworkTopology 'mine' not found")
        mirror = cluster_network_topology(LEVELS)
        mirror.metadata = mirror.metadata.model_copy(update={"name": "mine",
                                                             "owner_references": []})
        await client.create(mirror)
        assert (await koord.check_topology_drift(ct, "mine"))[:2] == (True, "")
        live = await client.get(ClusterNetworkTopology, "mine")
        assert live.spec is not None
        live.spec.network_topology_spec = live.spec.network_topology_spec[1:]
        await client.update(live)
        in_sync, why, _ = await koord.check_topology_drift(ct, "mine")
        assert not in_sync and "differ" in why

    run_virtual(main)


def test_kai_leaves_a_topology_it_does_not_own(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        client = MemoryCluster()
        backend = KaiBackend(KaiBackendConfig())
        await backend.init(client)
        ct = await client.create(s.cluster_topology())
        admin = await client.create(KaiTopology.model_validate({
            "metadata": {"name": "grove-topology"}, "spec": {"levels": [{"nodeLabel": s.RACK}]}}))
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                await backend.sync_cluster_topology(ct)
        live = await client.get(KaiTopology, "grove-topology")
        assert live.metadata.uid == admin.metadata.uid and live.spec == admin.spec

    run_virtual(main)
    said = [r.getMessage() for r in caplog.records if "left as it is" in r.getMessage()]
    assert len(said) == 1, said


def test_the_topology_controller_hook_repairs_what_was_changed_behind_the_backends_back() -> None:
    async def main() -> None:
        client, volcano = await _volcano_cluster()
        koord = KoordinatorBackend(KoordinatorBackendConfig())
        await koord.init(client)
        ct = await client.get(ClusterTopology, "grove-topology")
        for backend in (volcano, koord):
            await backend.sync_cluster_topology(ct)
        await client.delete(HyperNode, _name("rack", "r1"))
        cnt = await client.get(ClusterNetworkTopology, "default")
        assert cnt.spec is not None
        cnt.spec.network_topology_spec = cnt.spec.network_topology_spec[1:]
        await client.update(cnt)
        for backend in (volcano, koord):
            await backend.sync_cluster_topology(ct)
        assert await client.get(HyperNode, _name("rack", "r1"))
        assert (await client.get(ClusterNetworkTopology, "default")).spec == \
            cluster_network_topology(LEVELS).spec

    run_virtual(main)
