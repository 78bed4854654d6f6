"""Koordinator's core/core_test.go, ported (one test per Go test, one case per row, ids =
row names; Go's duplicate row names get Go's "#01" suffix).

PreEnqueue and Permit rows run on the gang cache and manager as koord-scheduler reads them
(kit.Koord); PostFilter and the pending-pods condition rows on the embedded scheduler.

Differences, deliberate and marked in the rows:
- PreEnqueue, "pods count more than minMember ...": Koordinator's representative is the first
  member whose PreEnqueue passes once the gang is complete (there `pod9-4`); ours is the first
  member in representative order (largest, then oldest, then by name) when the gang becomes
  complete (`pod9-1`). Either way `pod9` is held behind it.
- Permit, "pod2 belongs to a non-existing pg": Koordinator answers Wait with the uninitialised
  gang's wait of 0 s (its framework then rejects the pod at once); ours waits for the gang's
  object for the profile's default wait, as for a missing gang of a gang group.

Rows not expressible here:
- TestPodGroupManager_PostFilter "gang pod with suggestion propagated to gangSchedulingContext",
  TestAfterPostFilter_SuggestionPropagation, TestBeforePreFilter_SuggestionPropagation:
  Koordinator's ScheduleSuggestion (a hint to its workload controllers) has no counterpart.
- TestPostFilter_PreemptionMessageForNonRootCausePod, TestAfterPostFilter_PreemptionDiagnosis
  FailedMessage: Koordinator runs a cycle for every pending member of a failed gang in the same
  gang scheduling context (the "non-root-cause" pods) and shares the first one's preemption
  message with them. Here the other members run no cycle (they wait behind the
  representative); they get the gang's message by Event and PodScheduled condition
  (TestPatchGangPendingPodsCondition below).
- TestGetGangBindingInfo: the binding member count feeds Koordinator's PreBind annotations
  (`bind-gang-group-id`, `bind-gang-member-count`), read by its own components; Phalanx
  writes no such annotations.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import PluginRef, Plugins, PluginSet
from phalanx.scheduler.gang import Phase

from ..helpers import node, pod, run_scheduler
from .kit import (
    KOORD_DEFAULT_WAIT,
    GROUPS,
    MATCH_POLICY,
    MODE,
    TOTAL,
    Koord,
    kpod,
    koord_profile,
    koord_scheduler,
    make_pg,
)


def _pods(ns: str, gang: str, *names: str) -> list[Pod]:
    return [kpod(n, ns, pg=gang) for n in names]


PRE_ENQUEUE: list[Any] = [
    pytest.param(dict(pod=kpod("pod1", "ns1")), None, id="pod does not belong to any gang"),
    pytest.param(
        dict(pod=kpod("pod2", "gangA_ns", pg="wenshiqi222")),
        Phase.NOT_FOUND,
        id="pod belongs to a non-existing pg",
    ),
    pytest.param(
        dict(
            pod=kpod("podq", "gangq_ns", pg="gangq"),
            pg=make_pg("gangq", "gangq_ns", 4),
            satisfied=True,
        ),
        None,
        id="gang ResourceSatisfied",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "ganga_ns", pg="ganga"),
            pods=_pods("ganga_ns", "ganga", "pod3-1"),
            pg=make_pg("ganga", "ganga_ns", 4),
        ),
        Phase.INCOMPLETE,
        id="pod count less than minMember",
    ),
    pytest.param(
        dict(
            pod=kpod("pod5", "gangb_ns", pg="gangb"),
            pods=_pods("gangb_ns", "gangb", "pod5-1", "pod5-2", "pod5-3"),
            pg=make_pg("gangb", "gangb_ns", 4, ann={MODE: "NonStrict"}),
        ),
        None,
        id="pods count equal with minMember,but is NonStrictMode",
    ),
    pytest.param(
        dict(
            pod=kpod("pod6", "ganga_ns", pg="gangc"),
            pods=_pods("ganga_ns", "gangc", "pod6-1", "pod6-2", "pod6-3"),
            pg=make_pg("gangc", "ganga_ns", 4, ann={TOTAL: "5"}),
        ),
        None,
        id="due to reschedule pod6's podScheduleCycle is equal with the gangScheduleCycle, "
        "but pod6's nominatedNodeName is not empty",
    ),
    pytest.param(
        dict(
            pod=kpod("pod7", "ganga_ns", pg="gangd"),
            pods=_pods("ganga_ns", "gangd", "pod7-1", "pod7-2", "pod7-3"),
            pg=make_pg("gangd", "ganga_ns", 4),
        ),
        None,
        id="pods count equal with minMember,is StrictMode, disable check scheduleCycle even if "
        "the gang's scheduleCycle is not valid",
    ),
    pytest.param(
        dict(
            pod=kpod("pod8", "ganga_ns", pg="gange"),
            pods=_pods("ganga_ns", "gange", "pod8-1", "pod8-2", "pod8-3"),
            pg=make_pg("gange", "ganga_ns", 4, ann={TOTAL: "5"}),
        ),
        None,
        id="pods count equal with minMember,is StrictMode,scheduleCycle valid,but childrenNum is "
        "not reach to total num",
    ),
    pytest.param(
        dict(
            pod=kpod("pod9", "ganga_ns", pg="ganga"),
            pods=_pods("ganga_ns", "ganga", "pod9-1", "pod9-2", "pod9-3", "pod9-4"),
            pg=make_pg("ganga", "ganga_ns", 4, ann={TOTAL: "5"}),
        ),
        "WaitingForRepresentative",
        id="pods count more than minMember,is StrictMode,scheduleCycle valid,and childrenNum reach "
        "to total num",
    ),
]


@pytest.mark.parametrize(("case", "want"), PRE_ENQUEUE)
def test_Plugin_PreEnqueue(case: dict[str, Any], want: str | None) -> None:
    k = Koord()
    if "pg" in case:
        k.add_pg(case["pg"])
    for p in case.get("pods", []):
        k.add(p)
        k.manager.admit(p.key, p)
    target: Pod = case["pod"]
    k.add(target)
    if case.get("satisfied"):
        st = k.cache.gang_of(target.key)
        assert st is not None
        st.once_satisfied = True
    adm = k.manager.admit(target.key, target)
    if want is None:
        assert adm.ok, adm
    else:
        assert not adm.ok and adm.reason == want
    if want == "WaitingForRepresentative":
        # Held behind another member of its gang (here the first of it; see the docstring).
        assert "ganga_ns/pod9-1" in adm.message


def _pg(name: str, ns: str, n: int, **kw: Any) -> Any:
    return make_pg(name, ns, n, **kw)


PERMIT: list[Any] = [
    pytest.param(
        dict(pod=kpod("pod1", "ns1")), (False, 0.0), id="pod1 does not belong to any pg, allow"
    ),
    pytest.param(
        dict(pod=kpod("pod2", "ns1", pg="gangnonexist")),
        (True, None),
        id="pod2 belongs to a non-existing pg",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=_pods("gangA_ns", "gangA", "pod3-1"),
            pgs=[_pg("gangA", "gangA_ns", 3)],
        ),
        (True, 10.0),
        id="pod3 belongs to gangA that doesn't have enough assumed pods",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=_pods("gangA_ns", "gangA", "pod3-1"),
            pgs=[_pg("gangA", "gangA_ns", 3)],
            satisfied=True,
        ),
        (False, 0.0),
        id="pod3 belongs to gangA that doesn't have enough assumed pods, but once satisfied",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=_pods("gangA_ns", "gangA", "pod3-1"),
            pgs=[_pg("gangA", "gangA_ns", 3, ann={MATCH_POLICY: "only-waiting"})],
            satisfied=True,
        ),
        (True, 10.0),
        id="pod3 belongs to gangA that doesn't have enough assumed pods, once satisfied, but "
        "matchPolicy not once satisfied",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=_pods("gangA_ns", "gangA", "pod3-1"),
            running=[kpod("pod3-2", "gangA_ns", pg="gangA", node="n1")],
            pgs=[_pg("gangA", "gangA_ns", 3, ann={MATCH_POLICY: "only-waiting"})],
            satisfied=True,
        ),
        (True, 10.0),
        id="pod3 belongs to gangA that doesn't have enough assumed pods, but with Running pods is "
        "enough, matchPolicy waiting-and-running",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=_pods("gangA_ns", "gangA", "pod3-1"),
            running=[kpod("pod3-2", "gangA_ns", pg="gangA", node="n1")],
            pgs=[_pg("gangA", "gangA_ns", 3, ann={MATCH_POLICY: "waiting-and-running"})],
            satisfied=True,
        ),
        (False, 0.0),
        id="pod3 belongs to gangA that doesn't have enough assumed pods, but with Running pods is "
        "enough, matchPolicy waiting-and-running#01",
    ),
    pytest.param(
        dict(
            pod=kpod("pod4", "gangA_ns", pg="gangB"),
            pods=_pods("gangA_ns", "gangB", "pod4-1", "pod4-2"),
            pgs=[_pg("gangB", "gangA_ns", 3)],
        ),
        (False, 0.0),
        id="pod4 belongs to gangB that gangA has resourceSatisfied",
    ),
    pytest.param(
        dict(
            pod=kpod("pod5", "gangC_ns", pg="gangC"),
            pods=[kpod("pod5-1", "gangC_ns", pg="gangC"), kpod("pod5-2", "gangD_ns", pg="gangD")],
            pgs=[
                _pg(n, f"{n}_ns", 2, ann={GROUPS: '["gangC_ns/gangC","gangD_ns/gangD"]'})
                for n in ("gangC", "gangD")
            ],
        ),
        (True, 10.0),
        id="pod5 belongs to gangC that gangC has resourceSatisfied, but gangD has not satisfied",
    ),
    pytest.param(
        dict(
            pod=kpod("pod6", "gangE_ns", pg="gangE"),
            pods=[
                kpod("pod6-1", "gangE_ns", pg="gangE"),
                *_pods("gangF_ns", "gangF", "pod6-2", "pod6-3", "pod6-4"),
            ],
            pgs=[
                _pg("gangE", "gangE_ns", 2, ann={GROUPS: '["gangE_ns/gangE","gangF_ns/gangF"]'}),
                _pg("gangF", "gangF_ns", 3, ann={GROUPS: '["gangE_ns/gangE","gangF_ns/gangF"]'}),
            ],
        ),
        (False, 0.0),
        id="pod6 belongs to gangE that gangE has resourceSatisfied, and gangF has satisfied too",
    ),
]


@pytest.mark.parametrize(("case", "want"), PERMIT)
def test_Permit(case: dict[str, Any], want: tuple[bool, float | None]) -> None:
    k = Koord()
    for pg in case.get("pgs", []):
        k.add_pg(pg)
        if case.get("satisfied"):
            st = k.gang(pg.metadata.namespace, pg.metadata.name)
            assert st is not None
            st.once_satisfied = True
    for p in case.get("pods", []):
        k.add(p)
        k.permit_all([p])
    for p in case.get("running", []):
        k.add(p)
        k.manager.bound(p.key, p.spec.node_name)
    if case.get("running"):
        st = k.cache.gang_of(case["running"][0].key)
        assert st is not None and len(st.bound) == len(case["running"])
    target = case["pod"]
    k.add(target)
    k.manager.reserved(target.key, "n1")
    decision = k.manager.permit(target.key, 0.0)
    wait, timeout = want
    assert decision.wait == wait
    if wait:
        # None: the gang's object is missing, it waits koord-scheduler's default (docstring).
        assert decision.timeout == (timeout if timeout is not None else KOORD_DEFAULT_WAIT)


# --- PostFilter: preemption through the gang, on the embedded scheduler ---------------------


def _post_filter_run(
    profile: Any, pods: list[Any], objs: list[Any]
) -> tuple[dict[str, Any], Scheduler]:
    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[dict[str, Any], Scheduler]:
        await client.create(
            pod("victim", gpu=1, cpu="100m", priority=0, scheduler="koord-scheduler")
        )
        assert await sched.wait_idle(timeout=30)
        for o in [*objs, *pods]:
            await client.create(o)
        assert await sched.wait_idle(timeout=120)
        nodes = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        return nodes, sched

    return run_scheduler(
        body, nodes=[node("n1", gpu=1)], scheduler_factory=koord_scheduler(profile)
    )


def _gang_pod(name: str, gang: str | None, priority: int = 100) -> Pod:
    p = pod(name, gpu=1, cpu="100m", priority=priority, scheduler="koord-scheduler")
    if gang:
        p.metadata.labels["pod-group.scheduling.sigs.k8s.io"] = gang
    return p


@pytest.mark.parametrize(
    "row",
    [
        pytest.param("preemption not enabled", id="preemption not enabled"),
        pytest.param("bare pod", id="bare pod"),
        pytest.param("gang pod", id="gang pod"),
    ],
)
def test_PodGroupManager_PostFilter(row: str) -> None:
    if row == "preemption not enabled":
        profile = koord_profile(
            plugins=Plugins(post_filter=PluginSet(disabled=[PluginRef(name="DefaultPreemption")]))
        )
        nodes, sched = _post_filter_run(
            profile, [_gang_pod("pod1", "ganga")], [make_pg("ganga", min_member=1)]
        )
        assert nodes == {"victim": "n1", "pod1": None}
        assert "preemption" not in sched.diagnosis("default/pod1").message()
        return
    if row == "bare pod":
        # A pod of no gang, facing only its equals: preemption answers for the pod alone.
        nodes, sched = _post_filter_run(koord_profile(), [_gang_pod("pod", None, priority=0)], [])
        assert nodes == {"victim": "n1", "pod": None}
        assert (
            "preemption: no lower-priority pods to preempt for default/pod"
            in sched.diagnosis("default/pod").message()
        )
        return
    # A gang pod: its failure is the gang's (named with the member and why), and preemption's
    # answer comes back prefixed "preemption: ".
    objs = [make_pg("ganga", min_member=2)]
    nodes, sched = _post_filter_run(
        koord_profile(),
        [_gang_pod("pod1", "ganga", priority=0), _gang_pod("pod2", "ganga", priority=0)],
        objs,
    )
    assert nodes == {"victim": "n1", "pod1": None, "pod2": None}
    st = (
        sched.frameworks["koord-scheduler"]
        .plugins["Coscheduling"]
        .cache.get("coscheduling:default/ganga")
    )
    assert st.last_failure is not None
    assert st.last_failure.message.startswith(
        f"member {st.last_failure.pod}: 0/1 nodes are available"
    )
    assert (
        "preemption: no lower-priority pods to preempt for PodGroup default/ganga (2 members)"
        in sched.diagnosis(st.last_failure.pod).message()
    )


# --- PodScheduled on every pending member (GangPendingPodsConditionPatch) -----------------------


def _conditions(pods: list[Pod]) -> dict[str, tuple[str, str] | None]:
    out: dict[str, tuple[str, str] | None] = {}
    for p in pods:
        c = p.get_condition("PodScheduled")
        out[p.name] = None if c is None else (c.status, c.reason or "")
    return out


def _pending_condition_run(
    n: int, failing: set[int], **args: Any
) -> tuple[dict[str, Any], int, Any]:
    """A Strict gang of `n` (minMember n) whose members `failing` fit no node; the others fit.
    Returns each pod's PodScheduled (status, reason), the conditions the gang status
    controller wrote, and the gang's last failure."""
    pg = make_pg("ganga", min_member=n, timeout=3600)
    pods = [
        pod(
            f"pod{i}",
            cpu="100m",
            memory=None,
            scheduler="koord-scheduler",
            labels={"pod-group.scheduling.sigs.k8s.io": "ganga"},
            node_selector={"zone": "nowhere"} if i in failing else None,
        )
        for i in range(1, n + 1)
    ]

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[dict[str, Any], int, Any]:
        assert await sched.wait_idle(timeout=60)
        cs = sched.frameworks["koord-scheduler"].plugins["Coscheduling"]
        await cs.runtime.status.flush_now()
        assert await sched.wait_idle(timeout=60)
        st = cs.cache.get("coscheduling:default/ganga")
        conds = _conditions((await client.list(Pod, "default")).items)
        return conds, cs.runtime.status.pod_conditions_written, st.last_failure

    return run_scheduler(
        body,
        nodes=[node("n1", cpu="8")],
        pods=[pg, *pods],
        scheduler_factory=koord_scheduler(koord_profile(wholeGangPlacement=False, **args)),
    )


