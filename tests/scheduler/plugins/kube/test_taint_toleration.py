"""kube-scheduler 1.36's pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go,
ported row by row (ids are kube's row names) against our TaintToleration plugin.

Not ported, with the reason:
- The rows that need the `Gt`/`Lt` toleration operators (TestTaintTolerationScore's two
  "Numeric ... operator" rows, TestTaintTolerationFilter's five Gt/Lt rows, and all six of
  TestTaintTolerationFilterWithFeatureGate): the operators are behind kube's alpha
  TaintTolerationComparisonOperators gate, off by default in 1.36, where the API server
  refuses such a pod; our API model refuses them too (Toleration.operator is Exists/Equal),
  so no such pod reaches the plugin.
- The hint rows' `wantErr`: a non-Node/non-Pod object gets Queue from our hints, as from
  kube's alongside the error.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.core import Toleration
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.tainttoleration import (
    REASON,
    TaintToleration,
    node_change_hint,
    pod_toleration_hint,
)

from .nodeplugin_harness import filter_status, handle, node, pod, scores, snapshot

REJECTED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])


def tol(
    key: str | None = None,
    value: str | None = None,
    effect: str | None = None,
    operator: str | None = None,
) -> Toleration:
    return Toleration(key=key, value=value, effect=effect, operator=operator)


def taint(key: str, value: str, effect: str) -> tuple[str, str, str]:
    return (key, value, effect)


PREFER = "PreferNoSchedule"
NO_SCHEDULE = "NoSchedule"

# (id, tolerations, nodes [(name, taints)], expected scores)
SCORE_ROWS: list[tuple[Any, ...]] = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with "
        "intolerable taints",
        [tol("foo", "bar", PREFER, "Equal")],
        [("nodeA", [taint("foo", "bar", PREFER)]), ("nodeB", [taint("foo", "blah", PREFER)])],
        [("nodeA", 100), ("nodeB", 0)],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score, no "
        "matter how many "
        "tolerable taints a node has",
        [tol("cpu-type", "arm64", PREFER, "Equal"), tol("disk-type", "ssd", PREFER, "Equal")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PREFER)]),
            ("nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]),
        ],
        [("nodeA", 100), ("nodeB", 100), ("nodeC", 100)],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [tol("foo", "bar", PREFER, "Equal")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", PREFER)]),
            ("nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]),
        ],
        [("nodeA", 100), ("nodeB", 50), ("nodeC", 0)],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by "
        "taints-tolerations "
        "priority function",
        [
            tol("cpu-type", "arm64", NO_SCHEDULE, "Equal"),
            tol("disk-type", "ssd", NO_SCHEDULE, "Equal"),
        ],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", NO_SCHEDULE)]),
            ("nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]),
        ],
        [("nodeA", 100), ("nodeB", 100), ("nodeC", 0)],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [("nodeA", []), ("nodeB", [taint("cpu-type", "arm64", PREFER)])],
        [("nodeA", 100), ("nodeB", 0)],
    ),
]


@pytest.mark.parametrize(
    "tolerations,nodes,expected", [r[1:] for r in SCORE_ROWS], ids=[r[0] for r in SCORE_ROWS]
)
def test_taint_toleration_score(tolerations, nodes, expected):
    snap = snapshot([node(n, taints=t) for n, t in nodes])
    pl = TaintToleration(handle())
    p = PodInfo(pod(tolerations=tolerations or None))
    assert scores(pl, p, snap, normalize=True, state=CycleState()) == expected


DEDICATED_USER1 = [taint("dedicated", "user1", NO_SCHEDULE)]

# (id, tolerations, taints, want)
FILTER_ROWS: list[tuple[Any, ...]] = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        DEDICATED_USER1,
        REJECTED,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "user1", NO_SCHEDULE)],
        DEDICATED_USER1,
        None,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
        "NoSchedule",
        [tol("dedicated", "user2", NO_SCHEDULE, "Equal")],
        DEDICATED_USER1,
        REJECTED,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
        "tolerates the "
        "taints on the node",
        [tol("foo", None, NO_SCHEDULE, "Exists")],
        [taint("foo", "bar", NO_SCHEDULE)],
        None,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
        "pod can be "
        "scheduled onto the node",
        [tol("dedicated", "user2", NO_SCHEDULE, "Equal"), tol("foo", None, NO_SCHEDULE, "Exists")],
        [taint("dedicated", "user2", NO_SCHEDULE), taint("foo", "bar", NO_SCHEDULE)],
        None,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) "
        "effect "
        "doesn't match, can't be scheduled onto the node",
        [tol("foo", "bar", PREFER, "Equal")],
        [taint("foo", "bar", NO_SCHEDULE)],
        REJECTED,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of "
        "toleration "
        "is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        [tol("foo", "bar", None, "Equal")],
        [taint("foo", "bar", NO_SCHEDULE)],
        None,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the "
        "effect of "
        "taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [tol("dedicated", "user2", NO_SCHEDULE, "Equal")],
        [taint("dedicated", "user1", PREFER)],
        None,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can "
        "be scheduled "
        "onto the node",
        [],
        [taint("dedicated", "user1", PREFER)],
        None,
    ),
]


@pytest.mark.parametrize(
    "tolerations,taints,want", [r[1:] for r in FILTER_ROWS], ids=[r[0] for r in FILTER_ROWS]
)
def test_taint_toleration_filter(tolerations, taints, want):
    snap = snapshot([node("nodeA", taints=taints)])
    assert (
        filter_status(
            TaintToleration(handle()), pod(tolerations=tolerations or None), snap, "nodeA"
        )
        == want
    )


USER2 = [tol("dedicated", "user2", NO_SCHEDULE, "Equal")]

# (id, pod tolerations, old taints, new taints, expected); None for no node, str for a non-node
NODE_HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-new-object", [], None, "not-a-node", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", [], "not-a-node", DEDICATED_USER1, QueueingHint.QUEUE),
    (
        "skip-queue-on-untoleratedtaint-node-added",
        USER2,
        None,
        DEDICATED_USER1,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-toleratedtaint-node-added",
        USER2,
        None,
        [taint("dedicated", "user2", NO_SCHEDULE)],
        QueueingHint.QUEUE,
    ),
    (
        "skip-unrelated-change",
        USER2,
        DEDICATED_USER1,
        DEDICATED_USER1 + [taint("dedicated", "user3", NO_SCHEDULE)],
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-taint-change",
        USER2,
        DEDICATED_USER1,
        [taint("dedicated", "user2", NO_SCHEDULE)],
        QueueingHint.QUEUE,
    ),
]


def _node(taints: Any) -> Any:
    return taints if taints is None or isinstance(taints, str) else node("nodeA", taints=taints)


@pytest.mark.parametrize(
    "tolerations,old,new,expected",
    [r[1:] for r in NODE_HINT_ROWS],
    ids=[r[0] for r in NODE_HINT_ROWS],
)
def test_is_schedulable_after_node_change(tolerations, old, new, expected):
    p = PodInfo(pod(tolerations=tolerations or None))
    assert node_change_hint(p, _node(old), _node(new)) == expected


# (id, pod (name, uid), old pod (name, uid, tolerations) or a non-pod, new pod ..., expected)
POD_HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-new-object", ("p", None), None, "not-a-pod", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", ("p", None), "not-a-pod", ("p", None, []), QueueingHint.QUEUE),
    (
        "skip-updates-other-pod",
        ("pod-1", "uid0"),
        ("pod-2", "uid1", []),
        ("pod-2", "uid1", [tol("foo", effect=NO_SCHEDULE)]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-toleration-added",
        ("pod-1", None),
        ("pod-1", None, []),
        ("pod-1", None, [tol("foo", effect=NO_SCHEDULE)]),
        QueueingHint.QUEUE,
    ),
]


def _pod(spec: Any) -> Any:
    if spec is None or isinstance(spec, str):
        return spec
    name, uid, tolerations = spec
    return pod(name, uid=uid, tolerations=tolerations or None)


@pytest.mark.parametrize(
    "target,old,new,expected", [r[1:] for r in POD_HINT_ROWS], ids=[r[0] for r in POD_HINT_ROWS]
)
def test_is_schedulable_after_pod_toleration_change(target, old, new, expected):
    p = PodInfo(pod(target[0], uid=target[1]))
    assert pod_toleration_hint(p, _pod(old), _pod(new)) == expected
