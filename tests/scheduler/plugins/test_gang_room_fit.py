"""The room a gang needs is what the profile's NodeResourcesFit filter checks.

kube's NodeResourcesFit skips the extended resources `ignoredResources` /
`ignoredResourceGroups` name, and a profile without it as a filter checks no room at all.
Phalanx's checks beside Filter (Coscheduling's whole-gang room and plan, TopologyPacking's
room per domain, preemption's plan, GangReservation, the nominator) read the same vector
(Framework.fit_vector), so a gang is never held for room its own filter does not require.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import PodInfo, SchedulerConfiguration

from ..gang.builders import assert_no_partial_gang, bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod, run_scheduler

FOO = "example.com/foo"
RACK = "example.com/rack"

IGNORED = {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": [FOO]}}]}
IGNORED_GROUP = {"pluginConfig": [{"name": "NodeResourcesFit",
                                   "args": {"ignoredResourceGroups": ["example.com"]}}]}
NO_FIT_FILTER = {"plugins": {"filter": {"disabled": [{"name": "NodeResourcesFit"}]}}}


def _conf(profile: dict[str, Any]) -> SchedulerConfiguration:
    return SchedulerConfiguration.model_validate(
        {"profiles": [{"schedulerName": "phalanx-scheduler", **profile}]})


def _run(profile: dict[str, Any], nodes: list[Any], objs: list[Any]) -> dict[str, list[str | None]]:
    async def body(client: MemoryCluster, sched: Scheduler) -> Any:
        assert await sched.wait_idle(timeout=120)
        return await bound_by_gang(client)

    return run_scheduler(body, nodes=nodes, pods=objs,
                         scheduler_factory=lambda c: Scheduler(c, _conf(profile)))


# --- the vector ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "kept"),
    [
        pytest.param({}, {"cpu", "memory", "pods", FOO}, id="defaults: everything requested"),
        pytest.param(IGNORED, {"cpu", "memory", "pods"}, id="ignoredResources"),
        pytest.param(IGNORED_GROUP, {"cpu", "memory", "pods"}, id="ignoredResourceGroups"),
        pytest.param({"plugins": {"score": {"disabled": [{"name": "NodeResourcesFit"}]}}},
                     {"cpu", "memory", "pods", FOO}, id="disabled at score only"),
        pytest.param(NO_FIT_FILTER, set(), id="no NodeResourcesFit filter: nothing"),
    ],
)
def test_fit_vector_is_what_the_profile_filter_checks(profile: dict[str, Any], kept: set[str]) -> None:
    sched = Scheduler(MemoryCluster(), _conf(profile))
    snap = sched.cache.snapshot
    info = PodInfo(pod("p", extra={FOO: "2"}))
    cols, vals = sched.handles["phalanx-scheduler"].fit_vector(info)
    assert {snap.resources[c] for c in cols.tolist()} == kept
    full_cols, full_vals = snap.request_vector(info)
    want = {c: v for c, v in zip(full_cols.tolist(), full_vals.tolist(), strict=True)
            if snap.resources[c] in kept}
    assert dict(zip(cols.tolist(), vals.tolist(), strict=True)) == want
    if kept == set(want) and not profile:
        assert cols is full_cols  # the default profile pays nothing


# --- Coscheduling ----------------------------------------------------------------------------


@pytest.mark.parametrize("profile", [IGNORED, IGNORED_GROUP], ids=["ignoredResources",
                                                                  "ignoredResourceGroups"])
def test_a_gang_needs_no_room_for_ignored_resources(profile: dict[str, Any]) -> None:
    """Two members asking example.com/foo, which no node has: a plain pod fits (kube), and
    so does the gang (it used to stay pending "without room for the whole gang")."""
    bound = _run(profile, [node("n1"), node("n2")],
                 [podgang("g", {"w": 2}), *members("g", "w", 2, extra={FOO: "1"})])
    assert all(bound["g"])


def test_without_the_fit_filter_a_gang_is_not_held_for_resources() -> None:
    """Two 4-cpu members, 2-cpu nodes: kube binds such pods when NodeResourcesFit is no
    filter; the gang binds too."""
    bound = _run(NO_FIT_FILTER, [node("n1", cpu="2"), node("n2", cpu="2")],
                 [podgang("g", {"w": 2}), *members("g", "w", 2, cpu="4")])
    assert all(bound["g"])


@pytest.mark.parametrize("profile", [IGNORED, NO_FIT_FILTER], ids=["ignoredResources",
                                                                  "no fit filter"])
def test_the_whole_gang_plan_needs_no_room_for_what_is_not_checked(profile: dict[str, Any]) -> None:
    """Groups of different shapes are planned as a whole (gang/plan.py): the plan counts
    only the checked resources (none at all without the filter)."""
    objs = [podgang("g", {"big": 1, "small": 2}),
            *members("g", "big", 1, cpu="6", extra={FOO: "2"}),
            *members("g", "small", 2, cpu="1", extra={FOO: "1"})]
    cpu = "4" if profile is NO_FIT_FILTER else "8"
    bound = _run(profile, [node("n1", cpu=cpu), node("n2", cpu=cpu)], objs)
    assert all(bound["g"]) and len(bound["g"]) == 3


def test_ignored_resources_do_not_change_what_is_checked() -> None:
    """cpu is still checked: a gang of three 6-cpu members on two 8-cpu nodes waits whole."""
    bound = _run(IGNORED, [node("n1"), node("n2")],
                 [podgang("g", {"w": 3}), *members("g", "w", 3, cpu="6", extra={FOO: "1"})])
    assert bound["g"] == [None] * 3


# --- TopologyPacking -------------------------------------------------------------------------


def test_a_required_domain_needs_no_room_for_ignored_resources() -> None:
    nodes = [node(f"{r}-n{i}", labels={RACK: r}) for r in ("r1", "r2") for i in range(2)]
    bound = _run(IGNORED, nodes, [podgang("g", {"w": 3}, required=RACK),
                                  *members("g", "w", 3, cpu="1", extra={FOO: "1"})])
    assert all(bound["g"]) and len({n.split("-")[0] for n in bound["g"] if n}) == 1


# --- preemption --------------------------------------------------------------------------------


def test_preemption_plans_only_the_checked_resources() -> None:
    """Two 2-cpu nodes held by low-priority pods; a priority-100 gang of two 2-cpu members
    that also ask the ignored example.com/foo: evicting both pods makes room (preemption
    used to find that no node could ever hold the foo)."""

    async def body(client: MemoryCluster, sched: Scheduler) -> Any:
        for i in (1, 2):
            await client.create(pod(f"low{i}", cpu="2", memory="1Gi", priority=0))
        assert await sched.wait_idle(timeout=30)
        await client.create(podgang("g", {"w": 2}))
        for p in members("g", "w", 2, cpu="2", memory="1Gi", priority=100, extra={FOO: "1"}):
            await client.create(p)
        assert await sched.wait_idle(timeout=300)
        evictions = sched.frameworks["phalanx-scheduler"].plugins["DefaultPreemption"].evictions
        return await bound_by_gang(client), await bound_nodes(client), evictions

    bound, nodes, evictions = run_scheduler(
        body, nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
        scheduler_factory=lambda c: Scheduler(c, _conf(IGNORED)))
    assert_no_partial_gang(bound, {"g": 2})
    assert evictions == 2 and "low1" not in nodes and "low2" not in nodes
    assert sorted(n for n in bound["g"] if n) == ["n1", "n2"]


def test_the_nominator_holds_only_the_checked_resources() -> None:
    """Room held for a nominated pod is compared with what the pod's profile checks."""
    sched = Scheduler(MemoryCluster(), _conf(IGNORED))
    fw = sched.frameworks["phalanx-scheduler"]
    snap = sched.cache.snapshot
    snap.set_node(node("n1", cpu="4"))
    held = PodInfo(pod("held", cpu="1", priority=10, extra={FOO: "1"}))
    sched.nominator.add(held, "n1")
    mine = PodInfo(pod("mine", cpu="1", priority=0, extra={FOO: "1"}))
    rows = snap.valid_rows()
    kept, dropped = sched.nominator.filter_rows(mine, snap, rows, fw.fit_vector)
    assert np.array_equal(kept, rows) and dropped.size == 0
    kept, dropped = sched.nominator.filter_rows(mine, snap, rows)  # everything requested
    assert kept.size == 0
