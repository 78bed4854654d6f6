"""PodTopologySpread's Filter, ported from kube-scheduler 1.36's `filtering_test.go`
(TestSingleConstraint, TestMultipleConstraints): one row per kube row, ids equal to the kube
row names. Each node's code is compared: Success, Unschedulable (the skew; preemption may help)
or UnschedulableAndUnresolvable (the node lacks a topology key), with kube's reason strings.

Kube runs these tables with the NodeInclusionPolicyInPodTopologySpread gate off unless a row
turns it on; 1.36 locks it on. Rows with the gate off set no inclusion policy, so both mean the
same: all rows are ported. As in kube's table, only this plugin's Filter runs (nodes the pod's
node affinity or taints exclude still pass here; NodeAffinity / TaintToleration reject them).

Also from filtering_test.go:
- TestPreFilterDisabled: kube's Filter fails with an error when PreFilter did not run. Phalanx's
  Filter computes the state from the snapshot instead (a deliberate difference: preemption's and
  the gang planner's what-ifs call Filter without PreFilter); `test_pre_filter_disabled` checks
  that this gives the same verdict as with PreFilter.
- TestPodTopoSignatures: kube's SignPod (opportunistic batching of equal pods) has no
  counterpart; phalanx's equivalent is NODE_LOCAL, which this plugin never sets, so no pod's
  Filter result is reused for another pod (`test_pod_topo_signatures`).
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.plugins.podtopologyspread import (
    REASON_LABEL,
    REASON_SKEW,
    PodTopologySpread,
)

from .spread_builders import (
    BAR,
    FOO,
    HARD,
    HONOR,
    IGNORE,
    TAINTS,
    Row,
    ids,
    make_node,
    make_plugin,
    make_pod,
    rows_of,
    snapshot,
)

OK, UNSCHEDULABLE = Code.SUCCESS, Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def filter_codes(row: Row) -> dict[str, Code]:
    """PreFilter, then Filter over every node: each node's code, checked against its reason."""
    snap = snapshot(row.nodes, row.existing or ())
    plugin = make_plugin()
    info = PodInfo(row.pod.obj())
    state = CycleState()
    _, status = plugin.pre_filter(state, info, snap)
    assert status.is_success, status
    idx = rows_of(snap, row.nodes)
    result = plugin.filter(state, info, snap, idx)
    codes: dict[str, Code] = {}
    for i, r in enumerate(idx.tolist()):
        reasons = [rej for rej in result.rejections if rej.mask[i]]
        if result.feasible[i]:
            assert not reasons
            codes[snap.names[r]] = OK
            continue
        (rej,) = reasons  # one reason per node: the first constraint it fails
        assert rej.reason == (REASON_LABEL if rej.unresolvable else REASON_SKEW)
        codes[snap.names[r]] = UNRESOLVABLE if rej.unresolvable else UNSCHEDULABLE
    return codes

