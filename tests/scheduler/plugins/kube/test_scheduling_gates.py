"""kube-scheduler 1.36's schedulinggates/scheduling_gates_test.go, ported row by row (ids are
kube's row names) against our SchedulingGates plugin.

Not ported: the hint rows' `expectedErr` part (a non-Pod object gets Queue, as in kube
alongside the error; the Queue itself is checked).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.schedulinggates import SchedulingGates, gates_removed_hint

from .nodeplugin_harness import handle, pod


def gated(name: str, gates: list[str], uid: str | None = None) -> Any:
    return pod(name, uid=uid, scheduling_gates=[{"name": g} for g in gates])


PRE_ENQUEUE_ROWS = [
    ("pod does not carry scheduling gates", pod("p"), None),
    (
        "pod carries scheduling gates",
        gated("p", ["foo", "bar"]),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [foo bar]"),
    ),
]


@pytest.mark.parametrize(
    "p,want", [r[1:] for r in PRE_ENQUEUE_ROWS], ids=[r[0] for r in PRE_ENQUEUE_ROWS]
)
def test_pre_enqueue(p, want):
    status = SchedulingGates(handle()).pre_enqueue(PodInfo(p))
    assert (None if status.is_success else (status.code, status.message)) == want


HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-old-object", pod(), "not-a-pod", None, QueueingHint.QUEUE),
    ("backoff-wrong-new-object", pod(), None, "not-a-pod", QueueingHint.QUEUE),
    (
        "skip-queue-on-other-pod-updated",
        gated("p", ["foo", "bar"], "uid0"),
        gated("p1", ["foo", "bar"], "uid1"),
        gated("p1", ["foo"], "uid1"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-the-unsched-pod-updated",
        gated("p", ["foo"]),
        gated("p", ["foo"]),
        gated("p", []),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    "target,old,new,expected", [r[1:] for r in HINT_ROWS], ids=[r[0] for r in HINT_ROWS]
)
def test_is_schedulable_after_pod_change(target, old, new, expected):
    assert gates_removed_hint(PodInfo(target), old, new) == expected
