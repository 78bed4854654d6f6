"""Gang-aware preemption, and the representative switch of a failed gang in BeforePostFilter.

The Koordinator issue: Coscheduling switched the representative and rejected the gang's
waiting members in PostFilter, where it competes with preemption. kube-scheduler runs
PostFilter plugins only until one succeeds, so when preemption succeeds first the switch
never runs: the waiting members keep their reservations and the gang is stuck behind a
representative that is no longer the pod being retried. Here the switch is BeforePostFilter,
which always runs, before any PostFilter.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import Plugin, PluginRef, Plugins, PluginSet, SchedulerProfile, Status, register_plugin
from phalanx.scheduler.gang.runtime import GangRuntime

from ..gang.builders import assert_no_partial_gang, bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler

GANG = "podgang:default/g"
LOG: list[tuple[str, dict[str, Any]]] = []


def _gang_state(handle: Any) -> dict[str, Any]:
    """What the gang holds right now, as a plugin at this point sees it."""
    snap = handle.snapshot()
    col = snap.resource_index["nvidia.com/gpu"]
    rows = snap.valid_rows()
    rt = GangRuntime.for_handle(handle)
    st = rt.cache.get(GANG)
    return {
        "free_gpus": float(snap.free(rows)[:, col].sum()),
        "waiting": sorted(wp.info.key for wp in handle.waiting_pods() if not wp.done),
        "representative": rt.manager.representative(GANG),
        "assumed": sorted(st.assumed) if st else [],
    }


@register_plugin
class GangProbe(Plugin):
    """Records the gang's state when BeforePostFilter and PostFilter plugins start."""

    NAME = "TestGangProbe"

    def before_post_filter(self, state, pod, status, fit):
        LOG.append(("beforePostFilter:start", {"pod": pod.key, **_gang_state(self.handle)}))
        return Status()

    def post_filter(self, state, pod, fit):
        LOG.append(("postFilter:start", {"pod": pod.key, **_gang_state(self.handle)}))
        return None, Status.unschedulable("probe")


@register_plugin
class LegacyGangPostFilter(Plugin):
    """Where Koordinator put the switch: a PostFilter after preemption."""

    NAME = "TestLegacyGangPostFilter"

    def post_filter(self, state, pod, fit):
        LOG.append(("legacySwitch", {"pod": pod.key}))
        return None, Status.unschedulable("legacy")


def _profile() -> SchedulerProfile:
    return SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugins=Plugins(
            before_post_filter=PluginSet(enabled=[PluginRef(name="TestGangProbe")]),
            post_filter=PluginSet(
                enabled=[PluginRef(name="TestGangProbe"), PluginRef(name="DefaultPreemption"), PluginRef(name="TestLegacyGangPostFilter")]
            ),
        ),
    )


def _preemption(sched: Scheduler) -> Any:
    return sched.frameworks["phalanx-scheduler"].plugins["DefaultPreemption"]


