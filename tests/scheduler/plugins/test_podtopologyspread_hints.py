"""PodTopologySpread's queueing hints, ported from kube-scheduler 1.36's
`pkg/scheduler/framework/plugins/podtopologyspread/plugin_test.go`
(Test_isSchedulableAfterNodeChange, Test_isSchedulableAfterPodChange): one row per kube row, ids
equal to the kube row names. Kube's table sets the NodeInclusionPolicyInPodTopologySpread gate
per row; the rows with it off set policies that mean the same with it on (1.36 locks it on), so
all rows are ported.
"""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.podtopologyspread_hints import NODE_ACTIONS, POD_ACTIONS

from .spread_builders import (
    BAR,
    FOO,
    HARD,
    HONOR,
    IGNORE,
    UNSCHEDULABLE_TAINT,
    Row,
    ids,
    make_node,
    make_plugin,
    make_pod,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

AFTER_NODE_CHANGE = [
    Row(
        "node updates label which matches topologyKey",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        old_node=make_node("node-a").label("zone", "zone1"),
        new_node=make_node("node-a").label("zone", "zone2"),
        hint=QUEUE,
    ),
    Row(
        "node that doesn't match topologySpreadConstraints updates non-related label",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        old_node=make_node("node-a").label("foo", "bar1"),
        new_node=make_node("node-a").label("foo", "bar2"),
        hint=SKIP,
    ),
    Row(
        "node that match topologySpreadConstraints adds non-related label",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        old_node=(
            make_node("node-a").label("zone", "zone1").label("node", "node1").label("foo", "bar")
        ),
        new_node=make_node("node-a").label("zone", "zone1").label("node", "node1"),
        hint=SKIP,
    ),
    Row(
        "create node with non-related labels",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        new_node=make_node("node-a").label("foo", "bar"),
        hint=SKIP,
    ),
    Row(
        "create node with related labels",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        new_node=make_node("node-a").label("zone", "zone1"),
        hint=QUEUE,
    ),
    Row(
        "delete node with non-related labels",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        old_node=make_node("node-a").label("foo", "bar"),
        hint=SKIP,
    ),
    Row(
        "delete node with related labels",
        pod=make_pod("p").spread(1, "zone", HARD, FOO),
        old_node=make_node("node-a").label("zone", "zone1"),
        hint=QUEUE,
    ),
    Row(
        "add node with related labels that only match one of topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        new_node=make_node("node-a").label("zone", "zone1"),
        hint=SKIP,
    ),
    Row(
        "add node with related labels that match all topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        new_node=make_node("node-a").label("zone", "zone1").label("node", "node1"),
        hint=QUEUE,
    ),
    Row(
        "update node with related labels that only match one of topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        old_node=make_node("node-a").label("zone", "zone1"),
        new_node=make_node("node-a").label("zone", "zone1"),
        hint=SKIP,
    ),
    Row(
        "update node with related labels that match all topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        old_node=make_node("node-a").label("zone", "zone1").label("node", "node1"),
        new_node=make_node("node-a").label("zone", "zone1").label("node", "node2"),
        hint=QUEUE,
    ),
    Row(
        "update node with different taints that match all topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        old_node=(
            make_node("node-a").label("zone", "zone1").label("node", "node1")
            .taints([("aaa", "bbb", "NoSchedule")])
        ),
        new_node=(
            make_node("node-a").label("zone", "zone1").label("node", "node1")
            .taints([("ccc", "bbb", "NoSchedule")])
        ),
        hint=QUEUE,
    ),
    Row(
        "update node with different taints that only match one of topologySpreadConstraints",
        pod=make_pod("p").spread(1, "zone", HARD, FOO).spread(1, "node", HARD, FOO),
        old_node=make_node("node-a").label("node", "node1").taints([("aaa", "bbb", "NoSchedule")]),
        new_node=make_node("node-a").label("node", "node1").taints([("ccc", "bbb", "NoSchedule")]),
        hint=SKIP,
    ),
]