UNSCHEDULABLE = ("False", "Unschedulable")


@pytest.mark.parametrize(
    "row",
    [
        pytest.param("nil postFilterStatus does nothing", id="nil postFilterStatus does nothing"),
        pytest.param(
            "excludes current pod and already attempted pods",
            id="excludes current pod and already attempted pods",
        ),
        pytest.param(
            "no patches when all others are attempted",
            id="no patches when all others are attempted",
        ),
    ],
)
def test_PatchGangPendingPodsCondition(row: str) -> None:
    if row == "nil postFilterStatus does nothing":
        # No attempt failed: the gang binds, no member gets a condition from the controller.
        conds, written, failure = _pending_condition_run(2, set())
        assert failure is None and written == 0
        assert all(c == ("True", "") or c is None or c[0] == "True" for c in conds.values())
        return
    if row == "excludes current pod and already attempted pods":
        # pod1, pod2 wait at Permit, pod3 fails (the current pod), pod4 never ran a cycle:
        # the scheduler wrote pod3's condition and, on their release, pod1's and pod2's; the
        # gang adds pod4's.
        conds, written, failure = _pending_condition_run(4, {3})
        assert failure is not None and failure.pod == "default/pod3"
        assert conds == dict.fromkeys(["pod1", "pod2", "pod3", "pod4"], UNSCHEDULABLE)
        assert written == 1
        return
    # pod1 fails first (nobody else ran), alone in its gang: nothing to add.
    conds, written, failure = _pending_condition_run(1, {1})
    assert failure is not None and failure.attempted == {"default/pod1"}
    assert conds == {"pod1": UNSCHEDULABLE} and written == 0


