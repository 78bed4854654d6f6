"""PodTopologySpread's PreScore, Score and NormalizeScore, ported from kube-scheduler 1.36's
`pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go` (TestPreScoreSkip,
TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore): one row per kube row, ids equal to
the kube row names.

Kube's score table runs with `defaultingType: System`; its scored nodes are `nodes`, and
`failed` nodes are in the snapshot (their pods count) but not scored. The ReplicaSets and
Services of the default-constraint rows are stand-ins for kube's listers
(spread_builders.stand_in_selectors): the embedded cluster serves no ReplicaSet, so there only
Services select pods for default constraints (spread_defaults.py).

Kube runs TestPodTopologySpreadScore with the MatchLabelKeysInPodTopologySpread gate off unless
a row turns it on; 1.36 enables it by default. Not expressible:

- TestPodTopologySpreadScore "matchLabelKeys ignored when feature gate disabled": it asserts
  scores without the matchLabelKeys merge, which phalanx (as 1.36 by default) always performs.
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.scheduler.framework import CycleState, PodInfo

from .spread_builders import (
    BAR,
    C,
    FOO,
    HARD,
    HONOR,
    HOSTNAME,
    IGNORE,
    SOFT,
    TAINTS,
    ZONE,
    Row,
    ScoreWant,
    default,
    ids,
    make_node,
    make_plugin,
    make_pod,
    pre_score_state,
    replicaset,
    rows_of,
    selector,
    service,
    snapshot,
)

PRE_SCORE_SKIP = [
    Row(
        "the pod doesn't have soft topology spread Constraints",
        pod=make_pod("p").namespace("default"),
        config={"defaultingType": "List"},
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
        ],
    ),
    Row(
        "default constraints and a replicaset that doesn't match",
        pod=(
            make_pod("p").namespace("default").label("foo", "bar").label("baz", "sup")
            .owner("rs2", ("apps/v1", "ReplicaSet"))
        ),
        config={"defaultingType": "List", "defaultConstraints": [default(2, "planet", SOFT)]},
        nodes=[make_node("node-a").label("planet", "mars")],
        objs=[replicaset("rs1", selector().exists("tar"))],
    ),
]

PRE_SCORE_STATE_EMPTY_NODES = [
    Row(
        "normal case",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", FOO), C(1, HOSTNAME, FOO)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}, {}],
            weights=[2, 3],
        ),
    ),
    Row(
        "null selector",
        pod=make_pod("p").label("foo", "").spread(1, "zone", SOFT),
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", None)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "node-x doesn't have label zone",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", FOO), C(1, HOSTNAME, BAR)],
            ignored={"node-x"},
            counts=[{"zone1": 0}, {}],
            weights=[1, 2],
        ),
    ),
    Row(
        "system default constraints and a replicaset",
        pod=(
            make_pod("p").namespace("default").label("foo", "tar").label("baz", "sup")
            .owner("rs1", ("apps/v1", "ReplicaSet"))
        ),
        config={"defaultingType": "System"},
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a").label(ZONE, "mars"),
            make_node("node-b").label(HOSTNAME, "node-b").label(ZONE, "mars"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        objs=[replicaset("rs1", FOO)],
        want=ScoreWant(
            [C(3, HOSTNAME, FOO), C(5, ZONE, FOO)],
            ignored=set(),
            counts=[{}, {"mars": 0, "": 0}],
            weights=[4, 2],
        ),
    ),
    Row(
        "default constraints and a replicaset",
        pod=(
            make_pod("p").namespace("default").label("foo", "tar").label("baz", "sup")
            .owner("rs1", ("apps/v1", "ReplicaSet"))
        ),
        config={
            "defaultingType": "List",
            "defaultConstraints": [
                default(1, HOSTNAME, SOFT), default(2, "rack", HARD), default(2, "planet", SOFT),
            ],
        },
        nodes=[
            (
                make_node("node-a").label("rack", "rack1").label(HOSTNAME, "node-a")
                    .label("planet", "mars")
            ),
        ],
        objs=[replicaset("rs1", FOO)],
        want=ScoreWant(
            [C(1, HOSTNAME, FOO), C(2, "planet", FOO)],
            ignored=set(),
            counts=[{}, {"mars": 0}],
            weights=[1, 1],
        ),
    ),
    Row(
        "default constraints and a replicaset, but pod has constraints",
        pod=(
            make_pod("p").namespace("default").label("foo", "bar").label("baz", "sup")
            .owner("rs1", ("apps/v1", "ReplicaSet")).spread(1, "zone", HARD, BAR)
            .spread(2, "planet", SOFT, selector().label("baz", "sup"))
        ),
        config={"defaultingType": "List", "defaultConstraints": [default(2, "galaxy", SOFT)]},
        nodes=[make_node("node-a").label("planet", "mars").label("galaxy", "andromeda")],
        objs=[replicaset("rs1", FOO)],
        want=ScoreWant(
            [C(2, "planet", selector().label("baz", "sup"))],
            ignored=set(),
            counts=[{"mars": 0}],
            weights=[1],
        ),
    ),
    Row(
        "NodeAffinityPolicy honored with labelSelectors",
        pod=make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", SOFT, BAR),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "zone", SOFT, BAR, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR, affinity=IGNORE)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "zone", SOFT, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "zone", SOFT, BAR, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR, affinity=IGNORE)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "NodeTaintsPolicy honored",
        pod=make_pod("p").label("foo", "").spread(1, "zone", SOFT, BAR, None, None, HONOR),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x").taints(TAINTS),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR, taints=HONOR)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
    Row(
        "NodeTaintsPolicy ignored",
        pod=make_pod("p").label("foo", "").spread(1, "zone", SOFT, BAR),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label("foo", "").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x").taints(TAINTS),
        ],
        config={"defaultingType": "List"},
        want=ScoreWant(
            [C(1, "zone", BAR)],
            ignored=set(),
            counts=[{"zone1": 0, "zone2": 0}],
            weights=[2],
        ),
    ),
]

POD_TOPOLOGY_SPREAD_SCORE = [
    Row(
        "one constraint on node, no existing pods",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
        ],
        want={"node-a": 100, "node-b": 100},
    ),
    Row(
        "one constraint on node, only one node is candidate",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
        ],
        nodes=[make_node("node-a").label(HOSTNAME, "node-a")],
        failed=[make_node("node-b").label(HOSTNAME, "node-b")],
        want={"node-a": 100},
    ),
    Row(
        "one constraint on node, all nodes have the same number of matching pods",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
        ],
        want={"node-a": 100, "node-b": 100},
    ),
    Row(
        "one constraint on node, all 4 nodes are candidates",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-d1").node("node-d").label("foo", ""),
            make_pod("p-d2").node("node-d").label("foo", ""),
            make_pod("p-d3").node("node-d").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        failed=[],
        want={"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    Row(
        "one constraint on node, null selector",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-d1").node("node-d").label("foo", ""),
            make_pod("p-d2").node("node-d").label("foo", ""),
            make_pod("p-d3").node("node-d").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        want={"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    Row(
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod=make_pod("p").label("foo", "").spread(2, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-d1").node("node-d").label("foo", ""),
            make_pod("p-d2").node("node-d").label("foo", ""),
            make_pod("p-d3").node("node-d").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        failed=[],
        want={"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    Row(
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod=make_pod("p").label("foo", "").spread(3, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-a3").node("node-a").label("foo", ""),
            make_pod("p-a4").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-b3").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
            make_pod("p-c2").node("node-c").label("foo", ""),
            make_pod("p-d1").node("node-d").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        failed=[],
        want={"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    Row(
        "system defaulting, nodes don't have zone, pods match service",
        pod=make_pod("p").label("foo", ""),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-a3").node("node-a").label("foo", ""),
            make_pod("p-a4").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-b3").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
            make_pod("p-c2").node("node-c").label("foo", ""),
            make_pod("p-d1").node("node-d").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-c").label(HOSTNAME, "node-c"),
            make_node("node-d").label(HOSTNAME, "node-d"),
        ],
        failed=[],
        objs=[service({"foo": ""})],
        want={"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    Row(
        "one constraint on node, 3 out of 4 nodes are candidates",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-a3").node("node-a").label("foo", ""),
            make_pod("p-a4").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
            make_node("node-x").label(HOSTNAME, "node-x"),
        ],
        failed=[make_node("node-y").label(HOSTNAME, "node-y")],
        want={"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    Row(
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match "
        "topology key",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-a3").node("node-a").label("foo", ""),
            make_pod("p-a4").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label("n", "node-b"),
            make_node("node-x").label(HOSTNAME, "node-x"),
        ],
        failed=[make_node("node-y").label(HOSTNAME, "node-y")],
        want={"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    Row(
        "one constraint on zone, 3 out of 4 nodes are candidates",
        pod=make_pod("p").label("foo", "").spread(1, "zone", SOFT, FOO),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-a3").node("node-a").label("foo", ""),
            make_pod("p-a4").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        failed=[make_node("node-y").label("zone", "zone2").label(HOSTNAME, "node-y")],
        want={"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    Row(
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, FOO)
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-x2").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        failed=[
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-y").label("zone", "zone2").label(HOSTNAME, "node-y"),
        ],
        want={"node-a": 100, "node-x": 63},
    ),
    Row(
        "two Constraints on zone, 2 out of 4 nodes are candidates",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", SOFT, FOO)
            .spread(1, "zone", SOFT, BAR)
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1"), make_node("node-x").label("zone", "zone2"),
        ],
        failed=[
            make_node("node-b").label("zone", "zone1"), make_node("node-y").label("zone", "zone2"),
        ],
        want={"node-a": 85, "node-x": 100},
    ),
    Row(
        "two Constraints on zone and node, with different labelSelectors",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, BAR)
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("bar", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
            make_node("node-y").label("zone", "zone2").label(HOSTNAME, "node-y"),
        ],
        failed=[],
        want={"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    Row(
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, BAR)
        ),
        existing=[
            make_pod("p-b1").node("node-b").label("bar", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", "").label("bar", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
            make_node("node-y").label("zone", "zone2").label(HOSTNAME, "node-y"),
        ],
        failed=[],
        want={"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    Row(
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are "
        "candidates",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", SOFT, FOO)
            .spread(1, HOSTNAME, SOFT, BAR)
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("bar", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-x").label("zone", "zone2").label(HOSTNAME, "node-x"),
        ],
        failed=[make_node("node-y").label("zone", "zone2").label(HOSTNAME, "node-y")],
        want={"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    Row(
        "existing pods in a different namespace do not count",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        existing=[
            make_pod("p-a1").namespace("ns1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
        ],
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
        ],
        want={"node-a": 100, "node-b": 33},
    ),
    Row(
        "terminating Pods should be excluded",
        pod=make_pod("p").label("foo", "").spread(1, HOSTNAME, SOFT, FOO),
        nodes=[
            make_node("node-a").label(HOSTNAME, "node-a"),
            make_node("node-b").label(HOSTNAME, "node-b"),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("foo", "").terminating(),
            make_pod("p-b").node("node-b").label("foo", ""),
        ],
        want={"node-a": 100, "node-b": 0},
    ),
    Row(
        "minDomains has no effect when ScheduleAnyway",
        pod=make_pod("p").label("foo", "").spread(2, "node", SOFT, FOO, 10),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 75, "node-b": 75, "node-c": 100},
    ),
    Row(
        "NodeAffinityPolicy honoed with labelSelectors",
        pod=make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", SOFT, FOO),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    Row(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "node", SOFT, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    Row(
        "NodeAffinityPolicy honoed with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", SOFT, FOO)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    Row(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", SOFT, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-c").label("node", "node-c"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    Row(
        "NodeTaintsPolicy honored",
        pod=make_pod("p").label("foo", "").spread(1, "node", SOFT, FOO, None, None, HONOR),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    Row(
        "NodeTaintsPolicy ignored",
        pod=make_pod("p").label("foo", "").spread(1, "node", SOFT, FOO),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
            make_node("node-c").label("node", "node-c").taints(TAINTS),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
        ],
        want={"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    Row(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=(
            make_pod("p").label("foo", "").label("bar", "")
            .spread(1, "zone", SOFT, selector(), None, None, None, ["foo"])
            .spread(1, HOSTNAME, SOFT, selector(), None, None, None, ["bar"])
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-c").label("foo", ""),
            make_pod("p-y2").node("node-c").label("bar", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-c").label("zone", "zone2").label(HOSTNAME, "node-c"),
            make_node("node-d").label("zone", "zone2").label(HOSTNAME, "node-d"),
        ],
        want={"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    Row(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").label("baz", "")
            .spread(1, "zone", SOFT, FOO).spread(1, HOSTNAME, SOFT, BAR, None, None, None, ["baz"])
        ),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", "").label("baz", ""),
            make_pod("p-c1").node("node-c").label("foo", ""),
            make_pod("p-c2").node("node-c").label("bar", ""),
            make_pod("p-d3").node("node-c").label("bar", "").label("baz", ""),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label(HOSTNAME, "node-a"),
            make_node("node-b").label("zone", "zone1").label(HOSTNAME, "node-b"),
            make_node("node-c").label("zone", "zone2").label(HOSTNAME, "node-c"),
            make_node("node-d").label("zone", "zone2").label(HOSTNAME, "node-d"),
        ],
        want={"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


@pytest.mark.parametrize("row", PRE_SCORE_SKIP, ids=ids(PRE_SCORE_SKIP))
def test_pre_score_skip(row: Row) -> None:
    snap = snapshot(row.nodes)
    status, _ = pre_score_state(make_plugin(row.config, row.objs or ()), row.pod, snap,
                                snap.valid_rows())
    assert status.is_skip, status


@pytest.mark.parametrize("row", PRE_SCORE_STATE_EMPTY_NODES, ids=ids(PRE_SCORE_STATE_EMPTY_NODES))
def test_pre_score_state_empty_nodes(row: Row) -> None:
    snap = snapshot(row.nodes)
    plugin = make_plugin(row.config, row.objs or ())
    status, state = pre_score_state(plugin, row.pod, snap, rows_of(snap, row.nodes))
    assert status.is_success, status
    row.want.check(state, snap)


@pytest.mark.parametrize("row", POD_TOPOLOGY_SPREAD_SCORE, ids=ids(POD_TOPOLOGY_SPREAD_SCORE))
def test_pod_topology_spread_score(row: Row) -> None:
    snap = snapshot([*row.nodes, *(row.failed or [])], row.existing or ())
    plugin = make_plugin({"defaultingType": "System"}, row.objs or ())
    info = PodInfo(row.pod.obj())
    state = CycleState()
    idx = rows_of(snap, row.nodes)
    status = plugin.pre_score(state, info, snap, idx)
    assert status.is_success, status
    scores = plugin.normalize_score(state, info, plugin.score(state, info, snap, idx))
    got = {snap.names[r]: int(s) for r, s in zip(idx.tolist(), scores.tolist(), strict=True)}
    assert got == row.want
    assert np.all(scores == np.floor(scores))  # integers, as kube's int64 scores
