"""PodTopologySpread's PreFilter state, ported from kube-scheduler 1.36's
`pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go` (TestPreFilterState): one
row per kube row, ids equal to the kube row names.

The state is compared as kube compares it: the constraints (max skew, key, selector, minDomains,
node inclusion policies), the matching pods per eligible domain, and the critical paths (the two
domains with the fewest matching pods; ties ordered by name, as kube's comparer does).

Kube runs this table with the NodeInclusionPolicyInPodTopologySpread and
MatchLabelKeysInPodTopologySpread gates off unless a row turns them on; 1.36 locks the first on
and enables the second by default, which is what phalanx-scheduler implements. Rows that mean
the same with the gates on are ported as they are. Not expressible:

- "matchLabelKeys ignored when feature gate disabled": it asserts the selector without the
  merge that MatchLabelKeysInPodTopologySpread (on by default in 1.36) performs; phalanx has no
  switch to turn the merge off.

The Services of the default-constraint rows are stand-ins for kube's listers
(spread_builders.stand_in_selectors), as kube's table uses a fake clientset.
"""

from __future__ import annotations

import pytest

from .spread_builders import (
    BAR,
    C,
    FOO,
    HARD,
    HONOR,
    IGNORE,
    NEW_PATHS,
    SOFT,
    TAINTS,
    UNSCHEDULABLE_TAINT,
    Row,
    Want,
    default,
    ids,
    make_node,
    make_plugin,
    make_pod,
    pre_filter_state,
    selector,
    service,
    snapshot,
)

SKIP_STATUS = "Skip"

