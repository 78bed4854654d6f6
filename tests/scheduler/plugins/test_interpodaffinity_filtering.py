"""kube-scheduler 1.36's interpodaffinity/filtering_test.go TestRequiredAffinitySingleNode,
row by row (ids = kube's names): PreFilter, then Filter on the one node; the status (fits, or
code + the one reason) must equal kube's. The other tables of filtering_test.go are in
test_interpodaffinity_filtering_nodes.py and test_interpodaffinity_filtering_state.py.

Deliberate difference: the two "fails PreFilter with an invalid ... label syntax" rows get
the same code (UnschedulableAndUnresolvable) and "parsing pod: " prefix; the rest of our
message names the field path and the bad value in our own words, not kube's Go error text.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework.status import Code

from .interpodaffinity_kit import AFFINITY_NOT_MATCH as AFF
from .interpodaffinity_kit import ANTI_NOT_MATCH as ANTI
from .interpodaffinity_kit import EXISTING_ANTI_NOT_MATCH as EXISTING
from .interpodaffinity_kit import (
    TEAM_NAMESPACES,
    MakePod,
    expr,
    make_node,
    plugin,
    run_filter,
    sel_in,
    snapshot,
    term,
)


SKIP = "skip"
POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = make_node("node1", {"region": "r1", "zone": "z11"})
SECURITY_SCAN = ["securityscan", "value2"]
TEAM1 = {"matchExpressions": [expr("team", "In", ["team1"])]}


def _scan_pod() -> Any:
    return MakePod().labels(POD_LABEL).node("node1").obj()


def _with_terms(namespace: str, labels: dict[str, str], aff: list, anti: list | None) -> Any:
    """kube's createPodWithAffinityTerms."""
    return MakePod().namespace(namespace).labels(labels).affinity(
        {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": aff},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti},
        }
    ).obj()


def _bad_value(first: str, second: str) -> Any:
    return (
        MakePod().labels(POD_LABEL)
        .pod_affinity_in("service", "region", [first])
        .pod_affinity_in("service", "node", [second])
        .obj()
    )


BAD = "{{.bad-value.}}"

