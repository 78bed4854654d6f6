"""The Scheduler end to end on a MemoryCluster: informers, retries, events, profiles."""

from __future__ import annotations

from phalanx.api.core import Event, Node, Pod
from phalanx.cluster.clock import wait_for_condition
from phalanx.scheduler import Scheduler

from .helpers import bound_nodes, node, pod, run_scheduler


async def events_of(client, name: str) -> list[Event]:
    return [e for e in (await client.list(Event, "default")).items if e.involved_object.name == name]


def test_failed_scheduling_event_and_condition_carry_per_filter_counts():
    nodes = [node(f"cpu{i}") for i in range(3)] + [
        node("tainted", gpu=8, taints=[("nvidia.com/gpu", "present", "NoSchedule")]),
        node("cordoned", gpu=8, unschedulable=True),
    ]

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        expected = (
            "0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 1 node(s) had untolerated "
            "taint(s), 1 node(s) were unschedulable."
        )
        d = sched.diagnosis("default/train")
        # The preemption plugin adds why evicting would not help.
        assert d.message().startswith(expected + " no new claims to deallocate, preemption: ")
        expected = d.message()
        assert d.plugin_counts == {"NodeResourcesFit": 3, "TaintToleration": 1, "NodeUnschedulable": 1}
        assert d.to_dict()["reasons"]["Insufficient nvidia.com/gpu"] == 3
        evs = await events_of(client, "train")
        assert [(e.reason, e.type, e.message) for e in evs] == [("FailedScheduling", "Warning", expected)]
        p = await client.get(Pod, "train", "default")
        cond = p.get_condition("PodScheduled")
        assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", expected)

    run_scheduler(body, nodes=nodes, pods=[pod("train", gpu=1)])


def test_scheduled_event_and_binding():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        assert await bound_nodes(client) == {"a": "n1"}
        evs = await events_of(client, "a")
        assert [(e.reason, e.message) for e in evs] == [("Scheduled", "Successfully assigned default/a to n1")]
        assert sched.diagnosis("default/a") is None

    run_scheduler(body, nodes=[node("n1")], pods=[pod("a")])


def test_unschedulable_pod_is_scheduled_when_a_fitting_node_arrives():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        assert await bound_nodes(client) == {"big": None}
        attempts = sched.attempts
        await client.create(node("small-2", cpu=2))  # cannot help: the queueing hint skips it
        assert await sched.wait_idle(timeout=30)
        assert sched.attempts == attempts
        await client.create(node("large", cpu=32))
        assert await wait_for_condition(lambda: sched.scheduled == 1, timeout=30)
        assert await bound_nodes(client) == {"big": "large"}

    run_scheduler(body, nodes=[node("small", cpu=2)], pods=[pod("big", cpu="16")])


def test_deleting_a_bound_pod_frees_room_for_a_pending_one():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        placed = await bound_nodes(client)
        assert sorted(v is None for v in placed.values()) == [False, False, True]
        waiting = next(k for k, v in placed.items() if v is None)
        victim = next(k for k, v in placed.items() if v is not None)
        await client.delete(Pod, victim, "default")
        assert await wait_for_condition(lambda: sched.scheduled == 3, timeout=30)
        assert (await bound_nodes(client))[waiting] == "n1"

    run_scheduler(body, nodes=[node("n1", cpu=4)], pods=[pod(f"p{i}", cpu="2") for i in range(3)])


def test_gated_pod_waits_for_gate_removal():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        assert await bound_nodes(client) == {"g": None}
        assert sched.queue.counts()["gated"] == 1
        assert sched.attempts == 0  # never entered a cycle
        p = await client.get(Pod, "g", "default")
        p.remove_gate("example.com/hold")
        await client.update(p)
        assert await wait_for_condition(lambda: sched.scheduled == 1, timeout=30)

    run_scheduler(body, nodes=[node("n1")], pods=[pod("g", gates=["example.com/hold"])])


