"""kube-scheduler 1.36's gangscheduling/gangscheduling_test.go, ported row by row (ids are
kube's row names) against the Coscheduling plugin of the default-scheduler profile, which
gang-schedules kube's Workload API (standalone scheduling.k8s.io/v1alpha2 PodGroups, pods
naming theirs with `spec.schedulingGroup.podGroupName`). Also ported: the tests of what the
plugin is built on, helper/podgroup_test.go (TestMatchingSchedulingGroup) and
backend/cache/podgroupstate_test.go (the pod group state PreEnqueue and Permit count from).

As kube's tests feed the PodGroup informer store and the scheduler cache by hand, these feed
the plugin's gang cache by hand (what the gang runtime's informer handlers do), then call the
plugin's extension points; pods waiting at Permit are parked through the framework's
`run_permit`, so the plugin's Allow reaches them.

How kube's facts read here:
- once minCount pods exist kube's PreEnqueue admits every member; ours admits one
  representative per gang at a time (the others wait gated, WaitingForRepresentative, and
  are activated one after the other from Reserve). Kube's rows only ask about p1, which is
  the representative (first in order: larger, older, then by key);
- a PreEnqueue rejection is UnschedulableAndUnresolvable in both; the messages are our own
  (GangNotFound / GangIncomplete with counts), so rows check the code and what the message
  names (the pod group, the counts);
- Permit's Wait carries kube's 5-minute timeout (default-scheduler's 300 s), counted from the
  gang's first waiting member (kube arms a full 5 minutes per pod);
- kube activates the gang's unscheduled pods at Permit; we activate the next member at
  Reserve (the representative hand-over, `CycleState.pods_to_activate`). Kube's row asserts
  `wantActivatedPods: [p3]` but its runner returns before comparing on Wait; it is checked
  here;
- "allowed" is the waiting pod resolved with success (kube: no longer in the waiting map);
- queueing hints: a pod ADD is the Coscheduling registration's (its `targets` names only the
  gang's representative; the row's target is that pod). Its hint queues the pod when its gang
  can now be scheduled, so the Pod-added rows give the target's pod group minCount 2 (kube's
  rows have none: kube queues on any matching pod and PreEnqueue rejects again until the
  quorum is there). A PodGroup ADD is no registration of ours: the gang cache activates the
  representative when the object arrives and completes its gang; "Queue" is that activation.

Not ported:
- "final gang pod arrives at Permit during pod group scheduling cycle": Phalanx has no pod
  group scheduling cycle (kube 1.36 schedules a whole PodGroup in one cycle, Permit then
  reading a snapshot of the pod group state); Permit always reads the live gang cache, which
  the row before covers.
- TestPodGroupState_Clone, and the snapshot half of TestPodGroupState_ScheduledPods: the pod
  group state snapshot only exists for that cycle; the live half is ported.
Out of scope (no GangScheduling plugin test): schedule_one_podgroup_test.go (the pod group
cycle), podgrouppodscount/ (placement scoring of that cycle), preemption/podgrouppreemption
(workload-aware preemption).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Pod, PodSpec
from phalanx.api.pod import PodSchedulingGroup
from phalanx.api.workloads import (
    PodGroupSpec,
    PodGroupTemplateReference,
    PodGroupV1Alpha2,
    WorkloadPodGroupTemplateReference,
    gang_policy,
)
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.config import COSCHEDULING
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import POD, ActionType, QueueingHint
from phalanx.scheduler.gang.defaults import KUBE_GANG_PERMIT_TIMEOUT

NODE = "some-node"


# --- builders: kube's st.MakePod().PodGroupName() and st.MakePodGroup() ----------------------


def pod(name: str, pod_group: str | None = None, *, namespace: str = "default",
        node_name: str | None = None) -> Pod:
    """A default-scheduler pod (uid = name, as kube's rows set it) in `pod_group`."""
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace, uid=name),
        spec=PodSpec(
            containers=[Container(name="c", image="pause")],
            scheduler_name=labels.SCHEDULER_DEFAULT,
            scheduling_group=PodSchedulingGroup(pod_group_name=pod_group) if pod_group else None,
            node_name=node_name,
        ),
    )


