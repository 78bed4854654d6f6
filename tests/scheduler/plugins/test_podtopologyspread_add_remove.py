"""PodTopologySpread's PreFilter state after a pod is added or removed, ported from
kube-scheduler 1.36's `filtering_test.go` (TestPreFilterStateAddPod,
TestPreFilterStateRemovePod): one row per kube row, ids equal to the kube row names.

Kube updates the PreFilter state in place (PreFilterExtensions AddPod / RemovePod) for
preemption's what-ifs. Phalanx has no such extension: preemption removes the victims from the
snapshot and the plugin's Filter recounts from it (podtopologyspread.py). So each row is
expressed as that: the pod is added to (or removed from) the snapshot on the row's node, then
the state is computed, and it must equal what kube's incremental update yields. The critical
paths compared are the two emptiest domains (kube's update keeps the minimum exact, which is
all Filter reads).

Kube runs these tables with the NodeInclusionPolicyInPodTopologySpread gate off unless a row
turns it on; 1.36 locks it on. The rows' pods set no inclusion policy, so on and off mean the
same for every row. Not expressible (TestPreFilterStateRemovePod):

- "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled"
  and "... enabled": they remove p-b1 from node-b, where the table's snapshot never placed it,
  and expect zone2's count to drop from 1 (p-b2, still there) to 0. That is kube's in-place
  arithmetic on an input no real preemption produces (it removes only pods that run on the
  node); a count recomputed from a snapshot that holds p-b2 is 1.
"""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import PodInfo

from .spread_builders import (
    BAR,
    C,
    FOO,
    HARD,
    MAX_INT32,
    NODE_C,
    TAINTS,
    UNSCHEDULABLE_TAINT,
    ZONE_C,
    Row,
    Want,
    ids,
    make_node,
    make_plugin,
    make_pod,
    pre_filter_state,
    snapshot,
)

