"""kube-scheduler 1.36's interpodaffinity/filtering_test.go TestRequiredAffinityMultipleNodes,
row by row (ids = kube's names): PreFilter, then Filter on every node; each node's status
(fits, or code + the one reason) must equal kube's.
"""

from __future__ import annotations

from typing import Any

import pytest

from .interpodaffinity_kit import AFFINITY_NOT_MATCH as AFF
from .interpodaffinity_kit import ANTI_NOT_MATCH as ANTI
from .interpodaffinity_kit import EXISTING_ANTI_NOT_MATCH as EXISTING
from .interpodaffinity_kit import MakePod, make_node, plugin, run_filter, snapshot

SKIP = "skip"


RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _nodes(*specs: tuple[str, dict[str, str]]) -> list[Any]:
    return [make_node(n, lbl) for n, lbl in specs]


def _rzh(name: str, zone: str, region: str = "r1") -> tuple[str, dict[str, str]]:
    return name, {"region": region, "zone": zone, "hostname": name}


MULTIPLE_NODES: list[tuple[str, Any, list, list, Any]] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value "
        "with one of them has an existing pod that matches the affinity rules",
        MakePod().pod_affinity_in("foo", "region", ["bar"]).obj(),
        [MakePod().name("p1").node("node1").labels({"foo": "bar"}).obj()],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)),
        [None, None, AFF],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. "
        "The first pod of the collection should not be blocked from being scheduled onto any "
        "node, even there's no existing pod that matches the rule anywhere.",
        MakePod().labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"]).obj(),
        [MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        _nodes(("nodeA", {"zone": "az1", "hostname": "h1"}),
               ("nodeB", {"zone": "az2", "hostname": "h2"})),
        [None, None],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the "
        "requested topology keys",
        MakePod().labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"]).obj(),
        [MakePod().name("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        _nodes(("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
               ("nodeB", {"zoneLabel": "az2", "hostname": "h2"})),
        [AFF, AFF],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        MakePod().pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        _nodes(("nodeA", {"region": "r1", "hostname": "nodeA"}),
               ("nodeB", {"region": "r1", "hostname": "nodeB"})),
        [ANTI, ANTI],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity "
        "rule matches a pod.",
        MakePod().pod_anti_affinity_in("foo", "region", ["abc"])
        .pod_anti_affinity_in("service", "zone", ["securityscan"]).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [ANTI, ANTI],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB "
        "but can be scheduled onto nodeC",
        MakePod().pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        _nodes(("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)),
        [ANTI, ANTI, None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, "
        "but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod "
        "affinity rule but in different namespace)",
        MakePod().namespace("NS1").labels({"foo": "123"})
        .pod_anti_affinity_in("foo", "region", ["bar"]).obj(),
        [MakePod().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
         MakePod().node("nodeC").namespace("NS2")
         .pod_anti_affinity_in("foo", "region", ["123"]).obj()],
        _nodes(("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)),
        [ANTI, ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid "
        "topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the "
        "term is also checked",
        MakePod().label("foo", "").obj(),
        [MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z1")),
        SKIP,
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if "
        "topologyKey matches",
        MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label").obj(),
        [MakePod().node("nodeA").labels({"foo": ""}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z1")),
        [None, None],
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it "
        "violates each existingPod's terms on all nodes",
        MakePod().label("foo", "").label("bar", "").obj(),
        [MakePod().node("nodeA").pod_anti_affinity_exists("foo", "zone").obj(),
         MakePod().node("nodeA").pod_anti_affinity_exists("bar", "region").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at "
        "least violates one anti-affinity rule of existingPod",
        MakePod().pod_anti_affinity_exists("foo", "zone")
        .pod_anti_affinity_exists("bar", "region").obj(),
        [MakePod().node("nodeA").labels({"foo": ""}).obj(),
         MakePod().node("nodeB").labels({"bar": ""}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod().label("foo", "").label("bar", "").obj(),
        [MakePod().node("nodeA").pod_anti_affinity_exists("foo", "invalid-node-label")
         .pod_anti_affinity_exists("bar", "zone").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [EXISTING, None],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod().pod_anti_affinity_exists("foo", "invalid-node-label")
        .pod_anti_affinity_exists("bar", "zone").obj(),
        [MakePod().name("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod().label("foo", "").label("bar", "").obj(),
        [MakePod().node("nodeA").pod_anti_affinity_exists("foo", "region")
         .pod_anti_affinity_exists("bar", "zone").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod().pod_anti_affinity_exists("foo", "region")
        .pod_anti_affinity_exists("bar", "zone").obj(),
        [MakePod().node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one "
        "anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        MakePod().label("foo", "").label("bar", "").obj(),
        [MakePod().node("nodeA").pod_anti_affinity_exists("foo", "zone")
         .pod_anti_affinity_exists("labelA", "zone").obj(),
         MakePod().node("nodeB").pod_anti_affinity_exists("bar", "zone")
         .pod_anti_affinity_exists("labelB", "zone").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2"), _rzh("nodeC", "z3")),
        [EXISTING, EXISTING, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match",
        MakePod().pod_affinity_exists("foo", "region").pod_affinity_exists("bar", "zone").obj(),
        [MakePod().name("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z1")),
        [None, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match, and the match logic should be satisfied on the same pod",
        MakePod().pod_affinity_exists("foo", "region").pod_affinity_exists("bar", "zone").obj(),
        [MakePod().node("nodeA").name("pod1").labels({"foo": ""}).obj(),
         MakePod().node("nodeB").name("pod2").labels({"bar": ""}).obj()],
        _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2")),
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "want"), [r[1:] for r in MULTIPLE_NODES],
                         ids=[r[0] for r in MULTIPLE_NODES])
def test_required_affinity_multiple_nodes(pod: Any, pods: list, nodes: list, want: Any) -> None:
    st, per_node = run_filter(plugin({"NS1": {}}), pod, snapshot(pods, nodes))
    if want == SKIP:
        assert st.is_skip
        return
    assert st.is_success
    assert per_node == {n.metadata.name: w for n, w in zip(nodes, want, strict=True)}