def podgroup(name: str, min_count: int | None, *, namespace: str = "default",
             template: tuple[str, str] = ("t", "w")) -> PodGroupV1Alpha2:
    """A PodGroup of `gang.minCount` min_count, or of the `basic` policy when None."""
    ref = WorkloadPodGroupTemplateReference(pod_group_template_name=template[0],
                                            workload_name=template[1])
    return PodGroupV1Alpha2(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodGroupSpec(pod_group_template_ref=PodGroupTemplateReference(workload=ref),
                          scheduling_policy=gang_policy(min_count or 0)),
    )


class Env:
    """A default-scheduler profile's Coscheduling plugin with an empty gang cache."""

    def __init__(self) -> None:
        self.sched = Scheduler(MemoryCluster())
        self.handle = self.sched.handles[labels.SCHEDULER_DEFAULT]
        self.framework: Any = self.handle.framework
        self.plugin: Any = self.framework.plugins[COSCHEDULING]
        self.cache = self.plugin.cache
        self.source = next(s for s in self.cache.sources_for(labels.SCHEDULER_DEFAULT)
                           if getattr(s, "kind", None) is PodGroupV1Alpha2)

    def add_pod_groups(self, *pgs: PodGroupV1Alpha2) -> None:
        for pg in pgs:
            self.cache.set_object(self.source, pg)

    def add_pods(self, *pods: Pod) -> None:
        for p in pods:
            self.cache.add_pod(p)


# --- Test_isSchedulableAfterPodAdded ----------------------------------------------------------


def pod_added_hint(env: Env, target: Pod, added: Pod) -> QueueingHint:
    """What the Pod ADD registration answers for `target` (held at PreEnqueue) when `added`
    is created: QUEUE only if it names the target and its hint agrees."""
    env.add_pods(target)
    assert not env.plugin.pre_enqueue(PodInfo(target)).is_success
    env.add_pods(added)  # the gang runtime's pod handler runs before the queue's
    reg = next(r for r in env.plugin.events_to_register()
               if r.event.resource == POD and r.event.action & ActionType.ADD)
    found = reg.targets(None, added) if reg.targets is not None else None
    if found is not None and PodInfo(target).key not in found:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if reg.hint is None else reg.hint(PodInfo(target), None, added)


