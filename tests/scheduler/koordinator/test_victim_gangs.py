"""Preemption and gangs where Phalanx deliberately orders or sizes things differently from
Koordinator (issue 21, items 7 and 8; README, "Gangs and Koordinator").

Item 7: a victim that belongs to a gang brings its whole gang. Koordinator's job-level
preemption evicts only the victims its preemptor needs, so a victim gang may be left partly
running; Phalanx evicts every placed member of it (a gang below its minimum is broken anyway).

Item 8: Koordinator #2490 moved its representative switch to AfterPostFilter, after
preemption, so that job-level preemption sees the gang's waiting members still holding their
reservations ("alreadyWaitForBound") and plans only for the rest. Phalanx releases them in
BeforePostFilter, before any PostFilter plugin, and preemption plans for every member the
gang still needs, on a snapshot where the released members' room is free. On #2490's
scenario (preemption_test.go, "preempt success with one waiting pod") the outcome is the
same: one victim, the gang bound whole.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import (
    Plugin,
    PluginRef,
    Plugins,
    PluginSet,
    Status,
    register_plugin,
)
from phalanx.scheduler.gang.runtime import GangRuntime

from ..helpers import node, pod, run_scheduler
from .kit import PG_LABEL, koord_profile, koord_scheduler, make_pg
from .test_preemption import run_waiting_member_case

LOG: list[tuple[str, dict[str, Any]]] = []


def _view(handle: Any) -> dict[str, Any]:
    snap = handle.snapshot()
    col = snap.resource_index["cpu"]
    row = snap.row("node-2")
    st = GangRuntime.for_handle(handle).cache.get("coscheduling:default/ganga")
    return {
        "waiting": sorted(wp.info.key for wp in handle.waiting_pods() if not wp.done),
        "assumed": sorted(st.assumed) if st is not None else [],
        "node2_free_cpu": float(snap.free()[row, col]) / 1000,  # millicores
    }


@register_plugin
class KoordGangProbe(Plugin):
    """Records the gang's view when BeforePostFilter and PostFilter start."""

    NAME = "TestKoordGangProbe"

    def before_post_filter(self, state: Any, pod: Any, status: Any, fit: Any) -> Status:
        LOG.append(("beforePostFilter", {"pod": pod.key, **_view(self.handle)}))
        return Status()

    def post_filter(self, state: Any, pod: Any, fit: Any) -> tuple[None, Status]:
        LOG.append(("postFilter", {"pod": pod.key, **_view(self.handle)}))
        return None, Status.unschedulable("probe")


def test_2490_waiting_member_released_before_preemption_same_outcome() -> None:
    LOG.clear()
    # The probe first at both points: as in kube, a plugin enabled only at a point runs
    # after the multiPoint (default) ones, so the points list their whole order.
    probes = Plugins(
        before_post_filter=PluginSet(
            enabled=[PluginRef(name="TestKoordGangProbe"), PluginRef(name="Coscheduling")],
            disabled=[PluginRef(name="*")],
        ),
        post_filter=PluginSet(
            enabled=[PluginRef(name=n) for n in ("TestKoordGangProbe", "DefaultPreemption",
                                                 "DynamicResources", "QueueReclaim",
                                                 "GangReservation")],
            disabled=[PluginRef(name="*")],
        ),
    )
    nodes, evictions, _ = run_waiting_member_case(plugins=probes)
    first = next(i for i, (p, d) in enumerate(LOG) if p == "beforePostFilter" and d["waiting"])
    before, post = LOG[first][1], LOG[first + 1]
    # pending-pod-1 failed while pending-pod-2 waited at Permit, reserved on node-2 (full).
    assert before["pod"] == "default/pending-pod-1"
    assert before["waiting"] == ["default/pending-pod-2"] and before["node2_free_cpu"] == 0.0
    # Before preemption ran, the waiting member was released: its 16 CPUs are free again
    # (Koordinator's preemption would still see them taken).
    assert post[0] == "postFilter" and post[1]["waiting"] == [] and post[1]["assumed"] == []
    assert post[1]["node2_free_cpu"] == 16.0
    # Same outcome as Koordinator's: one victim from node-1, the gang bound whole.
    assert evictions == 1 and nodes["existing-pod-4"] == "node-2"
    assert nodes["pending-pod-1"] == "node-1" and nodes["pending-pod-2"] == "node-2"


def test_victim_gang_is_evicted_whole() -> None:
    """A low-priority koord gang of 4 holds the node's 4 GPUs; a high-priority pod needs one.
    Koordinator would evict one member (leaving a gang of 3 below its minimum of 4); Phalanx
    evicts all four."""
    victims = [
        pod(
            f"low-{i}",
            gpu=1,
            cpu="100m",
            priority=0,
            scheduler="koord-scheduler",
            labels={PG_LABEL: "low"},
        )
        for i in range(4)
    ]

    async def body(
        client: MemoryCluster, sched: Scheduler
    ) -> tuple[dict[str, Any], dict[str, Any], int]:
        await client.create(make_pg("low", min_member=4))
        for v in victims:
            await client.create(v)
        assert await sched.wait_idle(timeout=60)
        before = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        await client.create(
            pod("high", gpu=1, cpu="100m", priority=100, scheduler="koord-scheduler")
        )
        assert await sched.wait_idle(timeout=120)
        after = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        evictions = sched.frameworks["koord-scheduler"].plugins["DefaultPreemption"].evictions
        return before, after, evictions

    before, after, evictions = run_scheduler(
        body, nodes=[node("n1", gpu=4)], scheduler_factory=koord_scheduler(koord_profile())
    )
    assert all(before[f"low-{i}"] == "n1" for i in range(4))
    assert evictions == 4 and after == {"high": "n1"}
