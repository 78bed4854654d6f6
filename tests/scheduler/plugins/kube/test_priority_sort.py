"""kube-scheduler 1.36's queuesort/priority_sort_test.go (TestLess), ported row by row (ids
are kube's row names) against our PrioritySort plugin: `Less(p1, p2)` is "p1's sort key is
smaller" here (smaller keys pop first)."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.types import QueuedPodInfo
from phalanx.scheduler.plugins.prioritysort import PrioritySort

from .nodeplugin_harness import handle, pod

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0

ROWS = [
    ("p1.priority less than p2.priority", (LOW, T1), (HIGH, T1), False),
    ("p1.priority greater than p2.priority", (HIGH, T1), (LOW, T1), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2", (HIGH, T1), (HIGH, T2), True),
    ("equal priority. p2 is added to schedulingQ earlier than p1", (HIGH, T2), (HIGH, T1), False),
]


def queued(name: str, priority: int, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(pod(name, priority=priority)), timestamp)


@pytest.mark.parametrize("p1,p2,expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_less(p1, p2, expected):
    sort = PrioritySort(handle())
    assert (sort.sort_key(queued("p1", *p1)) < sort.sort_key(queued("p2", *p2))) is expected