PRE_FILTER_STATE_ADD_POD = [
    Row(
        "node a and b both impact current min match",
        preemptor=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=None,
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
        ],
        want=Want(
            [NODE_C],
            paths=[(("node-b", 0), ("node-a", 1))],
            counts=[{"node-a": 1, "node-b": 0}],
        ),
    ),
    Row(
        "only node a impacts current min match",
        preemptor=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=[make_pod("p-b1").node("node-b").label("foo", "")],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
        ],
        want=Want(
            [NODE_C],
            paths=[(("node-a", 1), ("node-b", 1))],
            counts=[{"node-a": 1, "node-b": 1}],
        ),
    ),
    Row(
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        preemptor=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        added_pod=make_pod("p-a1").namespace("ns1").node("node-a").label("foo", ""),
        existing=[make_pod("p-b1").node("node-b").label("foo", "")],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
        ],
        want=Want(
            [NODE_C],
            paths=[(("node-a", 0), ("node-b", 1))],
            counts=[{"node-a": 0, "node-b": 1}],
        ),
    ),
    Row(
        "add pod on non-critical node won't trigger re-calculation",
        preemptor=make_pod("p").label("foo", "").spread(1, "node", HARD, FOO),
        added_pod=make_pod("p-b2").node("node-b").label("foo", ""),
        existing=[make_pod("p-b1").node("node-b").label("foo", "")],
        node_idx=1,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
        ],
        want=Want(
            [NODE_C],
            paths=[(("node-a", 0), ("node-b", 2))],
            counts=[{"node-a": 0, "node-b": 2}],
        ),
    ),
    Row(
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        preemptor=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=None,
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        want=Want(
            [ZONE_C, NODE_C],
            paths=[(("zone2", 0), ("zone1", 1)), (("node-x", 0), ("node-a", 1))],
            counts=[{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
        ),
    ),
    Row(
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        preemptor=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=[make_pod("p-x1").node("node-x").label("foo", "")],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        want=Want(
            [ZONE_C, NODE_C],
            paths=[(("zone1", 1), ("zone2", 1)), (("node-a", 1), ("node-x", 1))],
            counts=[{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
        ),
    ),
    Row(
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap "
        "on zone",
        preemptor=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=[
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-b2").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
        ],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        want=Want(
            [ZONE_C, NODE_C],
            paths=[(("zone2", 1), ("zone1", 3)), (("node-a", 1), ("node-x", 1))],
            counts=[{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
        ),
    ),
    Row(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        preemptor=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        added_pod=make_pod("p-a1").node("node-a").label("foo", ""),
        existing=[
            make_pod("p-b1").node("node-b").label("foo", "").label("bar", ""),
            make_pod("p-x1").node("node-x").label("foo", "").label("bar", ""),
            make_pod("p-x2").node("node-x").label("bar", ""),
        ],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        want=Want(
            [ZONE_C, C(1, "node", BAR)],
            paths=[(("zone2", 1), ("zone1", 2)), (("node-a", 0), ("node-b", 1))],
            counts=[{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
        ),
    ),
    Row(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on "
        "both zone and node",
        preemptor=(
            make_pod("p").label("foo", "").label("bar", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        added_pod=make_pod("p-a1").node("node-a").label("foo", "").label("bar", ""),
        existing=[
            make_pod("p-b1").node("node-b").label("bar", ""),
            make_pod("p-x1").node("node-x").label("foo", "").label("bar", ""),
            make_pod("p-x2").node("node-x").label("bar", ""),
        ],
        node_idx=0,
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        want=Want(
            [ZONE_C, C(1, "node", BAR)],
            paths=[(("zone1", 1), ("zone2", 1)), (("node-a", 1), ("node-b", 1))],
            counts=[{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
        ),
    ),
    Row(
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy disabled",
        preemptor=(
            make_pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"])
            .spread(1, "zone", HARD, FOO)
        ),
        node_idx=0,
        added_pod=make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
        existing=[
            make_pod("p-a2").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want([ZONE_C], paths=[(("zone2", 1), ("", MAX_INT32))], counts=[{"zone2": 1}]),
    ),
    Row(
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        preemptor=(
            make_pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"])
            .spread(1, "zone", HARD, FOO)
        ),
        node_idx=0,
        added_pod=make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
        existing=[
            make_pod("p-a2").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want([ZONE_C], paths=[(("zone2", 1), ("", MAX_INT32))], counts=[{"zone2": 1}]),
    ),
    Row(
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        node_idx=1,
        added_pod=make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b2").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 2))],
            counts=[{"zone1": 1, "zone2": 2}],
        ),
    ),
    Row(
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        node_idx=1,
        added_pod=make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b2").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 2))],
            counts=[{"zone1": 1, "zone2": 2}],
        ),
    ),
    Row(
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        node_idx=1,
        added_pod=make_pod("p-b1").node("node-b").label("zone", "zone2"),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b2").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 1))],
            counts=[{"zone1": 1, "zone2": 1}],
        ),
    ),
    Row(
        "add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        node_idx=1,
        added_pod=make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b2").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").taints(TAINTS),
            make_node("node-b").label("zone", "zone2").label("node", "node-b"),
        ],
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 2))],
            counts=[{"zone2": 2, "zone1": 1}],
        ),
    ),
    Row(
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        preemptor=(
            make_pod("p").label("foo", "").toleration(UNSCHEDULABLE_TAINT)
            .spread(1, "zone", HARD, FOO)
        ),
        node_idx=1,
        added_pod=make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        existing=[
            make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b2").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").taints(TAINTS),
            make_node("node-b").label("zone", "zone2").label("node", "node-b"),
        ],
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 2))],
            counts=[{"zone2": 2, "zone1": 1}],
        ),
    ),
]

