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

from phalanx.api.core import Affinity, Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import Plugin, PluginRef, Plugins, PluginSet, SchedulerProfile, Status, register_plugin
from phalanx.scheduler.framework.config import PluginConfig
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
    # Member-by-member placement: the whole-gang plan would see up front that the nvlink
    # members cannot all fit and fail the gang before any member waits at Permit, while
    # these tests are about what happens when a member fails with others waiting.
    return SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugin_config=[PluginConfig(name="Coscheduling", args={"wholeGangPlacement": False}),
                       # The scenarios below are laid out for spreading (the emptiest node first).
                       PluginConfig(name="NodeResourcesFit", args={"scoringStrategy": {"type": "LeastAllocated"}})],
        # The probes first at both points: as in kube, a plugin enabled only at a point
        # runs after the multiPoint (default) ones, so the points list their whole order.
        plugins=Plugins(
            before_post_filter=PluginSet(
                enabled=[PluginRef(name="TestGangProbe"), PluginRef(name="Coscheduling")], disabled=[PluginRef(name="*")]
            ),
            post_filter=PluginSet(
                enabled=[PluginRef(name=n) for n in ("TestGangProbe", "DefaultPreemption", "TestLegacyGangPostFilter",
                                                     "DynamicResources", "QueueReclaim", "GangReservation")],
                disabled=[PluginRef(name="*")],
            ),
        ),
    )


def _preemption(sched: Scheduler) -> Any:
    return sched.frameworks["phalanx-scheduler"].plugins["DefaultPreemption"]


NVLINK = {"nvlink": "true"}


def test_representative_switch_and_release_happen_before_preemption_which_acts_for_the_whole_gang() -> None:
    """n1: 3 GPUs (the emptiest node); n2: 2 nvlink GPUs, one held by a low-priority pod.
    A priority-100 gang of 4 x 1 GPU whose last two members need nvlink: 4 GPUs are free, so
    the gang starts; w-0, w-1 go to n1, w-2 takes n2's last GPU, and w-3 fails while the
    three others wait at Permit. Only evicting the low-priority pod makes room for all four."""
    LOG.clear()

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(pod("victim", gpu=1, cpu="100m", priority=0, node_selector=NVLINK))
        assert await sched.wait_idle(timeout=30)
        assert (await bound_nodes(client))["victim"] == "n2"
        await client.create(podgang("g", {"w": 4}))
        for i, p in enumerate(members("g", "w", 4, gpu=1, cpu="100m", priority=100)):
            if i >= 2:
                p.spec.node_selector = dict(NVLINK)
            await client.create(p)
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client), await bound_nodes(client), _preemption(sched).evictions

    bound, nodes, evictions = run_scheduler(
        body,
        nodes=[node("n1", gpu=3, cpu="64"), node("n2", gpu=2, cpu="8", labels=NVLINK)],
        scheduler_factory=lambda c: Scheduler(c, [_profile()]),
    )
    # The first failure of a member while others wait at Permit.
    first_fail = next(i for i, (point, d) in enumerate(LOG) if point == "beforePostFilter:start" and d["waiting"])
    before, post = LOG[first_fail], LOG[first_fail + 1]
    failed = before[1]["pod"]
    assert failed == "default/w-3"
    # BeforePostFilter starts with three members waiting at Permit, holding 3 of the 4 free GPUs.
    assert before[1]["waiting"] == ["default/w-0", "default/w-1", "default/w-2"] and before[1]["free_gpus"] == 1.0
    # By the time the first PostFilter plugin runs, the switch and the release are done:
    # nobody of the gang waits or holds a reservation, and the failed pod is the representative.
    assert post[0] == "postFilter:start" and post[1]["pod"] == failed
    assert post[1]["waiting"] == [] and post[1]["assumed"] == [] and post[1]["free_gpus"] == 4.0
    assert post[1]["representative"] == failed
    # Preemption planned for the whole gang (2 nvlink + 2 plain members: only evicting the
    # victim frees a second nvlink GPU) and succeeded, so the PostFilter chain stopped there:
    # a switch placed after it, as Koordinator's was, never ran for this failure.
    cycle = LOG[first_fail + 1 : next((i for i in range(first_fail + 1, len(LOG)) if LOG[i][0] == "beforePostFilter:start"), len(LOG))]
    assert [p for p, _ in cycle] == ["postFilter:start"]
    # It evicted exactly the victim, and the whole gang then ran.
    assert evictions == 1 and "victim" not in nodes
    assert sorted(bound["g"]) == ["n1", "n1", "n2", "n2"]
    assert nodes["w-2"] == nodes["w-3"] == "n2"


