"""Grove's deletion order of a PodClique's pods (deletionsort.go and deletionsort_test.go's
TestDeletionSorterPrefersTerminatingPods), plus one test per further rule of that order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodCondition, PodSpec, PodStatus
from phalanx.operator.deletionsort import deletion_order

HASH = "abc123"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str, created: datetime | None = T0, *, terminating: bool = False,
        node: str = "node-a", phase: str = "Running", ready: bool = True,
        template: str = HASH) -> Pod:
    """Scheduled, Running and Ready unless told otherwise (Grove's newSortablePod)."""
    return Pod(
        metadata=ObjectMeta(name=name, creation_timestamp=created,
                            deletion_timestamp=created if terminating else None,
                            labels={L.LABEL_POD_TEMPLATE_HASH: template}),
        spec=PodSpec(node_name=node or None, containers=[Container(name="c", image="i")]),
        status=PodStatus(phase=phase, conditions=[PodCondition(
            type="Ready", status="True" if ready else "False")]))


def names(pods: list[Pod]) -> list[str]:
    return [p.name for p in deletion_order(pods, HASH)]


@pytest.mark.parametrize(("pods", "first"), [
    ([pod("healthy"), pod("terminating", terminating=True)], ["terminating", "healthy"]),
    ([pod("healthy-1"), pod("healthy-2"), pod("terminating", terminating=True)],
     ["terminating"]),
    ([pod("older", T0 - timedelta(hours=1), terminating=True),
      pod("newer", terminating=True)], ["newer", "older"]),
], ids=["regardless-of-input-order", "passed-last", "all-terminating"])
def test_deletion_sorter_prefers_terminating_pods(pods: list[Pod], first: list[str]) -> None:
    assert names(pods)[:len(first)] == first


def test_unscheduled_before_scheduled() -> None:
    assert names([pod("placed"), pod("unplaced", node="")]) == ["unplaced", "placed"]


def test_pending_then_unknown_then_running() -> None:
    pods = [pod("running"), pod("unknown", phase="Unknown"), pod("pending", phase="Pending")]
    assert names(pods) == ["pending", "unknown", "running"]


def test_not_ready_before_ready() -> None:
    assert names([pod("ready"), pod("starting", ready=False)]) == ["starting", "ready"]


def test_outdated_template_before_updated() -> None:
    """What OnDelete's scale-in relies on: an outdated pod goes before an updated one, even
    an older updated one."""
    pods = [pod("updated", T0 - timedelta(hours=1)), pod("outdated", template="old")]
    assert names(pods) == ["outdated", "updated"]


def test_newer_before_older_and_no_creation_time_first() -> None:
    pods = [pod("older", T0 - timedelta(hours=1)), pod("newer"), pod("unknown-age", None)]
    assert names(pods) == ["unknown-age", "newer", "older"]


def test_alike_pods_go_highest_index_first() -> None:
    """Phalanx's tie-break (Go's sort is unstable): created in the same instant, the pod of
    the highest hostname index goes first, whatever its generated name."""
    pods = [pod(f"w-{suffix}") for suffix in ("zz", "aa", "mm")]
    for p, k in zip(pods, (0, 10, 2), strict=True):
        p.spec.hostname = f"w-{k}"
    assert names(pods) == ["w-aa", "w-mm", "w-zz"]