def test_each_backend_scheduler_name_has_a_profile_and_others_are_ignored():
    names = ["default-scheduler", "kai-scheduler", "volcano", "koord-scheduler",
             "scheduler-plugins-scheduler", "phalanx-scheduler"]
    pods = [pod(f"p-{n}", scheduler=n) for n in names] + [pod("foreign", scheduler="someone-else")]

    async def body(client, sched):
        assert sorted(sched.frameworks) == sorted(names)
        assert await sched.wait_idle(timeout=30)
        placed = await bound_nodes(client)
        assert placed.pop("foreign") is None
        assert all(placed.values())

    run_scheduler(body, nodes=[node("n1"), node("n2")], pods=pods)


def test_higher_priority_pods_are_scheduled_first():
    # One slot; the high-priority pod created last must get it.
    pods = [pod(f"low{i}", cpu="4", priority=1) for i in range(3)] + [pod("high", cpu="4", priority=100)]

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        placed = await bound_nodes(client)
        assert placed["high"] == "n1"
        assert sum(v is not None for v in placed.values()) == 1


    run_scheduler(body, nodes=[node("n1", cpu=4)], pods=pods)


def test_node_removal_and_return():
    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        assert await bound_nodes(client) == {"a": "n1"}
        await client.delete(Node, "n1")
        assert await wait_for_condition(lambda: len(sched.cache.snapshot) == 0, timeout=5)
        await client.create(pod("b"))
        assert await sched.wait_idle(timeout=30)
        assert (await bound_nodes(client))["b"] is None
        assert sched.diagnosis("default/b").message().startswith("0/0 nodes are available.")
        await client.create(node("n2"))
        assert await wait_for_condition(lambda: sched.scheduled == 2, timeout=30)
        assert (await bound_nodes(client))["b"] == "n2"

    run_scheduler(body, nodes=[node("n1")], pods=[pod("a")])


def test_many_pods_fill_nodes_exactly_and_deterministically():
    def run() -> dict[str, str | None]:
        async def body(client, sched):
            assert await sched.wait_idle(timeout=120)
            return await bound_nodes(client)

        return run_scheduler(body, nodes=[node(f"n{i}", cpu=4) for i in range(10)], pods=[pod(f"p{i:02}", cpu="1") for i in range(45)])

    first = run()
    assert sum(v is not None for v in first.values()) == 40
    counts: dict[str, int] = {}
    for v in first.values():
        if v:
            counts[v] = counts.get(v, 0) + 1
    assert set(counts.values()) == {4}
    assert run() == first


def test_room_freed_for_a_nominated_pod_is_not_taken_by_lower_priority_pods():
    from phalanx.scheduler.framework import PluginRef, Plugins, PluginSet, PodInfo, SchedulerProfile

    # Preemption off: the test nominates by hand, as a PostFilter plugin would.
    no_preemption = SchedulerProfile(plugins=Plugins(post_filter=PluginSet(disabled=[PluginRef(name="*")])))

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        assert await bound_nodes(client) == {"filler": "n1"}
        await client.create(pod("vip", cpu="4", priority=100))
        assert await sched.wait_idle(timeout=30)
        sched.nominate(PodInfo(await client.get(Pod, "vip", "default")), "n1")
        await client.create(pod("sneaky", cpu="4", priority=1))
        assert await sched.wait_idle(timeout=30)
        await client.delete(Pod, "filler", "default")  # the victim leaves
        assert await wait_for_condition(lambda: sched.scheduled == 2, timeout=60)
        assert await sched.wait_idle(timeout=60)
        placed = await bound_nodes(client)
        assert placed == {"vip": "n1", "sneaky": None}
        assert (await client.get(Pod, "vip", "default")).status.nominated_node_name == "n1"
        assert len(sched.nominator) == 0  # used up by the bind

    run_scheduler(body, nodes=[node("n1", cpu=4)], pods=[pod("filler", cpu="4")],
                  scheduler_factory=lambda c: Scheduler(c, [no_preemption]))