AFTER_POD_CHANGE = [
    Row(
        "add pod with labels match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        hint=QUEUE,
    ),
    Row(
        "add un-scheduled pod",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        new_pod=make_pod().uid("p2").label("foo", ""),
        hint=SKIP,
    ),
    Row(
        "update un-scheduled pod",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        new_pod=make_pod().uid("p2").label("foo", ""),
        old_pod=make_pod().uid("p2").label("bar", ""),
        hint=SKIP,
    ),
    Row(
        "delete un-scheduled pod",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").label("foo", ""),
        hint=SKIP,
    ),
    Row(
        "add pod with different namespace",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        new_pod=make_pod().uid("p2").node("fake-node").namespace("fake-namespace").label("foo", ""),
        hint=SKIP,
    ),
    Row(
        "add pod with labels don't match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        new_pod=make_pod().uid("p2").node("fake-node").label("bar", ""),
        hint=SKIP,
    ),
    Row(
        "delete pod with labels that match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        hint=QUEUE,
    ),
    Row(
        "delete nominated pod with labels that don't match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").nominated("fake-node").label("bar", ""),
        hint=SKIP,
    ),
    Row(
        "delete nominated pod with labels that match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").nominated("fake-node").label("foo", ""),
        hint=QUEUE,
    ),
    Row(
        "delete pod with labels that don't match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("bar", ""),
        hint=SKIP,
    ),
    Row(
        "update pod's non-related label",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar1"),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar2"),
        hint=SKIP,
    ),
    Row(
        "add pod's label that matches topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node"),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        hint=QUEUE,
    ),
    Row(
        "delete pod label that matches topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        new_pod=make_pod().uid("p2").node("fake-node"),
        hint=QUEUE,
    ),
    Row(
        "change pod's label that matches topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", "foo1"),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "foo2"),
        hint=SKIP,
    ),
    Row(
        "change pod's label that doesn't match topologySpreadConstraints selector",
        pod=make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar1"),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar2"),
        hint=SKIP,
    ),
    Row(
        "add pod's label that matches topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        pod=(
            make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar2"),
        hint=QUEUE,
    ),
    Row(
        "change pod's label that doesn't match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        pod=(
            make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", ""),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("baz", ""),
        hint=SKIP,
    ),
    Row(
        "change pod's label that match topologySpreadConstraints selector with multi "
        "topologySpreadConstraints",
        pod=(
            make_pod().uid("p").name("p").label("foo", "").spread(1, "zone", HARD, FOO)
            .spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", ""),
        new_pod=make_pod().uid("p2").node("fake-node").label("foo", "").label("bar", "bar2"),
        hint=SKIP,
    ),
    Row(
        "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has "
        "got a new toleration",
        pod=(
            make_pod().uid("p").name("p").label("foo", "")
            .spread(1, "zone", HARD, FOO, None, None, HONOR).spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p").name("p").label("foo", ""),
        new_pod=make_pod().uid("p").name("p").label("foo", "").toleration(UNSCHEDULABLE_TAINT),
        hint=QUEUE,
    ),
    Row(
        "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and "
        "has got a new toleration",
        pod=(
            make_pod().uid("p").name("p").label("foo", "")
            .spread(1, "zone", HARD, FOO, None, None, IGNORE).spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p").name("p").label("foo", ""),
        new_pod=make_pod().uid("p").name("p").label("foo", "").toleration(UNSCHEDULABLE_TAINT),
        hint=SKIP,
    ),
    Row(
        "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the "
        "selector of the constraint",
        pod=(
            make_pod().uid("p").name("p").label("foo", "")
            .spread(1, "zone", HARD, FOO, None, None, IGNORE).spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p").name("p"),
        new_pod=make_pod().uid("p").name("p").label("foo", ""),
        hint=QUEUE,
    ),
    Row(
        "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        pod=(
            make_pod().uid("p").name("p").label("foo", "")
            .spread(1, "zone", HARD, FOO, None, None, IGNORE).spread(1, "node", HARD, BAR)
        ),
        old_pod=make_pod().uid("p").name("p"),
        new_pod=make_pod().uid("p").name("p").label("unrelated", ""),
        hint=SKIP,
    ),
]


def _obj(builder):  # type: ignore[no-untyped-def]
    return builder.obj() if builder is not None else None


@pytest.mark.parametrize("row", AFTER_NODE_CHANGE, ids=ids(AFTER_NODE_CHANGE))
def test_is_schedulable_after_node_change(row: Row) -> None:
    hint = make_plugin().node_hint(PodInfo(row.pod.obj()), _obj(row.old_node), _obj(row.new_node))
    assert hint == row.hint


@pytest.mark.parametrize("row", AFTER_POD_CHANGE, ids=ids(AFTER_POD_CHANGE))
def test_is_schedulable_after_pod_change(row: Row) -> None:
    hint = make_plugin().pod_hint(PodInfo(row.pod.obj()), _obj(row.old_pod), _obj(row.new_pod))
    assert hint == row.hint


def test_events_to_register() -> None:
    """kube's registrations: pods added, relabelled or deleted (bound ones, and unscheduled
    ones only when nominated or the pod itself); nodes added, deleted, relabelled, retainted."""
    events = {(r.event.resource, r.event.action) for r in make_plugin().events_to_register()}
    assert ("AssignedPod", POD_ACTIONS) in events
    assert ("Node", NODE_ACTIONS) in events
    unscheduled = [r for r in make_plugin().events_to_register() if r.event.resource == "Pod"]
    (reg,) = unscheduled
    assert reg.targets is not None
    pending = make_pod("other").label("foo", "").obj()
    assert reg.targets(pending, pending) == [pending.key]  # only the pod itself
    nominated = make_pod("other").nominated("n1").obj()
    assert reg.targets(None, nominated) is None  # any pod it was rejected with
