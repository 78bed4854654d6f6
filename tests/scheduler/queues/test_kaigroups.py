"""Which pods KAI's queues hold and how preemptible they are (phalanx/scheduler/queues/
kai_groups.py), and Volcano's preemptable, as the embedded scheduler applies them:

- a profile standing in for a scheduler without KAI queues (volcano, koord-scheduler,
  default-scheduler, scheduler-plugins) is outside the queues, whatever KAI label its pods
  carry (the peer would not read it);
- explicit preemptibility (the kai.scheduler/preemptibility label; a kai-scheduler pod's
  PodGroup spec.preemptibility) wins over the priority rule, for the quota rule and as a
  victim (KAI pkg/common/podgroup/preemptible.go, preempt.go skipping non-preemptible jobs);
- Volcano's volcano.sh/preemptable "false" keeps a volcano pod from being a victim.
"""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api import labels, registry
from phalanx.api.core import Pod, PriorityClass
from phalanx.api.queue import queue_dict
from phalanx.api.scheduling import KaiPodGroup
from phalanx.scheduler.queues.kai_groups import (
    explicit_preemptibility,
    reads_kai_queues,
    volcano_preemptable,
)

from ..helpers import bound_nodes, node, pod, run_scheduler

QUEUE = labels.LABEL_KAI_QUEUE
PREEMPTIBILITY = labels.LABEL_KAI_PREEMPTIBILITY
ALL = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def _queue(gpu: dict) -> object:
    return registry.from_dict(queue_dict("team-a", gpu=gpu, cpu=ALL, memory=ALL))


def _reason(p: Pod) -> str:
    return next((c.message or "" for c in p.status.conditions if c.type == "PodScheduled"), "")


async def _settle(client, sched, *pods: Pod) -> dict[str, Pod]:
    for p in pods:
        await client.create(p)
        await sched.wait_idle()
    await sched.wait_idle()
    return {p.name: p for p in (await client.list(Pod, "default")).items}


def test_who_reads_kai_queues() -> None:
    assert reads_kai_queues("phalanx-scheduler") and reads_kai_queues("kai-scheduler")
    assert reads_kai_queues("my-own-profile")
    for name in ("volcano", "koord-scheduler", "default-scheduler", "scheduler-plugins-scheduler"):
        assert not reads_kai_queues(name)


@pytest.mark.parametrize(("value", "expected"), [
    ("false", False), ("False", False), ("0", False), ("nope", False),  # unreadable: false
    ("true", True), ("1", True), (None, True)])
def test_volcano_preemptable_as_volcano_parses_it(value: str | None, expected: bool) -> None:
    ann = {labels.VOLCANO_PREEMPTABLE: value} if value is not None else {}
    assert volcano_preemptable(pod("p", scheduler="volcano", annotations=ann)) is expected
    # The annotation goes before the label.
    both = pod("p", scheduler="volcano", annotations={labels.VOLCANO_PREEMPTABLE: "true"},
               labels={labels.VOLCANO_PREEMPTABLE: "false"})
    assert volcano_preemptable(both)


def test_explicit_preemptibility_from_the_label_only_valid_values() -> None:
    for value, expected in (("preemptible", True), ("non-preemptible", False), ("Never", None)):
        assert explicit_preemptibility(pod("p", labels={PREEMPTIBILITY: value}), None) is expected


@pytest.mark.parametrize("scheduler", ["volcano", "koord-scheduler", "default-scheduler"])
def test_a_kai_queue_label_does_not_hold_another_schedulers_pods(scheduler: str) -> None:
    """B8: the queue's 8-GPU limit holds phalanx-scheduler's second pod, not theirs."""
    async def body(client, sched) -> tuple[dict, dict]:
        await client.create(_queue({"quota": 8, "limit": 8, "overQuotaWeight": 1}))
        mk = [pod(f"{scheduler[:4]}-{i}", gpu=8, scheduler=scheduler, labels={QUEUE: "team-a"})
              for i in range(2)]
        px = [pod(f"px-{i}", gpu=8, labels={QUEUE: "team-a"}) for i in range(2)]
        return await _settle(client, sched, *mk), await _settle(client, sched, *px)

    theirs, ours = run_scheduler(body, nodes=[node(f"n{i}", gpu=8) for i in range(4)])
    assert all(p.spec.node_name for p in theirs.values() if not p.name.startswith("px-"))
    assert ours["px-0"].spec.node_name and not ours["px-1"].spec.node_name
    assert "8 of its 8-GPU limit in use" in _reason(ours["px-1"])


@pytest.mark.parametrize(("priority", "label", "both_run"), [
    (0, "non-preemptible", False),   # explicitly non-preemptible: within the quota only
    (200, "preemptible", True),      # explicitly preemptible: may go over quota
    (200, None, False),              # the priority rule: 200 is non-preemptible
    (0, None, True)])