def test_nominated_room_is_reported_when_it_blocks_a_pod():
    from phalanx.scheduler.framework import PluginRef, Plugins, PluginSet, PodInfo, SchedulerProfile

    no_preemption = SchedulerProfile(plugins=Plugins(post_filter=PluginSet(disabled=[PluginRef(name="*")])))

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        sched.nominate(PodInfo(pod("vip", cpu="4", priority=100)), "n1")
        await client.create(pod("low", cpu="4", priority=1))
        assert await sched.wait_idle(timeout=30)
        assert (await bound_nodes(client))["low"] is None
        d = sched.diagnosis("default/low")
        assert d.message() == "0/1 nodes are available: 1 node(s) had room reserved for nominated pods of higher priority."

    run_scheduler(body, nodes=[node("n1", cpu=4)], scheduler_factory=lambda c: Scheduler(c, [no_preemption]))


def _nominated_then_retried(terminating: bool):
    """vip is nominated to n1 (by hand, preemption off), where filler (lower priority) sits,
    terminating or not; vip is then retried and fails again. Returns vip's nominated node in
    the scheduler and in its status afterwards."""
    from phalanx.scheduler.framework import PluginRef, Plugins, PluginSet, PodInfo, SchedulerProfile

    no_preemption = SchedulerProfile(plugins=Plugins(post_filter=PluginSet(disabled=[PluginRef(name="*")])))
    filler = pod("filler", cpu="4", priority=1)
    filler.metadata.finalizers = ["test.phalanx.dev/hold"]  # a delete leaves it terminating

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("vip", cpu="4", priority=100))
        assert await sched.wait_idle(timeout=30)
        sched.nominate(PodInfo(await client.get(Pod, "vip", "default")), "n1")
        if terminating:
            await client.delete(Pod, "filler", "default")
        sched.queue.activate(["default/vip"])
        assert await sched.wait_idle(timeout=30)
        assert (await bound_nodes(client))["vip"] is None
        return (sched.nominator.nominated_node("default/vip"),
                (await client.get(Pod, "vip", "default")).status.nominated_node_name)

    return run_scheduler(body, nodes=[node("n1", cpu=4)], pods=[filler],
                         scheduler_factory=lambda c: Scheduler(c, [no_preemption]))


def test_a_nominated_pod_that_fails_again_with_nothing_leaving_its_node_loses_the_nomination():
    """kube-scheduler's preemption clears the nomination when it finds no candidates: room
    kept for a pod that cannot use it would hold off every pod of its priority or lower for
    good (a reclaimer nominated next to a GangReservation deadlocked both)."""
    assert _nominated_then_retried(terminating=False) == (None, None)


def test_a_nominated_pod_keeps_its_node_while_a_lower_priority_pod_there_terminates():
    """kube's PodEligibleToPreemptOthers: a terminating lower-priority pod on the nominated
    node means the room is still coming; the nomination stays."""
    assert _nominated_then_retried(terminating=True) == ("n1", "n1")


def _group_nominated_then_retried(terminating: bool):
    """vip and mate are nominated as one group (a gang's members): vip to n1, where filler
    (lower priority) sits, terminating or not, and mate to the empty n2. vip is retried and
    fails again. Returns both nominations in the scheduler afterwards."""
    from phalanx.scheduler.framework import PluginRef, Plugins, PluginSet, PodInfo, SchedulerProfile

    no_preemption = SchedulerProfile(plugins=Plugins(post_filter=PluginSet(disabled=[PluginRef(name="*")])))
    filler = pod("filler", cpu="4", priority=1)
    filler.metadata.finalizers = ["test.phalanx.dev/hold"]  # a delete leaves it terminating

    async def body(client, sched):
        assert await sched.wait_idle(timeout=30)
        await client.create(pod("vip", cpu="8", priority=100))  # fits nowhere
        assert await sched.wait_idle(timeout=30)
        sched.nominate(PodInfo(await client.get(Pod, "vip", "default")), "n1", "gang")
        sched.nominate(PodInfo(pod("mate", cpu="4", priority=100)), "n2", "gang")
        if terminating:
            await client.delete(Pod, "filler", "default")
        sched.queue.activate(["default/vip"])
        assert await sched.wait_idle(timeout=30)
        return (sched.nominator.nominated_node("default/vip"),
                sched.nominator.nominated_node("default/mate"))

    return run_scheduler(body, nodes=[node("n1", cpu=4), node("n2", cpu=4)], pods=[filler],
                         scheduler_factory=lambda c: Scheduler(c, [no_preemption]))


