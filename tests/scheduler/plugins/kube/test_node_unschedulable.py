"""kube-scheduler 1.36's nodeunschedulable/node_unschedulable_test.go, ported row by row (ids
are kube's row names) against our NodeUnschedulable plugin.

Not ported: the hint rows' `expectedErr` part (a non-Node/non-Pod object gets Queue here,
as in kube alongside the error; the Queue itself is checked).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.nodeunschedulable import (
    REASON,
    TAINT_UNSCHEDULABLE,
    NodeUnschedulable,
    node_change_hint,
    pod_toleration_hint,
)

from .nodeplugin_harness import filter_status, handle, node, pod, snapshot, toleration

FILTER_ROWS: list[tuple[Any, ...]] = [
    (
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        pod(),
        True,
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]),
    ),
    ("Schedule pod to normal node", pod(), False, None),
    (
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        pod(tolerations=[toleration(TAINT_UNSCHEDULABLE, effect="NoSchedule")]),
        True,
        None,
    ),
]


@pytest.mark.parametrize(
    "p,cordoned,want", [r[1:] for r in FILTER_ROWS], ids=[r[0] for r in FILTER_ROWS]
)
def test_node_unschedulable(p, cordoned, want):
    snap = snapshot([node("n", unschedulable=cordoned)])
    assert filter_status(NodeUnschedulable(handle()), p, snap, "n") == want


NOT_READY = [("node.kubernetes.io/not-ready", "", "NoExecute")]
NODE_HINT_ROWS: list[tuple[Any, ...]] = [
    ("error-wrong-new-object", None, "not-a-node", QueueingHint.QUEUE),
    ("error-wrong-old-object", "not-a-node", node(unschedulable=True), QueueingHint.QUEUE),
    (
        "skip-queue-on-unschedulable-node-added",
        None,
        node(unschedulable=True),
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-on-schedulable-node-added", None, node(unschedulable=False), QueueingHint.QUEUE),
    (
        "skip-unrelated-change-unschedulable-true",
        node(unschedulable=True),
        node(unschedulable=True, taints=NOT_READY),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-change-unschedulable-false",
        node(unschedulable=False),
        node(unschedulable=False, taints=NOT_READY),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-unschedulable-field-change",
        node(unschedulable=True),
        node(unschedulable=False),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    "old,new,expected", [r[1:] for r in NODE_HINT_ROWS], ids=[r[0] for r in NODE_HINT_ROWS]
)
def test_is_schedulable_after_node_change(old, new, expected):
    assert node_change_hint(PodInfo(pod()), old, new) == expected


def exists(key: str) -> Any:
    """st.MakePod().Toleration(key): key Exists."""
    return [toleration(key, operator="Exists")]


POD_HINT_ROWS: list[tuple[Any, ...]] = [
    ("error-wrong-new-object", pod(), None, "not-a-pod", QueueingHint.QUEUE),
    ("error-wrong-old-object", pod(), "not-a-pod", pod(), QueueingHint.QUEUE),
    (
        "skip-different-pod-update",
        pod(uid="uid"),
        pod(uid="different-uid"),
        pod(uid="different-uid", tolerations=exists(TAINT_UNSCHEDULABLE)),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-when-the-unsched-pod-gets-toleration",
        pod(uid="uid"),
        pod(uid="uid"),
        pod(uid="uid", tolerations=exists(TAINT_UNSCHEDULABLE)),
        QueueingHint.QUEUE,
    ),
    (
        "skip-when-the-unsched-pod-gets-unrelated-toleration",
        pod(uid="uid"),
        pod(uid="uid"),
        pod(uid="uid", tolerations=exists("unrelated-key")),
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(
    "target,old,new,expected", [r[1:] for r in POD_HINT_ROWS], ids=[r[0] for r in POD_HINT_ROWS]
)
def test_is_schedulable_after_pod_toleration_change(target, old, new, expected):
    assert pod_toleration_hint(PodInfo(target), old, new) == expected