def test_explicit_preemptibility_over_the_priority_for_the_quota(
        priority: int, label: str | None, both_run: bool) -> None:
    async def body(client, sched) -> dict:
        await client.create(_queue({"quota": 8, "limit": -1, "overQuotaWeight": 1}))
        extra = {PREEMPTIBILITY: label} if label else {}
        return await _settle(client, sched, *(
            pod(f"np-{i}", gpu=8, priority=priority, labels={QUEUE: "team-a", **extra})
            for i in range(2)))

    pods = run_scheduler(body, nodes=[node(f"n{i}", gpu=8) for i in range(2)])
    assert bool(pods["np-1"].spec.node_name) is both_run
    if not both_run:
        assert "non-preemptible workloads hold 8 of its 8-GPU quota" in _reason(pods["np-1"])


def _victim_run(victim: Pod, preemptor: Pod, *objs: object) -> dict[str, Pod]:
    async def body(client, sched) -> dict:
        await client.create(PriorityClass.model_validate({"metadata": {"name": "x"}, "value": 1}))
        for o in objs:
            await client.create(o)
        await _settle(client, sched, victim)
        return await _settle(client, sched, preemptor)

    return run_scheduler(body, nodes=[node("n0", gpu=8)])


@pytest.mark.parametrize(("label", "preempted"), [("non-preemptible", False), (None, True)])
def test_a_non_preemptible_job_is_no_victim(label: str | None, preempted: bool) -> None:
    extra = {PREEMPTIBILITY: label} if label else {}
    pods = _victim_run(
        pod("low", gpu=8, priority=10, labels={QUEUE: "team-a", **extra}),
        pod("high", gpu=8, priority=1000, labels={QUEUE: "team-a"}),
        _queue(ALL))
    assert bool(pods["high"].spec.node_name) is preempted
    assert ("low" not in pods or not pods["low"].spec.node_name) is preempted


@pytest.mark.parametrize(("preemptibility", "preempted"), [("non-preemptible", False),
                                                           (None, True)])
def test_a_kai_podgroups_preemptibility_decides_for_kai_scheduler_pods(
        preemptibility: str | None, preempted: bool) -> None:
    """A3: the PodGroup's spec.preemptibility (as KAI reads it), not the pods' label."""
    def kai_pod(name: str, priority: int) -> Pod:
        return pod(name, gpu=8, priority=priority, scheduler="kai-scheduler",
                   annotations={labels.ANNOTATION_KAI_POD_GROUP: name})

    def group(name: str, value: str | None) -> KaiPodGroup:
        spec = {"queue": "team-a", "minMember": 1}
        if value:
            spec["preemptibility"] = value
        return KaiPodGroup.model_validate({"metadata": {"name": name, "namespace": "default"},
                                           "spec": spec})

    pods = _victim_run(kai_pod("low", 10), kai_pod("high", 1000), _queue(ALL),
                       group("low", preemptibility), group("high", None))
    assert bool(pods["high"].spec.node_name) is preempted


@pytest.mark.parametrize(("value", "preempted"), [("false", False), ("true", True)])
def test_volcano_preemptable_false_is_no_victim(value: str, preempted: bool) -> None:
    """A10, with a KAI queue in the cluster (the queue plugins active)."""
    pods = _victim_run(
        pod("low", gpu=8, priority=10, scheduler="volcano",
            annotations={labels.VOLCANO_PREEMPTABLE: value}),
        pod("high", gpu=8, priority=1000, scheduler="volcano"),
        _queue(ALL))
    assert bool(pods["high"].spec.node_name) is preempted


@pytest.mark.parametrize(("annotations", "pod_labels", "says"), [
    ({"gpu-fraction": "0.5"}, {}, "metadata.annotations[gpu-fraction] ('0.5'): KAI GPU sharing"),
    ({"gpu-memory": "40000"}, {}, "metadata.annotations[gpu-memory] ('40000'): KAI GPU sharing"),
    ({}, {labels.LABEL_KAI_NODE_POOL: "pool-x"}, "kai.scheduler/node-pool 'pool-x'"),
])
def test_the_kai_stand_in_refuses_what_it_does_not_model(
        annotations: dict, pod_labels: dict, says: str) -> None:
    async def body(client, sched) -> dict:
        await client.create(_queue(ALL))
        return await _settle(client, sched, pod(
            "frac", scheduler="kai-scheduler", annotations=annotations,
            labels={QUEUE: "team-a", **pod_labels}))

    pods = run_scheduler(body, nodes=[node("n0", gpu=8)])
    assert not pods["frac"].spec.node_name
    assert says in _reason(pods["frac"])
    assert "phalanx-scheduler standing in for kai-scheduler" in _reason(pods["frac"])