SINGLE_NODE: list[tuple[str, Any, list, Any]] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node "
        "with no existing pods",
        MakePod().obj(), [], SKIP,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
        "operator that matches the existing pod",
        MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", SECURITY_SCAN).obj(),
        [_scan_pod()], None,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
        "using not in operator in labelSelector that matches the existing pod",
        MakePod().labels(POD_LABEL2)
        .pod_affinity_not_in("service", "region", ["securityscan3", "value3"]).obj(),
        [_scan_pod()], None,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        _with_terms("", POD_LABEL2, [{
            "labelSelector": sel_in("service", SECURITY_SCAN), "namespaces": ["DiffNameSpace"],
        }], None),
        [MakePod().namespace("ns").label("service", "securityscan").node("node1").obj()], AFF,
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing "
        "pod",
        MakePod().labels(POD_LABEL).pod_affinity_in("service", "", ["antivirusscan", "value2"])
        .obj(),
        [_scan_pod()], AFF,
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution ",
        _with_terms("", POD_LABEL2, [
            term("region", {"matchExpressions": [
                expr("service", "Exists"), expr("wrongkey", "DoesNotExist")]}),
            term("region", {"matchExpressions": [
                expr("service", "In", ["securityscan"]),
                expr("service", "NotIn", ["WrongValue"])]}),
        ], None),
        [_scan_pod()], None,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot "
        "schedule onto the node because one of the matchExpression item don't match.",
        _with_terms("", POD_LABEL2, [
            term("region", {"matchExpressions": [
                expr("service", "Exists"), expr("wrongkey", "DoesNotExist")]}),
            term("region", {"matchExpressions": [
                expr("service", "In", ["securityscan2"]),
                expr("service", "NotIn", ["WrongValue"])]}),
        ], None),
        [_scan_pod()], AFF,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", SECURITY_SCAN)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"]).obj(),
        [_scan_pod()], None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the "
        "existing pod",
        MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", SECURITY_SCAN)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"]).obj(),
        [MakePod().node("node1").labels(POD_LABEL)
         .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"]).obj()],
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        MakePod().labels(POD_LABEL2).pod_affinity_in("service", "region", SECURITY_SCAN)
        .pod_anti_affinity_in("service", "zone", SECURITY_SCAN).obj(),
        [_scan_pod()], ANTI,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
        "symmetry with the existing pod",
        MakePod().labels(POD_LABEL).pod_affinity_in("service", "region", SECURITY_SCAN)
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"]).obj(),
        [MakePod().labels(POD_LABEL).node("node1")
         .pod_anti_affinity_in("service", "zone", SECURITY_SCAN).obj()],
        EXISTING,
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        MakePod().labels(POD_LABEL).pod_affinity_not_in("service", "region", SECURITY_SCAN).obj(),
        [MakePod().label("service", "securityscan").node("node2").obj()], AFF,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().labels(POD_LABEL).obj(),
        [MakePod().node("node1").labels(POD_LABEL)
         .pod_anti_affinity_in("service", "zone", SECURITY_SCAN).obj()],
        EXISTING,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().labels(POD_LABEL).obj(),
        [MakePod().node("node1").labels(POD_LABEL)
         .pod_anti_affinity_not_in("service", "zone", SECURITY_SCAN).obj()],
        SKIP,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity "
        "symmetry with incoming pod",
        MakePod().labels(POD_LABEL).pod_anti_affinity_exists("service", "region")
        .pod_anti_affinity_exists("security", "region").obj(),
        [MakePod().node("node1").labels(POD_LABEL2)
         .pod_anti_affinity_exists("security", "zone").obj()],
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod().labels(POD_LABEL).pod_anti_affinity_exists("service", "zone")
        .pod_anti_affinity_exists("security", "zone").obj(),
        [MakePod().node("node1").labels(POD_LABEL2)
         .pod_anti_affinity_exists("security", "zone").obj()],
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod().labels(POD_LABEL2).pod_anti_affinity_exists("security", "zone").obj(),
        [MakePod().node("node1").labels(POD_LABEL)
         .pod_anti_affinity_exists("service", "zone")
         .pod_anti_affinity_exists("security", "zone").obj()],
        EXISTING,
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod().labels({"abc": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone").obj(),
        [MakePod().node("node1").labels({"def": "", "xyz": ""})
         .pod_anti_affinity_exists("abc", "zone").pod_anti_affinity_exists("def", "zone").obj()],
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        MakePod().labels({"def": "", "xyz": ""}).pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone").obj(),
        [MakePod().node("node1").labels({"abc": "", "xyz": ""})
         .pod_anti_affinity_exists("abc", "zone").pod_anti_affinity_exists("def", "zone").obj()],
        ANTI,
    ),
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        _bad_value(BAD, "antivirusscan"), [], ("parsing", "requiredDuringScheduling"
                                               "IgnoredDuringExecution[0]"),
    ),
    (
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        _bad_value("foo", BAD), [],
        ("parsing", "requiredDuringSchedulingIgnoredDuringExecution[1]"),
    ),
    (
        "affinity with NamespaceSelector",
        _with_terms("", POD_LABEL2, [term("region", sel_in("service", SECURITY_SCAN),
                                          namespace_selector=TEAM1)], None),
        [MakePod().namespace("subteam1.team1").labels(POD_LABEL).node("node1").obj()], None,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        _with_terms("", POD_LABEL2, [term("region", sel_in("service", SECURITY_SCAN),
                                          namespace_selector=TEAM1)], None),
        [MakePod().namespace("subteam1.team2").labels(POD_LABEL).node("node1").obj()], AFF,
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        _with_terms("subteam1.team1", POD_LABEL2, [], [
            term("zone", sel_in("service", SECURITY_SCAN), namespace_selector=TEAM1)]),
        [MakePod().namespace("subteam2.team1").labels(POD_LABEL).node("node1").obj()], ANTI,
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        _with_terms("subteam1.team1", POD_LABEL2, [], [
            term("zone", sel_in("service", SECURITY_SCAN), namespace_selector={})]),
        [MakePod().namespace("subteam2.team1").labels(POD_LABEL).node("node1").obj()], ANTI,
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        _with_terms("subteam1.team1", POD_LABEL2, [], [
            term("zone", sel_in("service", SECURITY_SCAN), namespace_selector=TEAM1)]),
        [MakePod().namespace("subteam1.team2").labels(POD_LABEL).node("node1").obj()], None,
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want"), [r[1:] for r in SINGLE_NODE],
                         ids=[r[0] for r in SINGLE_NODE])
def test_required_affinity_single_node(pod: Any, pods: list, want: Any) -> None:
    st, per_node = run_filter(plugin(TEAM_NAMESPACES), pod, snapshot(pods, [NODE1]))
    if want == SKIP:
        assert st.is_skip
    elif isinstance(want, tuple) and want[0] == "parsing":
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        msg = st.reasons[0]
        assert msg.startswith("parsing pod: spec.affinity.podAffinity.") and want[1] in msg
        assert BAD in msg
    else:
        assert st.is_success
        assert per_node == {"node1": want}
