"""Koordinator's coscheduling_test.go, ported: the Coscheduling plugin's extension points on
a koord-scheduler profile (kit.PluginSuite: the plugin of an embedded scheduler that is not
started, its gang cache fed as the informers would, Permit run by the framework so that
waiting pods are parked in the scheduler's waiting map).

Koordinator's AfterPostFilter is our BeforePostFilter (`Coscheduling.before_post_filter`):
the same work (reject the gang's waiting members in Strict mode, nothing for a NonStrict or a
satisfied gang), run before preemption instead of after it (see test_victim_gangs.py for the
#2490 scenario). Koordinator reports the rejection in the returned status message ("empty"
when nothing was rejected); ours returns success and records the failure on the gang, so the
rows check the effect: which waiting members were rejected, and what the gang reports.

Rows not expressible here:
- TestPreBind (5 rows) and TestPreBindReservation (3 rows): PreBind writes Koordinator's
  `internal.scheduling.koordinator.sh/bind-gang-group-id` / `bind-gang-member-count`
  annotations on pods and on Koordinator Reservations, read by Koordinator's own components.
  Phalanx writes no such annotations and serves no Reservation kind.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.clock import run_virtual
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.gang import Phase

from .kit import GROUPS, MATCH_POLICY, MODE, PluginSuite, kpod, make_pg


def _run(fn: Any) -> Any:
    async def main() -> Any:
        return fn(PluginSuite())

    return run_virtual(main)


POST_FILTER: list[Any] = [
    pytest.param(
        dict(pod=kpod("pod1", "gangA_ns")), "nothing", id="pod does not belong to any pod group"
    ),
    pytest.param(
        dict(pod=kpod("pod1", "gangA_ns", pg="wenshiqi")),
        "not found",
        id="pod belongs to non-existing gang",
    ),
    pytest.param(
        dict(
            pod=kpod("pod1", "gangC_ns", pg="gangC"),
            pg=make_pg("gangC", "gangC_ns", 1),
            satisfied=True,
        ),
        "nothing",
        id="gangA is resourceSatisfied,do not reject the gang",
    ),
    pytest.param(
        dict(
            pod=kpod("pod1", "gangC_ns", pg="gangC"),
            pg=make_pg("gangC", "gangC_ns", 1, ann={MATCH_POLICY: "only-waiting"}),
            satisfied=True,
        ),
        "rejected",
        id="gangA is resourceSatisfied but matchPolicy is only-waiting, reject the gang",
    ),
    # One waiting member added to the Go row (which has none) so that "do not reject" can fail.
    pytest.param(
        dict(
            pod=kpod("pod2", "gangB_ns", pg="gangB"),
            pods=[kpod("pod2-1", "gangB_ns", pg="gangB")],
            pg=make_pg("gangB", "gangB_ns", 4, ann={MODE: "NonStrict"}),
        ),
        "kept",
        id="resource not Satisfied,but gangB is NonStrictMode,do not reject the gang",
    ),
    pytest.param(
        dict(
            pod=kpod("pod3", "gangA_ns", pg="gangA"),
            pods=[kpod("pod3-1", "gangA_ns", pg="gangA"), kpod("pod3-2", "gangA_ns", pg="gangA")],
            pg=make_pg("gangA", "gangA_ns", 4),
        ),
        "rejected",
        id="resource not Satisfied,StrictMode,reject all pods belong to gangA",
    ),
]


@pytest.mark.parametrize(("case", "want"), POST_FILTER)
def test_PostFilter(case: dict[str, Any], want: str) -> None:
    def check(s: PluginSuite) -> None:
        if "pg" in case:
            s.add_pg(case["pg"])
        pod, others = case["pod"], case.get("pods", [])
        s.add(pod, *others)
        st = s.cache.gang_of(pod.key)
        if case.get("satisfied"):
            s.plugin.post_bind(CycleState(), s.info(pod), "test")
            assert st is not None and st.once_satisfied
        for o in others:
            assert s.permit(o).is_wait
        assert s.waiting() == sorted(o.key for o in others)
        state = CycleState()
        s.plugin.before_post_filter(state, s.info(pod), Status.unschedulable("no fit"), None)
        outcomes = {o.name: s.outcome(o) for o in others}
        if want == "nothing":
            assert st is None or st.last_failure is None
        elif want == "not found":
            _, status = s.plugin.pre_filter(CycleState(), s.info(pod), None)
            assert (
                status.message.startswith(Phase.NOT_FOUND) and "gangA_ns/wenshiqi" in status.message
            )
        elif want == "kept":
            assert set(outcomes.values()) == {"waiting"}
        else:
            assert st is not None and st.last_failure is not None
            assert st.last_failure.pod == pod.key
            assert set(outcomes.values()) <= {"rejected"}
            assert s.waiting() == []

    _run(check)


PG1 = make_pg("ganga", "gangA_ns", 3)
PG2 = make_pg("gangb", "gangB_ns", 2, ann={GROUPS: '["gangA_ns/ganga","gangB_ns/gangb"]'})
PG3 = make_pg("gangc", "gangC_ns", 2, ann={GROUPS: '["gangC_ns/gangc","gangD_ns/gangd"]'})
PG4 = make_pg("gangd", "gangD_ns", 2, ann={GROUPS: '["gangC_ns/gangc","gangD_ns/gangd"]'})

PERMIT: list[Any] = [
    pytest.param(kpod("pod1", "ns1"), [], "success", id="pod1 does not belong to any pg, allow"),
    pytest.param(
        kpod("pod2", "ns1", pg="gangnonexist"), [], "wait", id="pod2 belongs to a non-existing pg"
    ),
    pytest.param(
        kpod("pod3", "gangA_ns", pg="ganga"),
        [kpod("pod3-1", "gangA_ns", pg="ganga")],
        "wait",
        id="pod3 belongs to gangA that doesn't have enough assumed pods",
    ),
    pytest.param(
        kpod("pod4", "gangA_ns", pg="ganga"),
        [kpod("pod4-1", "gangA_ns", pg="ganga"), kpod("pod4-2", "gangA_ns", pg="ganga")],
        "success",
        id="pod4 belongs to gangA that gangA has resourceSatisfied",
    ),
    pytest.param(
        kpod("pod4", "gangA_ns", pg="ganga"),
        [kpod("pod4-1", "gangA_ns", pg="ganga"), kpod("pod4-2", "gangA_ns", pg="ganga")],
        "success",
        id="pod4 belongs to gangA that gangA has resourceSatisfied, but gangA matchPolicy is not "
        "once-satisfied",
    ),
    pytest.param(
        kpod("pod5", "gangB_ns", pg="gangb"),
        [kpod("pod5-1", "gangB_ns", pg="gangb"), kpod("pod5-2", "gangA_ns", pg="ganga")],
        "wait",
        id="pod5 belongs to gangB that gangB has resourceSatisfied, but gangA has not satisfied",
    ),
    pytest.param(
        kpod("pod6", "gangD_ns", pg="gangd"),
        [
            kpod("pod6-1", "gangD_ns", pg="gangd"),
            *[kpod(f"pod6-{i}", "gangC_ns", pg="gangc") for i in (2, 3, 4)],
        ],
        "success",
        id="pod6 belongs to gangD that gangD has resourceSatisfied, "
        "and gangC is waiting for gangD ",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want"), PERMIT)
def test_Permit(pod: Any, pods: list[Any], want: str) -> None:
    def check(s: PluginSuite) -> None:
        s.add_pg(PG1, PG2, PG3, PG4)
        s.add(*pods, pod)
        for p in pods:
            assert s.permit(p).is_wait
        status = s.permit(pod)
        if want == "wait":
            assert status.is_wait
            assert {s.outcome(p) for p in pods} <= {"waiting"}
        else:
            assert status.is_success, status
            # Every member that waited is allowed with it (Koordinator's WaitOnPermit success).
            assert {s.outcome(p) for p in pods} <= {"allowed"}

    _run(check)


@pytest.mark.parametrize(
    "timeout",
    [pytest.param(True, id="pod1 comes to Unreserve due to timeout,reject all gangA's pods")],
)
def test_Unreserve(timeout: bool) -> None:
    def check(s: PluginSuite) -> None:
        s.add_pg(make_pg("gangA", "gangA_ns", 2))
        pod1, pod12 = kpod("pod1", "gangA_ns", pg="gangA"), kpod("pod1-2", "gangA_ns", pg="gangA")
        s.add(pod1, pod12)
        assert s.permit(pod12).is_wait
        assert s.waiting() == ["gangA_ns/pod1-2"]
        s.plugin.unreserve(CycleState(), s.info(pod1), "")
        assert s.outcome(pod12) == "rejected"

    _run(check)