def test_preemption_evicts_nothing_when_the_whole_gang_cannot_fit() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(pod("victim", gpu=1, cpu="100m", priority=0))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("g", {"w": 5}))
        for p in members("g", "w", 5, gpu=1, cpu="100m", priority=100):
            await client.create(p)
        assert await sched.wait_idle(timeout=120)
        # The representative (w-0) fails at once: 5 GPUs needed, 3 free.
        d = sched.diagnosis("default/w-0")
        return await bound_nodes(client), _preemption(sched).evictions, d.message()

    nodes, evictions, message = run_scheduler(body, nodes=[node("n1", gpu=2), node("n2", gpu=2)])
    assert evictions == 0 and nodes["victim"] == "n2"
    assert all(nodes[f"w-{i}"] is None for i in range(5))
    assert "PodGang default/g needs 5 pods like this one, these nodes fit 3" in message
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


def test_preemption_accounts_for_the_preemptors_anti_affinity() -> None:
    """The preemptor must not share a zone with a `web` pod. Evicting only the newest GPU
    holder (on a1, next to a web pod) frees a GPU where the pod still may not go; the plan
    re-checks the filters for each set of victims, so what it evicts really makes room."""
    ZONE = "topology.kubernetes.io/zone"
    anti = Affinity(pod_anti_affinity={"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}]})

    async def body(client: MemoryCluster, sched: Scheduler):
        for name, where, extra in (("filler-b", "b1", {}), ("web", "a1", {"labels": {"app": "web"}}), ("filler-a", "a1", {})):
            gpu = 0 if name == "web" else 1
            await client.create(pod(name, gpu=gpu, cpu="100m", priority=0, node_selector={"kubernetes.io/hostname": where}, **extra))
            assert await sched.wait_idle(timeout=30)
        await client.create(pod("urgent", gpu=1, cpu="100m", priority=100, affinity=anti))
        assert await sched.wait_idle(timeout=300)
        return await bound_nodes(client), _preemption(sched).evictions

    nodes = [node(n, gpu=1, labels={"kubernetes.io/hostname": n, ZONE: n[0]}) for n in ("a1", "b1")]
    bound, evictions = run_scheduler(body, nodes=nodes)
    assert bound["urgent"] is not None and evictions >= 1
    web_zone = bound["web"][0] if bound.get("web") else None
    assert bound["urgent"][0] != web_zone


def test_preemption_honours_a_groups_required_pack_domain() -> None:
    """A gang whose group must sit in one rack: 1 GPU free in each rack is 2 GPUs, but not in
    one rack. Preemption plans the group within a rack and evicts one low-priority pod."""
    RACK = "example.com/rack"

    async def body(client: MemoryCluster, sched: Scheduler):
        for i, n in enumerate(("n1", "n2")):
            await client.create(pod(f"low-{i}", gpu=1, cpu="100m", priority=0, node_selector={"kubernetes.io/hostname": n}))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("g", {"x": 2}, group_required={"x": RACK}))
        for p in members("g", "x", 2, gpu=1, cpu="100m", priority=100):
            await client.create(p)
        assert await sched.wait_idle(timeout=300)
        return await bound_by_gang(client), await bound_nodes(client), _preemption(sched).evictions

    nodes = [node(n, gpu=2, labels={"kubernetes.io/hostname": n, RACK: f"r{n[1]}"}) for n in ("n1", "n2")]
    by_gang, bound, evictions = run_scheduler(body, nodes=nodes)
    assert evictions == 1
    assert all(by_gang["g"]) and len(set(by_gang["g"])) == 1


def test_a_victim_gang_with_a_member_above_the_preemptor_is_not_evicted_in_part() -> None:
    """Issue 21, "Gang invariants": the victim gang's members have different priorities, one
    above the preemptor's. Evicting only the lower ones would leave the gang partly running;
    the gang cannot be broken up, so nothing is evicted and the preemptor waits."""
    from ..gang.builders import member

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(podgang("mixed", {"w": 2}))
        await client.create(member("mixed", "w", 0, gpu=1, cpu="100m", priority=0))
        await client.create(member("mixed", "w", 1, gpu=1, cpu="100m", priority=200))
        assert await sched.wait_idle(timeout=60)
        before = await bound_by_gang(client)
        await client.create(pod("urgent", gpu=1, cpu="100m", priority=100))
        assert await sched.wait_idle(timeout=120)
        return before, await bound_nodes(client), _preemption(sched).evictions, \
            sched.diagnosis("default/urgent")

    before, nodes, evictions, diag = run_scheduler(body, nodes=[node("n1", gpu=2)])
    assert before == {"mixed": ["n1", "n1"]}
    assert evictions == 0
    assert nodes == {"w-0": "n1", "w-1": "n1", "urgent": None}
    assert diag is not None and "no lower-priority pods to preempt" in diag.message()


def test_two_preemptors_of_equal_priority_do_not_plan_on_the_same_victims_room() -> None:
    """kube's DefaultPreemption adds the nominated pods of at least the preemptor's priority
    to a node before it selects victims there (addNominatedPods): the room one gang's
    preemption freed is not free for the next gang, which evicts a victim of its own. Before,
    both planned on one victim's room, one bound there and the other waited for good
    ("fits without preemption; retrying")."""
    async def body(client: MemoryCluster, sched: Scheduler):
        for g in ("low-a", "low-b", "low-c"):  # three gangs of 2 fill the 6 GPUs
            await client.create(podgang(g, {g: 2}))
            for p in members(g, g, 2, gpu=1, cpu="100m", priority=0):
                await client.create(p)
        assert await sched.wait_idle(timeout=60)
        for g in ("high-a", "high-b"):  # both arrive before either preemption is done
            await client.create(podgang(g, {g: 2}))
            for p in members(g, g, 2, gpu=1, cpu="100m", priority=100):
                await client.create(p)
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client), _preemption(sched).evictions

    after, evictions = run_scheduler(
        body, nodes=[node("n1", gpu=2), node("n2", gpu=2), node("n3", gpu=2)])
    assert all(after["high-a"]) and all(after["high-b"])
    assert evictions == 4  # two whole low gangs, one per preemptor
    assert sum(1 for g in ("low-a", "low-b", "low-c") if g in after) == 1
    assert_no_partial_gang(after, {g: 2 for g in ("high-a", "high-b", "low-a", "low-b", "low-c")})


def test_evicted_victims_count_as_releasing_only_within_their_grace() -> None:
    """The room of victims still terminating is counted as being freed, but an eviction older
    than `victimGraceSeconds` is forgotten, whoever it was for (no entry outlives it)."""
    async def body(client: MemoryCluster, sched: Scheduler):
        p = _preemption(sched)
        now = p.handle.clock.now()
        p._pending["podgang:default/long-ago"] = ({"default/old-victim"}, now - 61.0)
        p._pending["podgang:default/just-now"] = ({"default/new-victim"}, now - 1.0)
        return p._releasing(), set(p._pending)

    releasing, left = run_scheduler(body, nodes=[node("n1", gpu=2)])
    assert releasing == {"default/new-victim"}
    assert left == {"podgang:default/just-now"}
