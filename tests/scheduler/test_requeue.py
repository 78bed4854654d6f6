"""Requeueing (issue 21, item 1): a pod rejected for room wakes when room frees, not at the
periodic flush of unschedulable pods (podMaxInUnschedulablePodsDuration, 300 s).

Each scenario blocks a gang (or a pod) for room, frees the room at a known virtual time and
asks for the pods to be bound within 2 s of it (one scheduling cycle plus binding). Before
the fix they waited for the flush and failed, except the two uncordon cases (NodeUnschedulable,
which rejected the cordoned node, registered that event already) and the cordon/taint case
(nothing must move): those guard what already worked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.core import Node, Pod, Toleration
from phalanx.api.scheduling import CoschedulingPodGroup
from phalanx.cluster.clock import VIRTUAL_EPOCH, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler

from .gang.builders import member, members, podgang
from .helpers import node, pod, run_scheduler

# One scheduling cycle per member plus the bind: virtual time barely moves; the flush the
# pods waited for before is 300 s away.
WITHIN = 2.0


def _all_bound(client: MemoryCluster, names: list[str]) -> Any:
    async def check() -> bool:
        pods = {p.name: p for p in (await client.list(Pod, "default")).items}
        return all(pods[n].spec.node_name for n in names)

    return check


async def _blocked(client: MemoryCluster, sched: Scheduler, names: list[str]) -> None:
    assert await sched.wait_idle(timeout=60)
    assert not await _all_bound(client, names)(), "the scenario must start blocked"


async def _at(client: MemoryCluster, second: float) -> None:
    """Sleep until `second` virtual seconds after the cluster's start."""
    await asyncio.sleep(max(0.0, VIRTUAL_EPOCH + second - client.clock.now()))


async def _edit_node(client: MemoryCluster, name: str, change: Any, *,
                     status: bool = False) -> None:
    n = await client.get(Node, name)
    change(n)
    await (client.update_status(n) if status else client.update(n))


GANG = ["w-0", "w-1", "w-2"]


@pytest.mark.parametrize("how", ["Succeeded", "Failed", "deleted"])
def test_gang_blocked_for_room_binds_when_a_running_pod_finishes(how: str) -> None:
    """The issue's example: a 3-pod gang does not fit, a running pod finishes at 61 s and the
    node is free from then on: the gang binds then, not at 300 s."""

    async def body(client: MemoryCluster, sched: Scheduler) -> float:
        await client.create(pod("blocker", gpu=1))
        assert await wait_for_condition(_all_bound(client, ["blocker"]), timeout=10)
        await client.create(podgang("g", {"w": 3}))
        for p in members("g", "w", 3, gpu=1):
            await client.create(p)
        await _blocked(client, sched, GANG)
        await _at(client, 61)
        if how == "deleted":
            await client.delete(Pod, "blocker", "default")
        else:
            await client.patch(Pod, "blocker", {"status": {"phase": how}}, "default",
                               subresource="status")
        freed = client.clock.now()
        assert await wait_for_condition(_all_bound(client, GANG), timeout=WITHIN)
        return client.clock.now() - freed

    assert run_scheduler(body, nodes=[node("n1", gpu=3)]) < WITHIN


def test_gang_blocked_for_room_binds_when_a_node_is_added() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, GANG)
        await client.create(node("n2", gpu=4))
        assert await wait_for_condition(_all_bound(client, GANG), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", gpu=2)],
                  pods=[podgang("g", {"w": 3}), *members("g", "w", 3, gpu=1)])


def test_gang_blocked_for_room_binds_when_a_node_grows() -> None:
    def grow(n: Node) -> None:
        n.status.allocatable = {**n.status.allocatable, "nvidia.com/gpu": "4"}
        n.status.capacity = dict(n.status.allocatable)

    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, GANG)
        await _edit_node(client, "n1", grow, status=True)
        assert await wait_for_condition(_all_bound(client, GANG), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", gpu=2)],
                  pods=[podgang("g", {"w": 3}), *members("g", "w", 3, gpu=1)])


def test_gang_blocked_for_room_binds_when_a_node_is_uncordoned() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, GANG)
        await _edit_node(client, "n2", lambda n: setattr(n.spec, "unschedulable", False))
        assert await wait_for_condition(_all_bound(client, GANG), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", gpu=2), node("n2", gpu=2, unschedulable=True)],
                  pods=[podgang("g", {"w": 3}), *members("g", "w", 3, gpu=1)])


# Two shapes: the representative (a GPU member, the largest) passes its own filters on n2;
# the CPU member needs n1, which a label, a taint or a cordon keeps it off. Only the whole-gang
# plan sees that, so no per-pod filter that rejected the representative registered the event.
TWO_SHAPES = ["a-0", "b-0", "b-1"]


def _two_shapes(**a_kw: Any) -> list[Any]:
    tolerate = [Toleration(key="dedicated", operator="Exists", effect="NoSchedule")]
    return [
        podgang("g", {"a": 1, "b": 2}),
        member("g", "a", 0, cpu="1", **a_kw),
        *[member("g", "b", i, cpu="1", gpu=1, tolerations=tolerate) for i in range(2)],
    ]