POD_ADDED_ROWS = [
    ("add a newPod which matches the pod's scheduling group",
     pod("p", "pg"), pod("q", "pg"), QueueingHint.QUEUE),
    ("add a newPod which doesn't match the pod's namespace",
     pod("p", "pg"), pod("q", "pg", namespace="foo"), QueueingHint.QUEUE_SKIP),
    ("add a newPod which doesn't match the pod's pod group name",
     pod("p", "pg1"), pod("q", "pg2"), QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize("target,added,expected", [r[1:] for r in POD_ADDED_ROWS],
                         ids=[r[0] for r in POD_ADDED_ROWS])
def test_is_schedulable_after_pod_added(target: Pod, added: Pod, expected: QueueingHint) -> None:
    env = Env()
    group = target.spec.scheduling_group
    assert group is not None
    env.add_pod_groups(podgroup(group.pod_group_name, 2))  # see the module docstring
    assert pod_added_hint(env, target, added) == expected


# --- Test_isSchedulableAfterPodGroupAdded -----------------------------------------------------


POD_GROUP_ADDED_ROWS = [
    ("add a pod group which matches the pod's pod group name",
     pod("p", "pg"), podgroup("pg", 1), QueueingHint.QUEUE),
    ("add a pod group which doesn't match the pod's scheduling group name",
     pod("p", "pg1"), podgroup("pg2", 1), QueueingHint.QUEUE_SKIP),
    ("add a pod group which doesn't match the pod's scheduling group namespace",
     pod("p", "pg", namespace="ns1"), podgroup("pg", 1, namespace="ns2"), QueueingHint.QUEUE_SKIP),
]


@pytest.mark.parametrize("target,added,expected", [r[1:] for r in POD_GROUP_ADDED_ROWS],
                         ids=[r[0] for r in POD_GROUP_ADDED_ROWS])
def test_is_schedulable_after_pod_group_added(target: Pod, added: PodGroupV1Alpha2,
                                              expected: QueueingHint) -> None:
    env = Env()
    env.add_pods(target)
    held = env.plugin.pre_enqueue(PodInfo(target))
    assert held.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    activated: list[str] = []
    env.cache.add_activate_listener(activated.extend)
    env.add_pod_groups(added)
    got = QueueingHint.QUEUE if PodInfo(target).key in activated else QueueingHint.QUEUE_SKIP
    assert got == expected
    if expected == QueueingHint.QUEUE:
        assert env.plugin.pre_enqueue(PodInfo(target)).is_success


# --- TestGangSchedulingFlow -------------------------------------------------------------------

GANG_PG1 = podgroup("pg1", 3, namespace="ns1", template=("t1", "gang-wl"))
GANG_PG2 = podgroup("pg2", 4, namespace="ns1", template=("t2", "gang-wl"))
BASIC_PG = podgroup("pg3", None, namespace="ns1", template=("1", "basic-wl"))

P1, P2, P3 = (pod(n, "pg1", namespace="ns1") for n in ("p1", "p2", "p3"))
P4, P5 = (pod(n, "pg2", namespace="ns1") for n in ("p4", "p5"))
BASIC_POLICY_POD = pod("basic-pod", "pg3", namespace="ns1")
NON_GANG_POD = pod("non-gang", namespace="ns1")


@dataclass
class FlowRow:
    name: str
    pod: Pod
    initial_pods: Sequence[Pod] = ()
    initial_pod_groups: Sequence[PodGroupV1Alpha2] = ()
    pods_waiting_on_permit: Sequence[Pod] = ()
    # None: PreEnqueue admits; else (code, text its message must contain).
    want_pre_enqueue: tuple[Code, str] | None = None
    want_permit: Code = Code.SUCCESS
    want_activated: list[Pod] = field(default_factory=list)
    want_allowed: list[str] = field(default_factory=list)  # uids


FLOW_ROWS = [
    FlowRow("non-gang pod succeeds immediately", NON_GANG_POD,
            initial_pod_groups=(GANG_PG1, GANG_PG2, BASIC_PG)),
    FlowRow("basic policy pod succeeds immediately", BASIC_POLICY_POD,
            initial_pod_groups=(GANG_PG1, GANG_PG2, BASIC_PG)),
    FlowRow("gang pod fails PreEnqueue when pod group is not yet created", P1,
            initial_pods=(P2, P3, P4, P5),
            want_pre_enqueue=(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "ns1/pg1 not found")),
    # Only p1 and p2 exist from their gang, minCount is 3.
    FlowRow("gang pod fails PreEnqueue when quorum is not met", P1,
            initial_pods=(P2, P4, P5), initial_pod_groups=(GANG_PG1, GANG_PG2),
            want_pre_enqueue=(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "2/3 members created")),
    # At Permit, p1 is assumed, but the count (2) is less than the quorum (3): it must wait.
    FlowRow("gang pod passes PreEnqueue, but waits at Permit", P1,
            initial_pods=(P2, P3, P4, P5), initial_pod_groups=(GANG_PG1, GANG_PG2),
            pods_waiting_on_permit=(P2, P4, P5),
            want_permit=Code.WAIT, want_activated=[P3]),
    FlowRow("final gang pod arrives at Permit and allows all waiting pods from a gang", P1,
            initial_pods=(P2, P3, P4, P5), initial_pod_groups=(GANG_PG1, GANG_PG2),
            pods_waiting_on_permit=(P2, P3, P4, P5),
            want_allowed=["p1", "p2", "p3"]),
]


@pytest.mark.parametrize("row", FLOW_ROWS, ids=[r.name for r in FLOW_ROWS])
def test_gang_scheduling_flow(row: FlowRow) -> None:
    async def main() -> None:
        env = Env()
        env.add_pod_groups(*row.initial_pod_groups)
        env.add_pods(*row.initial_pods, row.pod)

        pre = env.plugin.pre_enqueue(PodInfo(row.pod))
        if row.want_pre_enqueue is not None:
            code, text = row.want_pre_enqueue
            assert pre.code == code and text in pre.message, pre
            return
        assert pre.is_success, pre

        # Other pods have already hit Permit and wait there.
        waiting: dict[str, Any] = {}
        for p in row.pods_waiting_on_permit:
            info, state = PodInfo(p), CycleState()
            assert env.plugin.reserve(state, info, NODE).is_success
            assert env.framework.run_permit(state, info, NODE).is_wait, p.name
            waiting[info.uid] = env.handle.get_waiting_pod(info.uid)
            assert waiting[info.uid] is not None

        info, state = PodInfo(row.pod), CycleState()
        assert env.plugin.reserve(state, info, NODE).is_success
        status, timeout = env.plugin.permit(state, info, NODE)
        assert status.code == row.want_permit, status
        if status.is_wait:
            assert 0 < timeout <= KUBE_GANG_PERMIT_TIMEOUT
        assert list(state.pods_to_activate) == [PodInfo(p).key for p in row.want_activated]

        for uid, wp in waiting.items():
            if uid in row.want_allowed:
                assert wp.done and (await wp.wait()).is_success, uid
            else:
                assert not wp.done, uid

    run_virtual(main)


# --- helper: TestMatchingSchedulingGroup ------------------------------------------------------


def pod_in(name: str, namespace: str, pod_group: str | None = None) -> Pod:
    return pod(name, pod_group, namespace=namespace)


MATCHING_ROWS = [
    ("same pod with schedulingGroup",
     pod_in("pod1", "test", "name"), pod_in("pod1", "test", "name"), True),
    ("different pods, same schedulingGroup",
     pod_in("pod1", "test", "name"), pod_in("pod2", "test", "name"), True),
    ("same pod but no schedulingGroup",
     pod_in("pod1", "test"), pod_in("pod1", "test"), False),
    ("different pods, only one with schedulingGroup",
     pod_in("pod1", "test", "name"), pod_in("pod2", "test"), False),
    ("same schedulingGroup but different namespaces",
     pod_in("pod1", "test1", "name"), pod_in("pod2", "test2", "name"), False),
    ("same namespace but different pod group",
     pod_in("pod1", "test", "name1"), pod_in("pod2", "test", "name2"), False),
]


@pytest.mark.parametrize("pod1,pod2,expected", [r[1:] for r in MATCHING_ROWS],
                         ids=[r[0] for r in MATCHING_ROWS])
def test_matching_scheduling_group(pod1: Pod, pod2: Pod, expected: bool) -> None:
    """Two pods are in the same scheduling group when they resolve to the same gang."""
    cache = Env().cache
    r1, r2 = cache.resolve(pod1), cache.resolve(pod2)
    assert (r1 is not None and r2 is not None and r1.gang_id == r2.gang_id) == expected


# --- cache: TestPodGroupState_* ---------------------------------------------------------------


def test_pod_group_state_assume_forget() -> None:
    cache = Env().cache
    p = pod("p1", "pg1", namespace="ns1")
    cache.add_pod(p)
    st = cache.gang_of("ns1/p1")
    assert st is not None
    assert "ns1/p1" not in st.assumed, "AssumedPods should be initially empty"
    assert st.is_pending("ns1/p1"), "Pod should be initially in UnscheduledPods"
    cache.assume("ns1/p1", NODE)
    assert "ns1/p1" in st.assumed, "Pod should be in AssumedPods after AssumePod"
    assert not st.is_pending("ns1/p1"), "UnscheduledPods should be empty after AssumePod"
    cache.forget("ns1/p1")
    assert "ns1/p1" not in st.assumed, "Pod should not be in AssumedPods after ForgetPod"
    assert st.is_pending("ns1/p1"), "Pod should be in UnscheduledPods after ForgetPod"


def test_pod_group_state_pod_counts() -> None:
    """AllPodsCount is the gang's `created`, ScheduledPodsCount its `placed` (assumed or
    bound)."""
    cache = Env().cache
    p1, p2, p4 = (pod(n, "pg1", namespace="ns1") for n in ("p1", "p2", "p4"))
    p3 = pod("p3", "pg1", namespace="ns1", node_name="node1")

    def counts() -> tuple[int, int]:
        st = cache.gang_of("ns1/p1")
        return (0, 0) if st is None else (st.created, st.placed)

    assert counts() == (0, 0)
    for p in (p1, p2, p3):
        cache.add_pod(p)
    assert counts() == (3, 1)
    # Assuming a pod moves it from unscheduled to assumed.
    cache.assume("ns1/p1", NODE)
    assert counts() == (3, 2)
    # Assuming a pod that is already scheduled does not change the counts.
    cache.assume("ns1/p3", "node1")
    assert counts() == (3, 2)
    # Assuming a pod that is not in the state does not change the counts.
    cache.assume(PodInfo(p4).key, NODE)
    assert counts() == (3, 2)
    # Forgetting a pod that is already scheduled does not change the counts.
    cache.forget("ns1/p3")
    assert counts() == (3, 2)
    # Forgetting an assumed pod moves it back to unscheduled.
    cache.forget("ns1/p1")
    assert counts() == (3, 1)
    # Forgetting a pod that is not assumed does not change the counts.
    cache.forget("ns1/p1")
    assert counts() == (3, 1)
    # Assuming a pod again moves it back to assumed.
    cache.assume("ns1/p2", NODE)
    assert counts() == (3, 2)
    # Forgetting a pod that is not in the state does not change the counts.
    cache.forget(PodInfo(p4).key)
    assert counts() == (3, 2)


def test_pod_group_state_scheduled_pods() -> None:
    """ScheduledPods: the assigned and the assumed pods, with their nodes (the live state;
    see the module docstring for the snapshot half)."""
    cache = Env().cache
    cache.add_pod(pod("p3", "pg", namespace="ns", node_name="node1"))  # assigned
    cache.add_pod(pod("p1", "pg", namespace="ns"))  # unscheduled
    cache.add_pod(pod("p2", "pg", namespace="ns"))  # assumed below
    cache.assume("ns/p2", "node2")
    st = cache.gang_of("ns/p1")
    assert st is not None
    scheduled = {**st.bound, **st.assumed}
    assert scheduled == {"ns/p3": "node1", "ns/p2": "node2"}


# --- Ours: where a default-scheduler gang differs from kube's plugin (README, "Gangs and
# kube-scheduler's Workload API"). Kube has no test of these; they pin what the README says.


def _waiting_gang(env: Env, waiting: Sequence[Pod]) -> dict[str, Any]:
    waits: dict[str, Any] = {}
    for p in waiting:
        info, state = PodInfo(p), CycleState()
        assert env.plugin.reserve(state, info, NODE).is_success
        status, _ = env.plugin.permit(state, info, NODE)
        assert status.is_wait, p.name
        assert env.framework.run_permit(state, info, NODE).is_wait
        waits[p.name] = env.handle.get_waiting_pod(info.uid)
    return waits


def test_a_member_failing_its_cycle_releases_the_members_waiting_at_permit() -> None:
    """Kube keeps p1 and p2 waiting when p3 fails; here they are rejected with it."""

    async def main() -> None:
        env = Env()
        env.add_pod_groups(GANG_PG1)
        env.add_pods(P1, P2, P3)
        waits = _waiting_gang(env, (P1, P2))
        env.plugin.before_post_filter(CycleState(), PodInfo(P3),
                                      Status(Code.UNSCHEDULABLE, ["no node fits"]), None)
        for name, wp in waits.items():
            assert wp.done, name
            got = await wp.wait()
            assert got.code == Code.UNSCHEDULABLE and "member ns1/p3 is unschedulable" in \
                got.message, (name, got)

    run_virtual(main)


def test_the_wait_runs_from_the_first_members_permit_for_the_whole_gang() -> None:
    """Kube gives p2 its own 5 minutes; here p2 waits only for what remains of p1's."""

    async def main() -> None:
        import asyncio

        env = Env()
        env.add_pod_groups(GANG_PG1)
        env.add_pods(P1, P2, P3)
        info1, state1 = PodInfo(P1), CycleState()
        assert env.plugin.reserve(state1, info1, NODE).is_success
        _, first = env.plugin.permit(state1, info1, NODE)
        assert first == KUBE_GANG_PERMIT_TIMEOUT
        await asyncio.sleep(100)
        info2, state2 = PodInfo(P2), CycleState()
        assert env.plugin.reserve(state2, info2, NODE).is_success
        _, second = env.plugin.permit(state2, info2, NODE)
        assert second == pytest.approx(KUBE_GANG_PERMIT_TIMEOUT - 100)

    run_virtual(main)