def test_values_kai_does_not_read_are_not_refused() -> None:
    """KAI ignores a gpu-fraction outside (0, 1]: so does the stand-in."""
    async def body(client, sched) -> dict:
        await client.create(_queue(ALL))
        await _settle(client, sched, pod("a", scheduler="kai-scheduler",
                                         annotations={"gpu-fraction": "2"}, labels={QUEUE: "team-a"}))
        return await bound_nodes(client)

    assert run_scheduler(body, nodes=[node("n0", gpu=8)])["a"] == "n0"


async def _running_on(client, p: Pod, node_name: str) -> None:  # type: ignore[no-untyped-def]
    """`p` bound to `node_name` and Running since now, as the kubelet reports it."""
    p.spec.node_name = node_name
    p = await client.create(p)
    p.status.start_time = client.clock.now_dt()
    p.status.phase = "Running"
    await client.update_status(p)


def test_reclaim_says_when_the_only_over_share_jobs_are_protected_by_min_runtime() -> None:
    """Queue b (reclaimMinRuntime 10m) holds both nodes, 16 GPUs against a fair share of 8;
    queue a's job waits, and its reason says why and for how long, not "no job over its fair
    share"; when the protection ends it is tried again, and reclaims (not at the next periodic
    retry of unschedulable pods, and the scheduler is not idle while that is due)."""
    async def body(client, sched) -> tuple[Pod, Pod, float, float]:
        share = {"quota": 8, "limit": -1, "overQuotaWeight": 1}
        await client.create(registry.from_dict(queue_dict("a", gpu=share, cpu=ALL, memory=ALL)))
        b = queue_dict("b", gpu=share, cpu=ALL, memory=ALL)
        b["spec"]["reclaimMinRuntime"] = "10m"
        await client.create(registry.from_dict(b))
        for i in range(2):
            await _running_on(client, pod(f"b-{i}", gpu=8, labels={QUEUE: "b"}), f"n{i}")
        await sched.wait_idle()
        start = client.clock.monotonic()
        await client.create(pod("a-0", gpu=8, labels={QUEUE: "a"}))
        await asyncio.sleep(60)
        waiting = await client.get(Pod, "a-0", "default")
        idle_early = sched.is_idle()
        assert await sched.wait_idle(timeout=3600)
        placed = await client.get(Pod, "a-0", "default")
        return waiting, placed, float(idle_early), client.clock.monotonic() - start

    waiting, placed, idle_early, took = run_scheduler(
        body, nodes=[node(f"n{i}", gpu=8) for i in range(2)])
    assert not idle_early  # the retry at the protection's end is still due
    assert placed.spec.node_name  # b's job reclaimed once its 10 minutes were up
    assert 600 <= took < 660, took  # then, not at the next 5-minute flush after it
    assert not waiting.spec.node_name
    why = _reason(waiting)
    assert "reclaim for queue a: the only jobs over their queue's fair share are protected: " \
           "queue b's run within their minimum runtime (reclaimMinRuntime 10m0s); the first " \
           "may be reclaimed in " in why, why
    assert "no job of a queue over its fair share" not in why


def test_preemption_says_its_victims_are_protected_and_retries_when_that_ends() -> None:
    """A low-priority job of queue a runs on the only node, within the queue's
    preemptMinRuntime of 10m; a high-priority job of the same queue waits. Its reason says
    the lower-priority pod is protected and for how long (not that there is none), and it
    preempts once the protection ends."""
    async def body(client, sched) -> tuple[Pod, Pod, float]:
        q = queue_dict("a", gpu=ALL, cpu=ALL, memory=ALL)
        q["spec"]["preemptMinRuntime"] = "10m"
        await client.create(registry.from_dict(q))
        await _running_on(client, pod("low", gpu=8, priority=10, labels={QUEUE: "a"}), "n0")
        await sched.wait_idle()
        start = client.clock.monotonic()
        await client.create(pod("high", gpu=8, priority=1000, labels={QUEUE: "a"}))
        await asyncio.sleep(60)
        waiting = await client.get(Pod, "high", "default")
        assert await sched.wait_idle(timeout=3600)
        pods = {p.name: p for p in (await client.list(Pod, "default")).items}
        return waiting, pods.get("low"), client.clock.monotonic() - start

    waiting, low, took = run_scheduler(body, nodes=[node("n0", gpu=8)])
    why = _reason(waiting)
    assert "no lower-priority pods to preempt for default/high (1 lower-priority pod(s) " \
           "protected: not preemptible, or within their minimum runtime; the first protection " \
           "ends in 10m0s)" in why, why
    assert low is None or low.metadata.deletion_timestamp is not None  # preempted then
    assert 600 <= took < 660, took
