"""kube-scheduler 1.36's interpodaffinity/scoring_test.go, row by row (ids = kube's names;
pytest numbers the two pairs of rows kube names alike).

Each row runs PreScore, then Score and NormalizeScore over every node, and compares the
status (Skip / Error) or the normalised integer scores with kube's.

Deliberate difference: the "invalid ... fails PreScore" rows get the same code (Error) and a
message naming the bad value, in our own words (the field path and why), not kube's Go text.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework.status import Code

from .interpodaffinity_kit import (
    TEAM_NAMESPACES,
    MakePod,
    affinity,
    expr,
    make_node,
    plugin,
    run_score,
    sel_in,
    snapshot,
    term,
    weighted,
)

MAX = 100
SKIP = "skip"
BAD = "{{.bad-value.}}"
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = {"matchExpressions": [expr("team", "In", ["team1"])]}

def _security(tk: str, *values: str) -> dict[str, Any]:
    return term(tk, sel_in("security", list(values)))


STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, _security("region", "S1"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, _security("region", "S2"))])
AFFINITY3 = affinity(preferred=[
    weighted(8, term("region", {"matchExpressions": [
        expr("security", "NotIn", ["S1"]), expr("security", "In", ["S2"])]})),
    weighted(2, term("region", {"matchExpressions": [
        expr("security", "Exists"), expr("wrongkey", "DoesNotExist")]})),
])
HARD_AFFINITY = affinity(required=[
    term("region", sel_in("security", ["S1", "value2"])),
    term("region", {"matchExpressions": [
        expr("security", "Exists"), expr("wrongkey", "DoesNotExist")]}),
])
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[weighted(5, term("az", sel_in("security", ["S1"])))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[weighted(5, term("az", sel_in("security", ["S2"])))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, term("region", sel_in("security", ["S1"])))],
    anti_preferred=[weighted(5, term("az", sel_in("security", ["S2"])))],
)
_NS_TERM = term("region", sel_in("security", ["S1"]), namespaces=["subteam2.team2"],
                namespace_selector=TEAM1)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[weighted(5, _NS_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(anti_preferred=[weighted(5, _NS_TERM)])
INVALID_AFFINITY_LABELS = affinity(preferred=[weighted(8, _security("region", BAD))])
INVALID_ANTI_AFFINITY_LABELS = affinity(
    anti_preferred=[weighted(5, term("az", sel_in("security", [BAD])))])


def _p(labels: dict[str, str] | None = None, aff: dict | None = None, node: str = "",
       ns: str = "") -> Any:
    b = MakePod().namespace(ns)
    if labels:
        b.labels(labels)
    if aff:
        b.affinity(aff)
    if node:
        b.node(node)
    return b.obj()


def _nodes(*labels: dict[str, str]) -> list[Any]:
    return [make_node(f"node{i + 1}", lbl) for i, lbl in enumerate(labels)]


# (name, pod, existing pods, nodes, want scores or SKIP or ERROR, ignorePreferredTerms...)
PREFERRED: list[tuple[str, Any, list, list, Any, bool]] = [
    (
        "all nodes are same priority as Affinity is nil",
        _p(S1), [], _nodes(RG_CHINA, RG_INDIA, AZ1), SKIP, False,
    ),
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to "
        "otherswhich doesn't match either pods in nodes or in topology key",
        _p(S1, STAY_WITH_S1_IN_REGION),
        [_p(S1, node="node1"), _p(S2, node="node2"), _p(S1, node="node3")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [MAX, 0, 0], False,
    ),
    (
        "All the nodes that have the same topology key & label value with one of them has an "
        "existing pod that match the affinity rules, have the same score",
        _p(None, STAY_WITH_S1_IN_REGION), [_p(S1, node="node1")],
        _nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), [MAX, MAX, 0], False,
    ),
    (
        "Affinity: nodes in one region has more matching pods comparing to other region, so the "
        "region which has more matches will get high score",
        _p(S1, STAY_WITH_S2_IN_REGION),
        [_p(S2, node="node1"), _p(S2, node="node1"), _p(S2, node="node2"),
         _p(S2, node="node3"), _p(S2, node="node4"), _p(S2, node="node5")],
        _nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), [MAX, 0, MAX, MAX, 0], False,
    ),
    (
        "Affinity: different Label operators and values for pod affinity scheduling preference, "
        "including some match failures ",
        _p(S1, AFFINITY3), [_p(S1, node="node1"), _p(S2, node="node2"), _p(S1, node="node3")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [20, MAX, 0], False,
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution "
        "in pod affinity symmetry",
        _p(S2),
        [_p(S1, STAY_WITH_S1_IN_REGION, "node1"), _p(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [0, MAX, 0], False,
    ),
    (
        "Affinity symmetry with namespace selector",
        _p(S1, ns="subteam1.team1"),
        [_p(S1, AFFINITY_NAMESPACE_SELECTOR, "node1"), _p(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [MAX, 0, 0], False,
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        _p(S1, ns="subteam1.team1"),
        [_p(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, "node1"),
         _p(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [0, MAX, MAX], False,
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity symmetry",
        _p(S1), [_p(S1, HARD_AFFINITY, "node1"), _p(S2, HARD_AFFINITY, "node2")],
        _nodes(RG_CHINA, RG_INDIA, AZ1), [MAX, MAX, 0], False,
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        _p(S1, AWAY_FROM_S1_IN_AZ), [_p(S1, node="node1"), _p(S2, node="node2")],
        _nodes(AZ1, RG_CHINA), [0, MAX], False,
    ),
    (
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get "
        "higher score comparing to others ",
        _p(S1, AWAY_FROM_S1_IN_AZ), [_p(S1, node="node1"), _p(S1, node="node2")],
        _nodes(AZ1, RG_CHINA), [0, MAX], False,
    ),
    (
        "Anti Affinity: one node has more matching pods comparing to other node, so the node "
        "which has more unmatches will get high score",
        _p(S1, AWAY_FROM_S1_IN_AZ),
        [_p(S1, node="node1"), _p(S1, node="node1"), _p(S2, node="node2")],
        _nodes(AZ1, RG_INDIA), [0, MAX], False,
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get "
        "high score",
        _p(S2), [_p(S1, AWAY_FROM_S2_IN_AZ, "node1"), _p(S2, AWAY_FROM_S1_IN_AZ, "node2")],
        _nodes(AZ1, AZ2), [0, MAX], False,
    ),
    (
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuring"
        "Execution in both pod affinity & anti affinity",
        _p(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [_p(S1, node="node1"), _p(S1, node="node2")],
        _nodes(RG_CHINA, AZ1), [MAX, 0], False,
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to "
        "schedule and existing pods have the same labels",
        _p(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [_p(S1, node="node1"), _p(S1, node="node1"), _p(S1, node="node2"),
         _p(S1, node="node3"), _p(S1, node="node3"), _p(S1, node="node4"),
         _p(S1, node="node5")],
        _nodes(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [MAX, 0, MAX, MAX, 0], False,
    ),
    (
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringScheduling"
        "IgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        _p(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [_p(S1, node="node1"), _p(S2, node="node2"),
         _p(None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node3"),
         _p(None, AWAY_FROM_S1_IN_AZ, "node4")],
        _nodes(RG_CHINA, AZ1, RG_INDIA, AZ2), [MAX, 0, MAX, 0], False,
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        _p(S1),
        [_p(S1, node="node1"), _p(None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node2")],
        _nodes(RG_CHINA, RG_CHINA), [0, 0], False,
    ),
    (
        "invalid Affinity fails PreScore",
        _p(None, INVALID_AFFINITY_LABELS), [], _nodes(RG_CHINA, RG_CHINA), "error", False,
    ),
    (
        "invalid AntiAffinity fails PreScore",
        _p(None, INVALID_ANTI_AFFINITY_LABELS), [], _nodes(RG_CHINA, RG_CHINA), "error", False,
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        _p(S1, AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [_p(S1, node="node1", ns="subteam1.team1"), _p(S1, node="node1", ns="subteam1.team1"),
         _p(S1, node="node1", ns="subteam1.team2"), _p(S1, node="node2", ns="subteam2.team1")],
        _nodes(RG_CHINA, RG_INDIA), [MAX, 0], False,
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        _p(S1, AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [_p(S1, node="node1", ns="subteam1.team1"), _p(S1, node="node1", ns="subteam1.team1"),
         _p(S1, node="node1", ns="subteam2.team2"), _p(S1, node="node2", ns="subteam2.team1")],
        _nodes(RG_CHINA, RG_INDIA), [MAX, 0], False,
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        _p(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [_p(S1, node="node1", ns="subteam1.team1"), _p(S1, node="node1", ns="subteam1.team1"),
         _p(S1, node="node1", ns="subteam1.team2"), _p(S1, node="node2", ns="subteam2.team1")],
        _nodes(RG_CHINA, RG_INDIA), [0, MAX], False,
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        _p(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [_p(S1, node="node1", ns="subteam1.team1"), _p(S1, node="node1", ns="subteam1.team1"),
         _p(S1, node="node1", ns="subteam2.team2"), _p(S1, node="node2", ns="subteam2.team1")],
        _nodes(RG_CHINA, RG_INDIA), [0, MAX], False,
    ),
    (
        "Ignore preferred terms of existing pods",
        _p(S2),
        [_p(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node1"),
         _p(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(RG_CHINA, RG_INDIA), SKIP, True,
    ),
    (
        "Do not ignore preferred terms of existing pods",
        _p(S2),
        [_p(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node1"),
         _p(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(RG_CHINA, RG_INDIA), [0, MAX], False,
    ),
    ("No nodes to score", _p(S2), [], [], SKIP, False),
]


def _check(st: Any, scores: Any, nodes: list, want: Any) -> None:
    if want == SKIP:
        assert st.is_skip
    elif want == "error":
        assert st.code == Code.ERROR
        assert st.reasons[0].startswith("parsing pod: spec.affinity.")
        assert BAD in st.reasons[0]
    else:
        assert st.is_success
        assert scores == [(n.metadata.name, w) for n, w in zip(nodes, want, strict=True)]


@pytest.mark.parametrize(("pod", "pods", "nodes", "want", "ignore"), [r[1:] for r in PREFERRED],
                         ids=[r[0] for r in PREFERRED])
def test_preferred_affinity(pod: Any, pods: list, nodes: list, want: Any, ignore: bool) -> None:
    pl = plugin(TEAM_NAMESPACES, hardPodAffinityWeight=1,
                ignorePreferredTermsOfExistingPods=ignore)
    st, scores = run_score(pl, pod, snapshot(pods, nodes))
    _check(st, scores, nodes, want)


HARD_POD_AFFINITY = affinity(required=[
    term("region", sel_in("service", ["S1"]), namespaces=["", "subteam2.team2"],
         namespace_selector=TEAM1),
])
SERVICE_S1 = {"service": "S1"}
HARD_PODS = [_p(None, HARD_POD_AFFINITY, "node1"), _p(None, HARD_POD_AFFINITY, "node2")]
HARD_NODES = _nodes(RG_CHINA, RG_INDIA, AZ1)

SYMMETRIC_WEIGHT: list[tuple[str, Any, int, Any]] = [
    ("with default weight", _p(SERVICE_S1), 1, [MAX, MAX, 0]),
    ("with zero weight", _p(SERVICE_S1), 0, SKIP),
    ("with no matching namespace", _p(SERVICE_S1, ns="subteam1.team2"), 1, SKIP),
    ("with matching NamespaceSelector", _p(SERVICE_S1, ns="subteam1.team1"), 1, [MAX, MAX, 0]),
    ("with matching Namespaces", _p(SERVICE_S1, ns="subteam2.team2"), 1, [MAX, MAX, 0]),
]


@pytest.mark.parametrize(("pod", "weight", "want"), [r[1:] for r in SYMMETRIC_WEIGHT],
                         ids=[r[0] for r in SYMMETRIC_WEIGHT])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    pod: Any, weight: int, want: Any
) -> None:
    pl = plugin(TEAM_NAMESPACES, hardPodAffinityWeight=weight)
    st, scores = run_score(pl, pod, snapshot(HARD_PODS, HARD_NODES))
    _check(st, scores, HARD_NODES, want)