PRE_FILTER_STATE = [
    Row(
        "clean cluster with one spreadConstraint",
        pod=make_pod("p").label("foo", "").spread(5, "zone", HARD, selector().label("foo", "bar")),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        want=Want(
            [C(5, "zone", selector().label("foo", "bar"))],
            paths=[(("zone1", 0), ("zone2", 0))],
            counts=[{"zone1": 0, "zone2": 0}],
        ),
    ),
    Row(
        "normal case with one spreadConstraint",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO)],
            paths=[(("zone2", 2), ("zone1", 3))],
            counts=[{"zone1": 3, "zone2": 2}],
        ),
    ),
    Row(
        "normal case with null label selector",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", None)],
            paths=[(("zone2", 0), ("zone1", 0))],
            counts=[{"zone1": 0, "zone2": 0}],
        ),
    ),
    Row(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
            make_node("node-o").label("zone", "zone3").label("node", "node-o"),
            make_node("node-p").label("zone", "zone3").label("node", "node-p"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO)],
            paths=[(("zone3", 0), ("zone2", 2))],
            counts=[{"zone1": 3, "zone2": 2, "zone3": 0}],
        ),
    ),
    Row(
        "namespace mismatch doesn't count",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").namespace("ns1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").namespace("ns2").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO)],
            paths=[(("zone2", 1), ("zone1", 2))],
            counts=[{"zone1": 2, "zone2": 1}],
        ),
    ),
    Row(
        "normal case with two spreadConstraints",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO)],
            paths=[(("zone1", 3), ("zone2", 4)), (("node-x", 0), ("node-b", 1))],
            counts=[{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        ),
    ),
    Row(
        "soft spreadConstraints should be bypassed",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", SOFT, FOO).spread(1, "zone", HARD, FOO)
            .spread(1, "node", SOFT, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO)],
            paths=[(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
            counts=[{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        ),
    ),
    Row(
        "different labelSelectors - simple version",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("foo", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", BAR)],
            paths=[(("zone2", 0), ("zone1", 1)), (("node-a", 0), ("node-y", 0))],
            counts=[{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
        ),
    ),
    Row(
        "different labelSelectors - complex pods",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", "").label("bar", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", BAR)],
            paths=[(("zone1", 3), ("zone2", 4)), (("node-b", 0), ("node-a", 1))],
            counts=[{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        ),
    ),
    Row(
        "two spreadConstraints, and with podAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_not_in("node", ["node-x"])
            .spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO)],
            paths=[(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
            counts=[{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        ),
    ),
    Row(
        "default constraints and a service",
        pod=make_pod("p").label("foo", "bar").label("baz", "kar"),
        defaults=[default(3, "node", HARD), default(2, "node", SOFT), default(5, "rack", HARD)],
        objs=[service({"foo": "bar"})],
        want=Want(
            [
                C(3, "node", selector().label("foo", "bar")),
                C(5, "rack", selector().label("foo", "bar")),
            ],
            paths=[NEW_PATHS, NEW_PATHS],
            counts=[{}, {}],
        ),
    ),
    Row(
        "default constraints and a service that doesn't match",
        pod=make_pod("p").label("foo", "bar"),
        defaults=[default(3, "node", HARD)],
        objs=[service({"baz": "kep"})],
        status=SKIP_STATUS,
    ),
    Row(
        "default constraints and a service, but pod has constraints",
        pod=(
            make_pod("p").label("foo", "bar").label("baz", "tar").spread(1, "zone", HARD, selector()
            .label("baz", "tar")).spread(2, "planet", SOFT, selector().label("fot", "rok"))
        ),
        defaults=[default(2, "node", HARD)],
        objs=[service({"foo": "bar"})],
        want=Want([C(1, "zone", selector().label("baz", "tar"))], paths=[NEW_PATHS], counts=[{}]),
    ),
    Row(
        "default soft constraints and a service",
        pod=make_pod("p").label("foo", "bar"),
        defaults=[default(2, "node", SOFT)],
        objs=[service({"foo": "bar"})],
        status=SKIP_STATUS,
    ),
    Row(
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO)],
            paths=[(("zone1", 3), ("zone2", 4)), (("node-x", 0), ("node-b", 1))],
            counts=[{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        ),
    ),
    Row(
        "feature gate disabled with NodeAffinityPolicy",
        pod=make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", HARD, BAR),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c").label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR)],
            paths=[(("node-a", 1), ("node-b", 2))],
            counts=[{"node-a": 1, "node-b": 2}],
        ),
    ),
    Row(
        "NodeAffinityPolicy honored with labelSelectors",
        pod=make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", HARD, BAR),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c").label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR)],
            paths=[(("node-a", 1), ("node-b", 2))],
            counts=[{"node-a": 1, "node-b": 2}],
        ),
    ),
    Row(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "node", HARD, BAR, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c").label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR, affinity=IGNORE)],
            paths=[(("node-c", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 2, "node-c": 0}],
        ),
    ),
    Row(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c").label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""),
            make_pod("p-d").node("node-b").label("bar", ""), make_pod("p-e").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR)],
            paths=[(("node-a", 1), ("node-b", 2))],
            counts=[{"node-a": 1, "node-b": 2}],
        ),
    ),
    Row(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", HARD, BAR, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c").label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR, affinity=IGNORE)],
            paths=[(("node-c", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 2, "node-c": 0}],
        ),
    ),
    Row(
        "feature gate disabled with NodeTaintsPolicy",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, BAR),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS).label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR)],
            paths=[(("node-c", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 2, "node-c": 0}],
        ),
    ),
    Row(
        "NodeTaintsPolicy ignored",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, BAR),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS).label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR)],
            paths=[(("node-c", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 2, "node-c": 0}],
        ),
    ),
    Row(
        "NodeTaintsPolicy honored",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, BAR, None, None, HONOR),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS).label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR, taints=HONOR)],
            paths=[(("node-a", 1), ("node-b", 2))],
            counts=[{"node-a": 1, "node-b": 2}],
        ),
    ),
    Row(
        "NodeTaintsPolicy honored with tolerated taints",
        pod=(
            make_pod("p").label("foo", "").toleration(UNSCHEDULABLE_TAINT)
            .spread(1, "node", HARD, BAR, None, None, HONOR)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS).label("bar", ""),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("bar", ""),
            make_pod("p-b").node("node-b").label("bar", ""),
            make_pod("p-c").node("node-b").label("bar", ""), make_pod("p-d").node("node-c"),
        ],
        want=Want(
            [C(1, "node", BAR, taints=HONOR)],
            paths=[(("node-c", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 2, "node-c": 0}],
        ),
    ),
    Row(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
        ],
        existing=[
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO, affinity=IGNORE)],
            paths=[(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-x", 1))],
            counts=[{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        ),
    ),
    Row(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO, None, None, HONOR)
            .spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b").taints(TAINTS),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
        ],
        existing=[
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO, taints=HONOR), C(1, "node", FOO)],
            paths=[(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-x", 1))],
            counts=[{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        ),
    ),
    Row(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            (
                make_node("node-b").label("zone", "zone1").label("node", "node-b").label("foo", "")
                    .taints(TAINTS)
            ),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "node", FOO)],
            paths=[(("zone1", 0), ("zone2", 1)), (("node-b", 0), ("node-x", 1))],
            counts=[{"zone1": 0, "zone2": 1}, {"node-b": 0, "node-x": 1}],
        ),
    ),
    Row(
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "zone", HARD, FOO, None, IGNORE)
            .spread(1, "node", HARD, FOO, None, None, HONOR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            (
                make_node("node-b").label("zone", "zone1").label("node", "node-b").label("foo", "")
                    .taints(TAINTS)
            ),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("zone", "zone2").label("node", "node-y").label("foo", ""),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-x2").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        want=Want(
            [C(1, "zone", FOO, affinity=IGNORE), C(1, "node", FOO, taints=HONOR)],
            paths=[(("zone1", 2), ("zone2", 3)), (("node-y", 1), ("node-x", 2))],
            counts=[{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        ),
    ),
    Row(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=(
            make_pod("p").label("foo", "").label("bar", "a")
            .spread(1, "zone", HARD, FOO, None, None, None, ["bar"])
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", "").label("bar", "a"),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", "").label("bar", "a"),
            make_pod("p-y2").node("node-y").label("bar", ""),
        ],
        want=Want(
            [C(1, "zone", selector().exists("foo").label("bar", "a"))],
            paths=[(("zone2", 1), ("zone1", 1))],
            counts=[{"zone1": 1, "zone2": 1}],
        ),
    ),
    Row(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=(
            make_pod("p").label("foo", "a")
            .spread(1, "zone", HARD, selector(), None, None, None, ["foo"])
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "a"),
            make_pod("p-a2").node("node-a").label("foo", "a"),
            make_pod("p-b1").node("node-b").label("foo", "a"),
            make_pod("p-y1").node("node-y").label("foo", "a"),
            make_pod("p-y2").node("node-y").label("foo", "a"),
        ],
        want=Want(
            [C(1, "zone", selector().label("foo", "a"))],
            paths=[(("zone2", 2), ("zone1", 3))],
            counts=[{"zone1": 3, "zone2": 2}],
        ),
    ),
    Row(
        "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, None, None, None, None, ["bar"]),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "a"),
            make_pod("p-a2").node("node-a").label("foo", "a"),
            make_pod("p-b1").node("node-b").label("foo", "a"),
            make_pod("p-y1").node("node-y").label("foo", "a"),
            make_pod("p-y2").node("node-y").label("foo", "a"),
        ],
        want=Want(
            [C(1, "zone", None)],
            paths=[(("zone2", 0), ("zone1", 0))],
            counts=[{"zone1": 0, "zone2": 0}],
        ),
    ),
    Row(
        "no pod is matched when LabelSelector is nil when feature gate disabled",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, None, None, None, None, ["bar"]),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "a"),
            make_pod("p-a2").node("node-a").label("foo", "a"),
            make_pod("p-b1").node("node-b").label("foo", "a"),
            make_pod("p-y1").node("node-y").label("foo", "a"),
            make_pod("p-y2").node("node-y").label("foo", "a"),
        ],
        want=Want(
            [C(1, "zone", None)],
            paths=[(("zone2", 0), ("zone1", 0))],
            counts=[{"zone1": 0, "zone2": 0}],
        ),
    ),
    Row(
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO, None, None, None, ["bar"]),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "a"),
            make_pod("p-a2").node("node-a").label("foo", "a"),
            make_pod("p-b1").node("node-b").label("foo", "a"),
            make_pod("p-y1").node("node-y").label("foo", "a"),
            make_pod("p-y2").node("node-y").label("foo", "a"),
        ],
        want=Want(
            [C(1, "zone", FOO)],
            paths=[(("zone2", 2), ("zone1", 3))],
            counts=[{"zone1": 3, "zone2": 2}],
        ),
    ),
    Row(
        "two spreadConstraints with the same topologyKey",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "zone", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y2").node("node-y").label("bar", ""),
        ],
        want=Want(
            [C(1, "zone", FOO), C(1, "zone", BAR)],
            paths=[(("zone2", 1), ("zone1", 2)), (("zone1", 1), ("zone2", 3))],
            counts=[{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
        ),
    ),
    Row(
        "skip if not specified",
        pod=make_pod("p").label("foo", ""),
        nodes=[make_node("node-a").label("zone", "zone1").label("node", "node-a")],
        status=SKIP_STATUS,
    ),
]


@pytest.mark.parametrize("row", PRE_FILTER_STATE, ids=ids(PRE_FILTER_STATE))
def test_pre_filter_state(row: Row) -> None:
    args = {"defaultingType": "List", "defaultConstraints": row.defaults or []}
    plugin = make_plugin(args, row.objs or ())
    snap = snapshot(row.nodes or (), row.existing or ())
    status, state = pre_filter_state(plugin, row.pod, snap)
    if row.status == SKIP_STATUS:
        assert status.is_skip, status
        return
    assert status.is_success, status
    row.want.check(state, snap)