SINGLE_CONSTRAINT = [
    Row(
        "no existing pods",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    Row(
        "no existing pods, incoming pod doesn't match itself",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, BAR),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    Row(
        "existing pods in a different namespace do not count",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").namespace("ns1").node("node-a").label("foo", ""),
            make_pod("p-b1").namespace("ns2").node("node-a").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": UNSCHEDULABLE, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "existing pods do not match null selector",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    Row(
        "pods spread across zones as 3/3, all nodes fit",
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
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    Row(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zon", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": OK, "node-b": UNRESOLVABLE, "node-x": UNSCHEDULABLE, "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        pod=make_pod("p").label("foo", "").spread(1, "rack", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        codes={"node-a": UNRESOLVABLE, "node-x": UNRESOLVABLE},
    ),
    Row(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
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
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod=make_pod("p").label("foo", "").spread(2, "node", HARD, FOO),
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
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": OK, "node-x": OK, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod=make_pod("p").label("bar", "").spread(1, "node", HARD, FOO),
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
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": OK, "node-x": OK, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod=(
            make_pod("p").label("foo", "")
            .node_affinity_in("node", ["node-a", "node-y"], "matchExpressions")
            .spread(1, "node", HARD, FOO)
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
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "terminating Pods should be excluded",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        nodes=[
            make_node("node-a").label("node", "node-a"),
            make_node("node-b").label("node", "node-b"),
        ],
        existing=[
            make_pod("p-a").node("node-a").label("foo", "").terminating(),
            make_pod("p-b").node("node-b").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": UNSCHEDULABLE},
    ),
    Row(
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod=(
            make_pod("p").label("foo", "").node_affinity_not_in("node", ["node-b"])
            .spread(1, "zone", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": UNSCHEDULABLE, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < "
        "minDomains, then the third node fits",
        pod=make_pod("p").label("foo", "").spread(2, "node", HARD, FOO, 4),
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
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-c": OK},
    ),
    Row(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > "
        "minDomains, then the all nodes fit",
        pod=make_pod("p").label("foo", "").spread(2, "node", HARD, FOO, 2),
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
        codes={"node-a": OK, "node-b": OK, "node-c": OK},
    ),
    Row(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the third and fourth nodes fit",
        pod=make_pod("p").label("foo", "").spread(2, "zone", HARD, FOO, 3),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK, "node-y": OK},
    ),
    Row(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
        "then the all nodes fit",
        pod=make_pod("p").label("foo", "").spread(2, "zone", HARD, FOO, 1),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    Row(
        "NodeAffinityPolicy honored with labelSelectors",
        pod=make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", HARD, FOO),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK, "node-y": OK},
    ),
    Row(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "node", HARD, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK, "node-y": OK},
    ),
    Row(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod=(
            make_pod("p").label("foo", "").node_affinity_in("foo", [""], "matchExpressions")
            .spread(1, "node", HARD, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "NodeTaintsPolicy honored",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO, None, None, HONOR),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y").taints(TAINTS),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK, "node-y": OK},
    ),
    Row(
        "NodeTaintsPolicy ignored",
        pod=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        nodes=[
            make_node("node-a").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("node", "node-y").taints(TAINTS),
        ],
        existing=[
            make_pod("p-b1").node("node-a").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
]

MULTIPLE_CONSTRAINTS = [
    Row(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
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
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
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
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": UNSCHEDULABLE,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-y1").node("node-y").label("bar", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-x1").node("node-x").label("bar", ""),
            make_pod("p-y1").node("node-y").label("bar", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": UNSCHEDULABLE,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": OK, "node-x": UNSCHEDULABLE,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' "
        "constraint",
        pod=(
            make_pod("p").label("bar", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, BAR)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-x1").node("node-x").label("bar", ""),
            make_pod("p-y1").node("node-y").label("bar", ""),
        ],
        codes={"node-a": OK, "node-b": OK, "node-x": UNSCHEDULABLE, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, "
        "1/0/0/1]",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": OK, "node-x": UNRESOLVABLE, "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO, None, None, HONOR)
            .spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b").label("foo", ""),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            make_node("node-y").label("zone", "zone2").label("node", "node-y").taints(TAINTS),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            (
                make_node("node-y").label("zone", "zone2").label("node", "node-y").label("foo", "")
                    .taints(TAINTS)
            ),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": OK, "node-x": OK, "node-y": UNSCHEDULABLE},
    ),
    Row(
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        pod=(
            make_pod("p").label("foo", "").node_selector({"foo": ""})
            .spread(1, "zone", HARD, FOO, None, None, HONOR)
            .spread(1, "node", HARD, FOO, None, IGNORE)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", ""),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x").label("foo", ""),
            (
                make_node("node-y").label("zone", "zone2").label("node", "node-y").label("foo", "")
                    .taints(TAINTS)
            ),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK,
            "node-y": UNSCHEDULABLE,
        },
    ),
    Row(
        "two Constraints on zone, spreads = [3/3, 2/1]",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, BAR)
            .spread(1, "zone", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
        ],
        codes={"node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": OK, "node-y": OK},
    ),
    Row(
        "two Constraints on zone, spreads = [3/4, 2/1]",
        pod=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, BAR)
            .spread(1, "zone", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("bar", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
            make_pod("p-y2").node("node-y").label("foo", "").label("bar", ""),
            make_pod("p-y3").node("node-y").label("foo", ""),
            make_pod("p-y4").node("node-y").label("foo", ""),
        ],
        codes={
            "node-a": UNSCHEDULABLE, "node-b": UNSCHEDULABLE, "node-x": UNSCHEDULABLE,
            "node-y": UNSCHEDULABLE,
        },
    ),
]


@pytest.mark.parametrize("row", SINGLE_CONSTRAINT, ids=ids(SINGLE_CONSTRAINT))
def test_single_constraint(row: Row) -> None:
    assert filter_codes(row) == row.codes


@pytest.mark.parametrize("row", MULTIPLE_CONSTRAINTS, ids=ids(MULTIPLE_CONSTRAINTS))
def test_multiple_constraints(row: Row) -> None:
    assert filter_codes(row) == row.codes


@pytest.mark.parametrize("row", SINGLE_CONSTRAINT + MULTIPLE_CONSTRAINTS,
                         ids=ids(SINGLE_CONSTRAINT + MULTIPLE_CONSTRAINTS))
def test_pre_filter_disabled(row: Row) -> None:
    """Without PreFilter (a what-if), Filter counts from the snapshot: the same verdicts."""
    snap = snapshot(row.nodes, row.existing or ())
    plugin = make_plugin()
    info = PodInfo(row.pod.obj())
    idx = rows_of(snap, row.nodes)
    with_pre = CycleState()
    plugin.pre_filter(with_pre, info, snap)
    want = plugin.filter(with_pre, info, snap, idx)
    got = plugin.filter(CycleState(), info, snap, idx)
    np.testing.assert_array_equal(got.feasible, want.feasible)
    assert [(r.reason, r.mask.tolist()) for r in got.rejections] == [
        (r.reason, r.mask.tolist()) for r in want.rejections
    ]


def test_pod_topo_signatures() -> None:
    """Pods with constraints (own or defaulted) must not share Filter results: not node-local."""
    assert PodTopologySpread.NODE_LOCAL is False