PRE_FILTER_STATE_REMOVE_POD = [
    Row(
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
        ],
        deleted_pod_idx=0,
        node_idx=0,
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 1))],
            counts=[{"zone1": 1, "zone2": 1}],
        ),
    ),
    Row(
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        deleted_pod_idx=0,
        node_idx=0,
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 1), ("zone2", 2))],
            counts=[{"zone1": 1, "zone2": 2}],
        ),
    ),
    Row(
        "delete an irrelevant pod won't help",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a0").node("node-a").label("bar", ""),
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        deleted_pod_idx=0,
        node_idx=0,
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 2), ("zone2", 2))],
            counts=[{"zone1": 2, "zone2": 2}],
        ),
    ),
    Row(
        "delete a non-existing pod won't help",
        preemptor=make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
            make_node("node-y").label("zone", "zone2").label("node", "node-y"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-y1").node("node-y").label("foo", ""),
        ],
        deleted_pod_idx=-1,
        deleted_pod=make_pod("p-a0").node("node-a").label("bar", ""),
        node_idx=0,
        want=Want(
            [ZONE_C],
            paths=[(("zone1", 2), ("zone2", 2))],
            counts=[{"zone1": 2, "zone2": 2}],
        ),
    ),
    Row(
        "two spreadConstraints",
        preemptor=(
            make_pod("p").label("foo", "").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO)
        ),
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a"),
            make_node("node-b").label("zone", "zone1").label("node", "node-b"),
            make_node("node-x").label("zone", "zone2").label("node", "node-x"),
        ],
        existing=[
            make_pod("p-a1").node("node-a").label("foo", ""),
            make_pod("p-a2").node("node-a").label("foo", ""),
            make_pod("p-b1").node("node-b").label("foo", ""),
            make_pod("p-x1").node("node-x").label("foo", ""),
            make_pod("p-x2").node("node-x").label("foo", ""),
        ],
        deleted_pod_idx=3,
        node_idx=2,
        want=Want(
            [ZONE_C, NODE_C],
            paths=[(("zone2", 1), ("zone1", 3)), (("node-b", 1), ("node-x", 1))],
            counts=[{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
        ),
    ),
    Row(
        "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy "
        "disabled",
        preemptor=(
            make_pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"])
            .spread(1, "zone", HARD, FOO)
        ),
        node_idx=0,
        deleted_pod=make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
        existing=[
            make_pod("p-a2").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want([ZONE_C], paths=[(("zone2", 1), ("", MAX_INT32))], counts=[{"zone2": 1}]),
    ),
    Row(
        "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        preemptor=(
            make_pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"])
            .spread(1, "zone", HARD, FOO)
        ),
        node_idx=0,
        deleted_pod=make_pod("p-a1").node("node-a").label("foo", "").label("zone", "zone1"),
        existing=[
            make_pod("p-a2").node("node-a").label("foo", "").label("zone", "zone1"),
            make_pod("p-b1").node("node-b").label("foo", "").label("zone", "zone2"),
        ],
        nodes=[
            make_node("node-a").label("zone", "zone1").label("node", "node-a").label("foo", "bar"),
            make_node("node-b").label("zone", "zone2").label("node", "node-b").label("foo", ""),
        ],
        want=Want([ZONE_C], paths=[(("zone2", 1), ("", MAX_INT32))], counts=[{"zone2": 1}]),
    ),
]


@pytest.mark.parametrize("row", PRE_FILTER_STATE_ADD_POD, ids=ids(PRE_FILTER_STATE_ADD_POD))
def test_pre_filter_state_add_pod(row: Row) -> None:
    snap = snapshot(row.nodes, row.existing or ())
    added = row.added_pod.obj()
    assert snap.add_pod(PodInfo(added), row.nodes[row.node_idx].obj().name)
    status, state = pre_filter_state(make_plugin(), row.preemptor, snap)
    assert status.is_success, status
    row.want.check(state, snap)


@pytest.mark.parametrize(
    "row", PRE_FILTER_STATE_REMOVE_POD, ids=ids(PRE_FILTER_STATE_REMOVE_POD)
)
def test_pre_filter_state_remove_pod(row: Row) -> None:
    existing = row.existing or []
    idx = row.deleted_pod_idx
    listed = idx is not None and 0 <= idx < len(existing)
    deleted = existing[idx] if listed else row.deleted_pod
    # Kube removes the pod from the state of the row's node whether or not the table lists
    # it there (preemption only ever removes a pod that runs on the node): count it there.
    snap = snapshot(row.nodes, existing if listed else [*existing, deleted])
    if not listed:
        snap.remove_pod(deleted.obj().key)
        assert snap.add_pod(PodInfo(deleted.obj()), row.nodes[row.node_idx].obj().name)
    assert snap.remove_pod(deleted.obj().key) is not None
    status, state = pre_filter_state(make_plugin(), row.preemptor, snap)
    assert status.is_success, status
    row.want.check(state, snap)
