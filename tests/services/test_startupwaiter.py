"""`phalanx startup-wait`, Grove's grove-initc (`operator/initc/internal/wait_test.go`
ported; TestGetLabelSelectorForPods becomes the selector test: Phalanx selects the
parents' pods by their `grove.io/podclique` label, not by the waiting pod's PodGang, so a
parent in another PodGang -- a scaled scaling-group replica -- is seen too; its
TestNewPodCliqueStateWithInfo is the tracker's initial state). Grove's main_test.go tests
a Go signal handler; `asyncio.run` and the kubelet's SIGTERM cover that here.

The waiter runs against a MemoryCluster: it must block until the parents' pods are Ready,
then return; a pod losing readiness or being deleted counts down again."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodSpec
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.services.startupwaiter import ParentTracker, selector, wait_for_parents

NS = "default"


def _pod(name: str, clique: str | None, ready: bool | None = None) -> Pod:
    pod = Pod(metadata=ObjectMeta(name=name, namespace=NS,
                                  labels={L.LABEL_PODCLIQUE: clique} if clique else {}),
              spec=PodSpec(containers=[Container(name="c", image="busybox")]))
    if ready is not None:
        pod.set_condition("Ready", ready, "")
    return pod


@pytest.mark.parametrize("deps,ready,expected", [
    pytest.param({"podclique-a": 2, "podclique-b": 1},
                 {"podclique-a": 2, "podclique-b": 1}, True, id="all_dependencies_met"),
    pytest.param({"podclique-a": 1}, {"podclique-a": 3}, True, id="exceeding_requirements"),
    pytest.param({"podclique-a": 2, "podclique-b": 2},
                 {"podclique-a": 2, "podclique-b": 1}, False, id="one_dependency_not_met"),
    pytest.param({"podclique-a": 1}, {"podclique-a": 0}, False, id="no_ready_pods"),
    pytest.param({"podclique-a": 1}, {"podclique-a": 1}, True, id="single_pod_requirement"),
    pytest.param({}, {}, True, id="no_dependencies"),
])
def test_check_all_parents_ready(deps: dict[str, int], ready: dict[str, int],
                                 expected: bool) -> None:
    tracker = ParentTracker(list(deps.items()))
    tracker.reset([_pod(f"{c}-{i}", c, True) for c, n in ready.items() for i in range(n)])
    assert (not tracker.waiting()) is expected


@pytest.mark.parametrize("initial,pod,deleted,expected", [
    pytest.param([], _pod("podclique-a-1", "podclique-a", True), False, {"podclique-a-1"},
                 id="add_ready_pod"),
    pytest.param([], _pod("podclique-a-1", "podclique-a", False), False, set(),
                 id="add_non_ready_pod"),
    pytest.param(["podclique-a-1", "podclique-a-2"], _pod("podclique-a-1", "podclique-a"),
                 True, {"podclique-a-2"}, id="delete_pod"),
    pytest.param([], _pod("podclique-b-1", "podclique-b", True), False, set(),
                 id="untracked_podclique"),
    pytest.param(["podclique-a-1"], _pod("podclique-a-1", "podclique-a", False), False,
                 set(), id="pod_becomes_not_ready"),
    # A pod whose name starts with the parent's but which belongs to another clique (Grove
    # matches by name prefix; Phalanx by label).
    pytest.param([], _pod("podclique-a-x-1", "podclique-a-x", True), False, set(),
                 id="other_clique_with_prefixed_name"),
])
def test_refresh_ready_pods_of_pod_clique(initial: list[str], pod: Pod, deleted: bool,
                                          expected: set[str]) -> None:
    tracker = ParentTracker([("podclique-a", 1)])
    tracker.reset([_pod(n, "podclique-a", True) for n in initial])
    tracker.observe(pod, deleted=deleted)
    assert tracker.ready == {"podclique-a": expected}


def test_new_pod_clique_state_with_info() -> None:
    tracker = ParentTracker([("podclique-a", 2), ("podclique-b", 1)])
    assert tracker.ready == {"podclique-a": set(), "podclique-b": set()}
    assert tracker.counts() == {"podclique-a": 0, "podclique-b": 0}
    assert tracker.waiting() == [("podclique-a", 2, 0), ("podclique-b", 1, 0)]
    assert ParentTracker([]).waiting() == []


def test_get_label_selector_for_pods() -> None:
    assert selector([("b", 1), ("a", 2)]) == f"{L.LABEL_PODCLIQUE} in (a,b)"


async def _set_ready(cluster: MemoryCluster, name: str, ready: bool) -> None:
    pod = await cluster.get(Pod, name, NS)
    pod.set_condition("Ready", ready, "")
    await cluster.update_status(pod)


async def _create(cluster: MemoryCluster, name: str, clique: str, ready: bool) -> None:
    """A pod with its Ready condition (status is written apart, as a kubelet does)."""
    await cluster.create(_pod(name, clique))
    await _set_ready(cluster, name, ready)


def test_wait_blocks_until_parents_ready(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        for name, clique in (("p-0-a-0", "p-0-a"), ("p-0-a-1", "p-0-a"),
                             ("p-0-b-0", "p-0-b"), ("other-0", "other")):
            await _create(cluster, name, clique, False)
        waiter = asyncio.create_task(wait_for_parents(cluster, NS, [("p-0-a", 2),
                                                                    ("p-0-b", 1)]))
        steps = [("p-0-a-0", True), ("other-0", True), ("p-0-b-0", True),
                 ("p-0-a-0", False), ("p-0-a-1", True)]
        for name, ready in steps:
            await asyncio.sleep(1)  # virtual time: lets the waiter see each write
            assert not waiter.done(), f"returned before {name} changed"
            await _set_ready(cluster, name, ready)
        await asyncio.sleep(1)
        assert not waiter.done()  # p-0-a-0 lost readiness: a has 1 of 2
        await _set_ready(cluster, "p-0-a-0", True)
        await asyncio.wait_for(waiter, timeout=5)

    caplog.set_level("INFO", logger="phalanx.startup-wait")
    run_virtual(main)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "waiting in namespace default for 2 Ready pod(s) of p-0-a, " \
                       "1 Ready pod(s) of p-0-b"
    assert "parents: p-0-a 1/2 Ready, p-0-b 1/1 Ready" in lines
    assert lines[-1] == "all parent PodCliques are ready: p-0-a 2/2 Ready, p-0-b 1/1 Ready"


def test_wait_counts_deleted_parent_pods_out() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await _create(cluster, "p-0-a-0", "p-0-a", True)
        await _create(cluster, "p-0-a-1", "p-0-a", False)
        waiter = asyncio.create_task(wait_for_parents(cluster, NS, [("p-0-a", 2)]))
        await asyncio.sleep(1)
        await cluster.delete(Pod, "p-0-a-0", NS)
        await _set_ready(cluster, "p-0-a-1", True)
        await asyncio.sleep(1)
        assert not waiter.done()  # one Ready pod left of two needed
        await _create(cluster, "p-0-a-2", "p-0-a", True)
        await asyncio.wait_for(waiter, timeout=5)

    run_virtual(main)


def test_wait_returns_at_once_when_parents_are_ready() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await _create(cluster, "p-0-a-0", "p-0-a", True)
        await asyncio.wait_for(wait_for_parents(cluster, NS, [("p-0-a", 1)]), timeout=1)

    run_virtual(main)