def test_gang_blocked_by_its_plan_binds_when_a_node_is_labelled() -> None:
    def label(n: Node) -> None:
        n.metadata.labels = {**n.metadata.labels, "acc": "x"}

    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, TWO_SHAPES)
        await _edit_node(client, "n1", label)
        assert await wait_for_condition(_all_bound(client, TWO_SHAPES), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", cpu="4"), node("n2", cpu="2", gpu=2)],
                  pods=_two_shapes(node_selector={"acc": "x"}))


def test_gang_blocked_by_its_plan_binds_when_a_taint_is_removed() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, TWO_SHAPES)
        await _edit_node(client, "n1", lambda n: setattr(n.spec, "taints", None))
        assert await wait_for_condition(_all_bound(client, TWO_SHAPES), timeout=WITHIN)

    run_scheduler(body,
                  nodes=[node("n1", cpu="4", taints=[("dedicated", "x", "NoSchedule")]),
                         node("n2", cpu="2", gpu=2)],
                  pods=_two_shapes())


def test_gang_blocked_by_its_plan_binds_when_a_node_is_uncordoned() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _blocked(client, sched, TWO_SHAPES)
        await _edit_node(client, "n1", lambda n: setattr(n.spec, "unschedulable", False))
        assert await wait_for_condition(_all_bound(client, TWO_SHAPES), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", cpu="4", unschedulable=True), node("n2", cpu="2", gpu=2)],
                  pods=_two_shapes())


def test_cordoning_or_tainting_a_node_does_not_retry_a_gang_blocked_for_room() -> None:
    """The hints skip changes that cannot add room: the representative is not tried again."""

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[int, int]:
        await _blocked(client, sched, GANG)
        before = sched.attempts
        await _edit_node(client, "n2", lambda n: setattr(n.spec, "unschedulable", True))
        await _edit_node(client, "n1", lambda n: setattr(n.spec, "taints", [
            *(n.spec.taints or []), {"key": "k", "value": "v", "effect": "NoSchedule"}]))
        assert await sched.wait_idle(timeout=60)
        return before, sched.attempts

    before, after = run_scheduler(body, nodes=[node("n1", gpu=2), node("n2", cpu="1")],
                                  pods=[podgang("g", {"w": 3}), *members("g", "w", 3, gpu=1)])
    assert after == before


def _waiting_nonstrict_gang() -> list[Any]:
    """A NonStrict koord-scheduler gang of 3 whose third member fits nowhere: the other two
    hold both GPUs of n1 at Permit until the 30 s schedule timeout."""
    pg = CoschedulingPodGroup.model_validate({
        "metadata": {"name": "g", "namespace": "default",
                     "annotations": {labels.ANNOTATION_KOORD_GANG_MODE: "NonStrict"}},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30},
    })
    return [pg, *[pod(f"m-{i}", gpu=1, scheduler=labels.SCHEDULER_KOORDINATOR,
                      labels={labels.LABEL_POD_GROUP: "g"},
                      node_selector={"zone": "nowhere"} if i == 2 else None) for i in range(3)]]


async def _plain_pod_blocked_by_waiting_members(client: MemoryCluster, sched: Scheduler) -> None:
    assert await wait_for_condition(lambda: len(list(sched.waiting)) == 2, timeout=10)
    await client.create(pod("plain", gpu=1))
    assert await wait_for_condition(lambda: sched.diagnosis("default/plain") is not None,
                                    timeout=10)
    assert not await _all_bound(client, ["plain"])()


def test_a_reservation_released_at_the_permit_timeout_wakes_the_pod_that_wanted_it() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> float:
        await _plain_pod_blocked_by_waiting_members(client, sched)
        assert await wait_for_condition(lambda: not list(sched.waiting), timeout=60)
        released = client.clock.now()
        assert await wait_for_condition(_all_bound(client, ["plain"]), timeout=WITHIN)
        return released - VIRTUAL_EPOCH

    released = run_scheduler(body, nodes=[node("n1", gpu=2)], pods=_waiting_nonstrict_gang())
    assert 29 <= released <= 31


def test_a_rejected_waiting_pod_releases_its_room_to_the_pod_that_wanted_it() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await _plain_pod_blocked_by_waiting_members(client, sched)
        handle = sched.handles[labels.SCHEDULER_KOORDINATOR]
        wp = next(iter(sched.waiting))
        assert handle.reject_waiting_pod(wp.info.uid, "Test", "rejected by a test")
        assert await wait_for_condition(_all_bound(client, ["plain"]), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", gpu=2)], pods=_waiting_nonstrict_gang())


def test_a_bound_pod_relabelled_wakes_a_pod_whose_affinity_it_now_matches() -> None:
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}},
         "topologyKey": "kubernetes.io/hostname"}]}}

    async def body(client: MemoryCluster, sched: Scheduler) -> None:
        await client.create(pod("db"))
        assert await wait_for_condition(_all_bound(client, ["db"]), timeout=10)
        await client.create(pod("web", affinity=affinity))
        await _blocked(client, sched, ["web"])
        await client.patch(Pod, "db", {"metadata": {"labels": {"app": "db"}}}, "default")
        assert await wait_for_condition(_all_bound(client, ["web"]), timeout=WITHIN)

    run_scheduler(body, nodes=[node("n1", labels={"kubernetes.io/hostname": "n1"})])
