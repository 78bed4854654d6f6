"""Coscheduling on the real scheduler: all-or-nothing, holding incomplete gangs, timeouts,
status conditions and events."""

from __future__ import annotations

import asyncio

from phalanx.api import labels
from phalanx.api.core import Event
from phalanx.api.podgang import PodGang
from phalanx.api.scheduling import CoschedulingPodGroup
from phalanx.cluster.clock import VIRTUAL_EPOCH, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler


async def _condition(client: MemoryCluster, name: str, ns: str = "default"):
    pg = await client.get(PodGang, name, ns)
    return pg.condition(CONDITION_GANG_SCHEDULED)


async def _events(client: MemoryCluster, reason: str) -> list[Event]:
    return [e for e in (await client.list(Event, "default")).items if e.reason == reason]


def test_gang_that_fits_is_bound_whole() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        bound = await bound_by_gang(client)
        cond = await _condition(client, "g")
        return bound, cond

    bound, cond = run_scheduler(
        body,
        nodes=[node("n1", gpu=2), node("n2", gpu=2)],
        pods=[podgang("g", {"w": 4}), *members("g", "w", 4, gpu=1)],
    )
    assert sorted(bound["g"]) == ["n1", "n1", "n2", "n2"]
    assert cond is not None and cond.status == "True" and cond.reason == "Scheduled"


def test_gang_that_does_not_fit_binds_nothing_and_says_why() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client), await _condition(client, "g"), await _events(client, "GangUnschedulable")

    bound, cond, events = run_scheduler(
        body,
        nodes=[node("n1", gpu=2), node("n2", gpu=1)],
        pods=[podgang("g", {"w": 4}), *members("g", "w", 4, gpu=1)],
    )
    assert bound["g"] == [None] * 4
    assert cond is not None and cond.status == "False" and cond.reason == "Unschedulable"
    # The representative fails at once: the gang needs 4 GPUs, the cluster has 3 (no member
    # is assumed just to be released again).
    assert "0/2 nodes are available: 2 node(s) without room for the whole gang" in cond.message
    assert "PodGang default/g needs 4 pods like this one, these nodes fit 3" in cond.message
    # Every member carries it, including those that never ran a cycle (gated behind the
    # representative, so they have no FailedScheduling Event of their own).
    assert len(events) == 4 and all("needs 4 pods like this one, these nodes fit 3" in e.message for e in events)


def test_incomplete_gang_is_held_with_condition_and_events_then_scheduled() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        held = await bound_by_gang(client)
        cond = await _condition(client, "g")
        events = await _events(client, "GangIncomplete")
        for p in members("g", "w", 4, gpu=1)[3:]:
            await client.create(p)
        assert await sched.wait_idle(timeout=60)
        return held, cond, events, await bound_by_gang(client), await _condition(client, "g")

    held, cond, events, bound, cond2 = run_scheduler(
        body,
        nodes=[node("n1", gpu=4)],
        pods=[podgang("g", {"w": 4}), *members("g", "w", 4, gpu=1)[:3]],
    )
    assert held["g"] == [None] * 3
    assert cond is not None and cond.status == "False" and cond.reason == "GangIncomplete"
    assert "3/4 members created" in cond.message and "waiting for 1 more" in cond.message
    assert len(events) == 3 and all(e.type == "Warning" and "3/4 members created" in e.message for e in events)
    assert bound["g"] == ["n1"] * 4
    assert cond2 is not None and cond2.status == "True"


def test_schedule_timeout_releases_the_gang_and_records_why() -> None:
    """A NonStrict gang keeps its assumed members when one fails (here: a member whose node
    selector matches no node), so it waits at Permit until the schedule timeout releases every
    reservation; the pods say why (Koordinator's PodGroup schema has no conditions)."""
    pg = CoschedulingPodGroup.model_validate(
        {
            "metadata": {"name": "g", "namespace": "default", "annotations": {labels.ANNOTATION_KOORD_GANG_MODE: "NonStrict"}},
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30},
        }
    )
    pods = [pod(f"m-{i}", gpu=1, scheduler=labels.SCHEDULER_KOORDINATOR, labels={labels.LABEL_POD_GROUP: "g"},
                node_selector={"zone": "nowhere"} if i == 2 else None) for i in range(3)]

    async def body(client: MemoryCluster, sched: Scheduler):
        async def timed_out() -> bool:
            return bool(await _events(client, "GangScheduleTimeout"))

        assert await wait_for_condition(timed_out, timeout=120)
        waited = sched.client.clock.now() - VIRTUAL_EPOCH
        return await bound_nodes(client), waited, await _events(client, "GangScheduleTimeout")

    bound, waited, events = run_scheduler(body, nodes=[node("n1", gpu=3)], pods=[pg, *pods])
    assert set(bound.values()) == {None}
    assert waited >= 30
    assert events and all("2/3 placed" in e.message for e in events)
    assert events and all("schedule timeout" in e.message for e in events)