def test_representative_switch_and_release_happen_before_preemption_which_acts_for_the_whole_gang() -> None:
    LOG.clear()

    async def body(client: MemoryCluster, sched: Scheduler):
        # A low-priority pod holds one GPU on n2.
        await client.create(pod("victim", gpu=1, cpu="100m", priority=0))
        assert await sched.wait_idle(timeout=30)
        assert (await bound_nodes(client))["victim"] == "n2"
        # A priority-100 gang of 4 x 1 GPU: 3 GPUs free, so w-0..w-2 wait at Permit, w-3 fails.
        await client.create(podgang("g", {"w": 4}))
        for p in members("g", "w", 4, gpu=1, cpu="100m", priority=100):
            await client.create(p)
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client), await bound_nodes(client), _preemption(sched).evictions

    bound, nodes, evictions = run_scheduler(
        body, nodes=[node("n1", gpu=2), node("n2", gpu=2)], scheduler_factory=lambda c: Scheduler(c, [_profile()])
    )
    first_fail = next(i for i, (point, d) in enumerate(LOG) if point == "beforePostFilter:start" and d["pod"] == "default/w-3")
    before, post = LOG[first_fail], LOG[first_fail + 1]
    # BeforePostFilter starts with three members waiting at Permit, holding 3 GPUs.
    assert before[1]["waiting"] == ["default/w-0", "default/w-1", "default/w-2"] and before[1]["free_gpus"] == 0.0
    # By the time the first PostFilter plugin runs, the switch and the release are done:
    # nobody of the gang waits or holds a reservation, and the failed pod is the representative.
    assert post[0] == "postFilter:start" and post[1]["pod"] == "default/w-3"
    assert post[1]["waiting"] == [] and post[1]["assumed"] == [] and post[1]["free_gpus"] == 3.0
    assert post[1]["representative"] == "default/w-3"
    # Preemption saw the gang's real need (4 GPUs: 3 free + the victim's) and succeeded, so the
    # PostFilter chain stopped there: a switch placed after it (Koordinator's) never ran.
    assert not any(p == "legacySwitch" and d["pod"] == "default/w-3" for p, d in LOG[first_fail:])
    # It evicted exactly the victim, and the whole gang then ran.
    assert evictions == 1 and "victim" not in nodes
    assert sorted(bound["g"]) == ["n1", "n1", "n2", "n2"]


def test_preemption_evicts_nothing_when_the_whole_gang_cannot_fit() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(pod("victim", gpu=1, cpu="100m", priority=0))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("g", {"w": 5}))
        for p in members("g", "w", 5, gpu=1, cpu="100m", priority=100):
            await client.create(p)
        assert await sched.wait_idle(timeout=120)
        # w-0..w-2 took the 3 free GPUs and waited; w-3 failed and is the representative.
        d = sched.diagnosis("default/w-3")
        return await bound_nodes(client), _preemption(sched).evictions, d.message()

    nodes, evictions, message = run_scheduler(body, nodes=[node("n1", gpu=2), node("n2", gpu=2)])
    assert evictions == 0 and nodes["victim"] == "n2"
    assert all(nodes[f"w-{i}"] is None for i in range(5))
    assert "preemption cannot make room for PodGang default/g (5 members): only 4/5 fit" in message


def test_higher_priority_gang_evicts_whole_lower_priority_gangs_only() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        # Two low-priority gangs of 2 fill the 4 GPUs.
        for g in ("low-a", "low-b"):
            await client.create(podgang(g, {g: 2}))
            for p in members(g, g, 2, gpu=1, cpu="100m", priority=0):
                await client.create(p)
        assert await sched.wait_idle(timeout=60)
        before = await bound_by_gang(client)
        # A high-priority gang needs 3 GPUs: one low gang is not enough, half of another is
        # not allowed, so both low gangs go.
        await client.create(podgang("high", {"high": 3}))
        for p in members("high", "high", 3, gpu=1, cpu="100m", priority=100):
            await client.create(p)
        assert await sched.wait_idle(timeout=120)
        after = await bound_by_gang(client)
        left = sorted(p.name for p in (await client.list(Pod, "default")).items)
        return before, after, left, _preemption(sched).evictions

    before, after, left, evictions = run_scheduler(body, nodes=[node("n1", gpu=2), node("n2", gpu=2)])
    assert all(all(n for n in nodes) for nodes in before.values())
    assert evictions == 4
    assert left == ["high-0", "high-1", "high-2"]
    assert all(after["high"])
    assert_no_partial_gang(after, {"high": 3})


def test_lower_priority_pods_are_never_victims_of_equal_or_lower_priority() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(pod("a", gpu=2, cpu="100m", priority=50))
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("b", gpu=2, cpu="100m", priority=50))
        assert await sched.wait_idle(timeout=30)
        return await bound_nodes(client), _preemption(sched).evictions

    nodes, evictions = run_scheduler(body, nodes=[node("n1", gpu=2)])
    assert nodes == {"a": "n1", "b": None} and evictions == 0