def test_AfterPostFilter_PatchConditionOnlyOnce() -> None:
    """The same failure reported again writes no condition again."""
    pg = make_pg("ganga", min_member=3, timeout=3600)
    pods = [
        pod(
            f"pod{i}",
            cpu="100m",
            memory=None,
            scheduler="koord-scheduler",
            labels={"pod-group.scheduling.sigs.k8s.io": "ganga"},
            node_selector={"zone": "nowhere"} if i == 1 else None,
        )
        for i in range(1, 4)
    ]

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[int, int]:
        assert await sched.wait_idle(timeout=60)
        status = sched.frameworks["koord-scheduler"].plugins["Coscheduling"].runtime.status
        await status.flush_now()
        first = status.pod_conditions_written
        status.mark("coscheduling:default/ganga")
        await status.flush_now()
        assert await sched.wait_idle(timeout=60)
        return first, status.pod_conditions_written

    first, again = run_scheduler(
        body,
        nodes=[node("n1", cpu="8")],
        pods=[pg, *pods],
        scheduler_factory=koord_scheduler(koord_profile(wholeGangPlacement=False)),
    )
    assert first == 2 and again == first


def test_pending_pods_condition_can_be_turned_off() -> None:
    """Coscheduling arg pendingPodsCondition: false (Koordinator's feature gate off): the
    members that ran no cycle get the gang's Event only."""
    conds, written, _ = _pending_condition_run(4, {3}, pendingPodsCondition=False)
    assert written == 0 and conds["pod4"] is None
    assert conds["pod3"] == UNSCHEDULABLE