def test_a_gangs_nominations_are_kept_together_while_any_of_its_room_is_still_coming():
    """mate's node n2 has nothing leaving, yet it keeps its room while n1's victim
    terminates: the gang needs both."""
    assert _group_nominated_then_retried(terminating=True) == ("n1", "n2")


def test_a_gangs_nominations_are_released_together_once_nothing_is_leaving():
    """A member fails again with nothing left to free on any of the group's nodes: the whole
    group's room is released, not only the failed member's (mate was never retried)."""
    assert _group_nominated_then_retried(terminating=False) == (None, None)


def test_a_bound_pod_change_is_named_by_what_placement_depends_on():
    from phalanx.scheduler.framework import ActionType, PodInfo
    from phalanx.scheduler.scheduler import assigned_pod_change

    def change(cpu: str, app: str) -> ActionType:
        return assigned_pod_change(before, PodInfo(pod("a", cpu=cpu, labels={"app": app})))

    before = PodInfo(pod("a", cpu="2", labels={"app": "x"}))
    assert change("2", "x") == 0
    assert change("2", "y") == ActionType.UPDATE_POD_LABEL
    assert change("1", "x") == ActionType.UPDATE_POD_SCALE_DOWN
    assert change("4", "x") == 0  # more requests free nothing
    assert change("1", "y") == ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_SCALE_DOWN


def test_a_pod_info_keeps_its_requests_only_across_versions_with_the_same_request_inputs():
    from phalanx.cluster.model_patch import patched
    from phalanx.scheduler.framework import ActionType, PodInfo
    from phalanx.scheduler.scheduler import pending_pod_change

    gated = pod("a", cpu="2", gates=["g"])
    before = PodInfo(gated)
    ungated = patched(gated, {"spec": {"schedulingGates": None}})  # shares the containers
    info = PodInfo(ungated, like=before)
    assert info.requests is before.requests and info.score_requests is before.score_requests
    assert pending_pod_change(gated, ungated, info, before) == (
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    smaller = patched(gated, {"spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}})
    info = PodInfo(smaller, like=before)
    assert info.requests is not before.requests and info.requests["cpu"] < before.requests["cpu"]
    assert pending_pod_change(gated, smaller, info, before) == (
        pending_pod_change(gated, smaller, PodInfo(smaller)))
    assert PodInfo(pod("a", cpu="3"), like=before).requests != before.requests
    # As listed or decoded from the wire: nothing shared, the inputs equal.
    info = PodInfo(ungated.copy_deep(), like=before)
    assert info.requests is before.requests and info.score_requests is before.score_requests
    # The same init container's resources, but now a sidecar (restartPolicy Always): it runs
    # beside the app containers, so the pod asks for more.
    init = {"name": "s", "image": "i", "resources": {"requests": {"cpu": "1"}}}
    with_init = PodInfo(patched(gated, {"spec": {"initContainers": [init]}}))
    sidecar = patched(gated, {"spec": {"initContainers": [{**init, "restartPolicy": "Always"}]}})
    info = PodInfo(sidecar, like=with_init)
    assert info.requests is not with_init.requests
    assert info.requests == PodInfo(sidecar).requests != with_init.requests


def test_an_unscheduled_pod_change_names_every_property_that_changed():
    from phalanx.api.core import Toleration
    from phalanx.scheduler.framework import ActionType, PodInfo
    from phalanx.scheduler.scheduler import pending_pod_change

    def change(old: Pod, new: Pod) -> ActionType:
        return pending_pod_change(old, new, PodInfo(new))

    base = pod("a", cpu="2", gates=["g"], labels={"app": "x"})
    assert change(base, pod("a", cpu="2", gates=["g"], labels={"app": "x"},
                            node_selector={"z": "1"})) == ActionType.UPDATE_OTHER
    assert change(base, pod("a", cpu="2", labels={"app": "y"})) == (
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED | ActionType.UPDATE_POD_LABEL)
    tolerant = pod("a", cpu="1", gates=["g"], labels={"app": "x"},
                   tolerations=[Toleration(key="k", operator="Exists")])
    assert change(base, tolerant) == (
        ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_SCALE_DOWN)
