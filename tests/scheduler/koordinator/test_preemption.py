"""Koordinator's core/preemption_test.go, ported: job-level preemption for a koord-scheduler
gang, on the embedded scheduler (DefaultPreemption, gang-aware, runs as PostFilter after
Coscheduling's BeforePostFilter).

Rows of Test_preemptionEvaluatorImpl_preempt, in Koordinator's setting: nodes of 32 CPUs,
pods of 16, a gang "gangA" of pending pods of high priority, existing pods of low priority.

Differences, marked in the rows:
- "preempt success": Koordinator evicts the two low-priority pods of node-1 and nominates both
  gang pods there; ours evicts two pods as well, chosen by its own order (lowest priority,
  fewest pods, newest first), so the two victims may be on different nodes.
- "already preempted": Koordinator remembers, per gang scheduling context, that preemption was
  attempted; ours remembers the victims it evicted for the gang and, while they terminate,
  answers "waiting for N preempted pod(s) to terminate" instead of evicting more.

Rows not expressible:
- "no pending pods": Koordinator's trigger pod is not in its gang cache and the gang has no
  pending pods; here the preemptor is always the failed pod plus the members its gang still
  needs, and the failed pod is itself pending.
- "job not eligible due to terminating pod": kube-scheduler's rule (a pod nominated to a node
  where a lower-priority pod is terminating waits instead of preempting) is kept here only for
  the victims the gang's own preemption evicted ("already preempted"); a terminating pod that
  some other preemption, or a user, deleted does not hold the gang back. That rule lives in
  phalanx/scheduler/plugins/preemption.py, outside this area.
- TestJobPreemptionState_addMoreDetailForStateToMarshal: the JSON of Koordinator's preemption
  debug state (its services endpoint) has no counterpart.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.clock import wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang.runtime import GangRuntime

from ..helpers import node, pod, run_scheduler
from .kit import PG_LABEL, koord_profile, koord_scheduler, make_pg

HIGH, LOW = 1000, 1
HOLD = "test.phalanx.io/hold"  # a finalizer: an evicted victim stays terminating


def _cpu_node(name: str) -> Any:
    return node(name, cpu="32", memory="64Gi", labels={"kubernetes.io/hostname": name})


def existing(name: str, on: str, priority: int = LOW, hold: bool = False) -> Pod:
    p = pod(
        name,
        cpu="16",
        memory=None,
        priority=priority,
        scheduler="koord-scheduler",
        node_selector={"kubernetes.io/hostname": on},
    )
    if hold:
        p.metadata.finalizers = [HOLD]
    return p


def pending(name: str, priority: int = HIGH, **kw: Any) -> Pod:
    return pod(
        name,
        cpu="16",
        memory=None,
        priority=priority,
        scheduler="koord-scheduler",
        labels={PG_LABEL: "ganga"},
        **kw,
    )


def _preemption(sched: Scheduler) -> Any:
    return sched.frameworks["koord-scheduler"].plugins["DefaultPreemption"]


async def _place_existing(client: MemoryCluster, sched: Scheduler, pods: list[Pod]) -> None:
    for p in pods:
        await client.create(p)
    assert await sched.wait_idle(timeout=60)
    placed = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
    assert all(placed[p.name] for p in pods), placed


async def _nodes(client: MemoryCluster) -> dict[str, str | None]:
    return {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}


def run_case(
    existing_pods: list[Pod], gang: list[Pod], *, min_member: int = 2, nodes: int = 2, **args: Any
) -> tuple[dict[str, str | None], int, str, Any]:
    """Existing pods placed, then the gang: (pod -> node, evictions, the gang's first
    member's scheduling message, the scheduler)."""

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[Any, int, str, Any]:
        await _place_existing(client, sched, existing_pods)
        await client.create(make_pg("ganga", min_member=min_member, timeout=3600))
        for p in gang:
            await client.create(p)
        assert await sched.wait_idle(timeout=300)
        d = sched.diagnosis(f"default/{gang[0].name}")
        return await _nodes(client), _preemption(sched).evictions, d.message() if d else "", sched

    return run_scheduler(
        body,
        nodes=[_cpu_node(f"node-{i}") for i in range(1, nodes + 1)],
        scheduler_factory=koord_scheduler(koord_profile(**args)),
    )


FULL = [
    existing("existing-pod-1", "node-1"),
    existing("existing-pod-2", "node-1"),
    existing("existing-pod-3", "node-2"),
    existing("existing-pod-4", "node-2"),
]


def test_preempt_already_preempted() -> None:
    """Row "already preempted": while the victims of the gang's preemption terminate, the
    gang's further failures evict nothing more and say what they wait for."""
    victims = [existing(f"existing-pod-{i}", "node-1", hold=True) for i in (1, 2)]

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[int, str, dict[str, Any], int]:
        await _place_existing(client, sched, victims)
        await client.create(make_pg("ganga", min_member=2, timeout=3600))
        for p in (pending("pending-pod-1"), pending("pending-pod-2")):
            await client.create(p)

        assert await wait_for_condition(lambda: _preemption(sched).evictions == 2, timeout=60)
        # The gang fails again while its victims terminate (retried at once here).
        rep = GangRuntime.for_handle(sched.handles["koord-scheduler"]).manager.representative(
            "coscheduling:default/ganga"
        )
        assert rep is not None
        sched.handles["koord-scheduler"].activate([rep])

        def held() -> bool:
            d = sched.diagnosis(rep)
            return d is not None and "waiting for 2 preempted pod(s) to terminate" in d.message()

        assert await wait_for_condition(held, timeout=60)
        first = _preemption(sched).evictions
        d = sched.diagnosis(rep)
        for v in victims:  # the victims finish terminating
            await client.patch(Pod, v.name, {"metadata": {"finalizers": None}}, "default")
        assert await sched.wait_idle(timeout=120)
        return first, d.message(), await _nodes(client), _preemption(sched).evictions

    first, message, nodes, total = run_scheduler(
        body, nodes=[_cpu_node("node-1")], scheduler_factory=koord_scheduler(koord_profile())
    )
    assert first == 2 and total == 2
    assert "preemption: waiting for 2 preempted pod(s) to terminate" in message
    assert nodes == {"pending-pod-1": "node-1", "pending-pod-2": "node-1"}


def test_preempt_job_not_eligible_due_to_preemption_policy() -> None:
    gang = [pending(f"pending-pod-{i}") for i in (1, 2)]
    for p in gang:
        p.spec.preemption_policy = "Never"
    nodes, evictions, message, _ = run_case(FULL, gang)
    assert evictions == 0
    assert nodes["pending-pod-1"] is None and nodes["pending-pod-2"] is None
    assert "preemption: preemptionPolicy is Never" in message


def test_preempt_unschedulableAndUnResolvable() -> None:
    """Every node fails the gang's filters for good (a selector no node matches): preemption
    cannot help and evicts nothing."""
    gang = [pending(f"pending-pod-{i}", node_selector={"zone": "nowhere"}) for i in (1, 2)]
    nodes, evictions, message, _ = run_case(FULL, gang)
    assert evictions == 0 and all(nodes[f"existing-pod-{i}"] for i in range(1, 5))
    assert nodes["pending-pod-1"] is None and "didn't match Pod's node affinity/selector" in message


def test_preempt_no_potential_victims() -> None:
    high = [
        existing(f"existing-pod-{i}", f"node-{(i + 1) // 2}", priority=HIGH) for i in range(1, 5)
    ]
    nodes, evictions, message, _ = run_case(high, [pending(f"pending-pod-{i}") for i in (1, 2)])
    assert evictions == 0 and nodes["pending-pod-1"] is None
    assert (
        "preemption: no lower-priority pods to preempt for PodGroup default/ganga (2 members)"
        in message
    )


def test_preempt_preempt_success() -> None:
    nodes, evictions, _, _ = run_case(FULL, [pending(f"pending-pod-{i}") for i in (1, 2)])
    assert evictions == 2
    assert nodes["pending-pod-1"] and nodes["pending-pod-2"]
    assert sum(1 for i in range(1, 5) if f"existing-pod-{i}" in nodes) == 2


def waiting_member_case() -> tuple[list[Pod], list[Pod]]:
    """Row "preempt success with one waiting pod" (also Koordinator #2490's scenario): node-1
    holds existing-pod-1 and -2, node-2 existing-pod-4 and the gang's pending-pod-2, which
    waits at Permit (reserved there); pending-pod-1 finds no room."""
    existing_pods = [
        existing("existing-pod-1", "node-1"),
        existing("existing-pod-2", "node-1"),
        existing("existing-pod-4", "node-2"),
    ]
    # pending-pod-2 is the older member (so it leads and is reserved first) and may only go
    # to node-2; the two members differ in shape, so the gang is placed member by member.
    gang = [
        pending("pending-pod-2", node_selector={"kubernetes.io/hostname": "node-2"}),
        pending("pending-pod-1"),
    ]
    return existing_pods, gang


def run_waiting_member_case(**args: Any) -> tuple[dict[str, str | None], int, Any]:
    existing_pods, gang = waiting_member_case()

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[Any, int, Any]:
        import asyncio

        await _place_existing(client, sched, existing_pods)
        await client.create(make_pg("ganga", min_member=2, timeout=3600))
        await client.create(gang[0])
        await asyncio.sleep(1)
        await client.create(gang[1])
        assert await sched.wait_idle(timeout=300)
        return await _nodes(client), _preemption(sched).evictions, sched

    return run_scheduler(
        body,
        nodes=[_cpu_node("node-1"), _cpu_node("node-2")],
        scheduler_factory=koord_scheduler(koord_profile(wholeGangPlacement=False, **args)),
    )


def test_preempt_preempt_success_with_one_waiting_pod() -> None:
    nodes, evictions, _ = run_waiting_member_case()
    # One victim, on node-1, as Koordinator's; the gang runs whole.
    assert evictions == 1
    assert nodes["existing-pod-4"] == "node-2"
    assert sum(1 for v in ("existing-pod-1", "existing-pod-2") if v in nodes) == 1
    assert nodes["pending-pod-1"] == "node-1" and nodes["pending-pod-2"] == "node-2"