def test_members_arriving_one_by_one_cause_no_event_storm() -> None:
    """64 members created one every 0.1s: one Event object per pod, a handful of condition
    writes, and the counts in the latest message are current. The recorder aggregates
    repeats into one Event, so the storm shows in the Events' `count`: each pod's is bumped
    at most once per status write (once per verdict), not once per member that arrived."""
    n = 64

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(podgang("g", {"w": n + 1}))
        for p in members("g", "w", n, cpu="10m", memory="1Mi"):
            await client.create(p)
            await asyncio.sleep(0.1)
        assert await sched.wait_idle(timeout=60)
        # Updates held back by the recorder's interval land with its trailing writes.
        await asyncio.sleep(sched.events.min_interval + 1)
        status = sched.handles["phalanx-scheduler"].framework.plugins["Coscheduling"].runtime.status
        events = await _events(client, "GangIncomplete")
        return events, status.condition_writes, await _condition(client, "g")

    events, writes, cond = run_scheduler(body, nodes=[node("n1", cpu="64")])
    assert len(events) == n and len({e.involved_object.name for e in events}) == n
    assert 1 <= writes <= 8
    counts = [e.count or 1 for e in events]
    assert max(counts) <= writes, counts
    assert sum(counts) <= n * writes
    latest = f"{n}/{n + 1} members created"
    assert all(latest in e.message for e in events), {e.message for e in events}
    assert cond is not None and cond.reason == "GangIncomplete" and latest in cond.message


def test_pods_of_a_missing_gang_object_get_gang_not_found_events() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=30)
        return await _events(client, "GangNotFound"), await bound_by_gang(client)

    events, bound = run_scheduler(body, nodes=[node("n1")], pods=members("nope", "w", 2))
    assert bound["nope"] == [None, None]
    assert len(events) == 2 and all("gang default/nope not found" in e.message for e in events)


def test_explain_gives_counts_verdict_and_the_failed_members_diagnosis() -> None:
    from phalanx.scheduler import gang_explain

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        return gang_explain(sched, "default", "g")

    (info,) = run_scheduler(
        body,
        nodes=[node("n1", gpu=2, taints=[("dedicated", "x", "NoSchedule")]), node("n2", gpu=2)],
        pods=[podgang("g", {"w": 3}), *members("g", "w", 3, gpu=1)],
    )
    assert info["gang"] == "podgang:default/g" and info["object"] == "PodGang default/g"
    assert (info["minMember"], info["created"], info["placed"], info["status"]) == (3, 3, 0, False)
    assert info["reason"] == "Unschedulable" and info["representative"] == "default/w-0"
    reasons = info["lastFailure"]["diagnosis"]["reasons"]
    assert any("untolerated taint" in r for r in reasons) and any("without room for the whole gang" in r for r in reasons)


def test_gang_plugins_sit_at_their_extension_points_in_every_default_profile() -> None:
    async def main() -> dict[str, dict[str, list[str]]]:
        sched = Scheduler(MemoryCluster())
        return {name: fw.extension_points() for name, fw in sched.frameworks.items()}

    from phalanx.cluster.clock import run_virtual

    profiles = run_virtual(main)
    assert set(profiles) == {labels.SCHEDULER_DEFAULT, labels.SCHEDULER_KAI, labels.SCHEDULER_VOLCANO,
                             labels.SCHEDULER_KOORDINATOR, labels.SCHEDULER_PHALANX,
                             "scheduler-plugins-scheduler"}
    for points in profiles.values():
        for point in ("preEnqueue", "preFilter", "filter", "beforePostFilter", "reserve", "permit", "postBind"):
            assert "Coscheduling" in points[point], point
        assert "TopologyPacking" in points["filter"] and "TopologyPacking" in points["score"]
        # An idle DRA claim is deallocated before anyone is evicted (kube's order); then
        # reclaim between KAI queues (KAI runs reclaim before preempt), then preemption; a
        # gang neither can help reserves room (GangReservation) after them.
        assert points["postFilter"] == ["DynamicResources", "QueueReclaim", "DefaultPreemption",
                                        "GangReservation"]
        assert "InterPodAffinity" in points["filter"] and "InterPodAffinity" in points["score"]
        # The gang check runs after the node filters it counts room on.
        assert points["filter"].index("Coscheduling") > points["filter"].index("NodeResourcesFit")
        assert points["filter"].index("TopologyPacking") > points["filter"].index("Coscheduling")
