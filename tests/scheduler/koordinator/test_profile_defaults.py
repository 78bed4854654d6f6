"""Each schedulerName's gang defaults, and the profile args that change them (issue 21,
item 2, and the options where phalanx-scheduler deliberately differs from Koordinator).

| default                         | koord-scheduler       | default-scheduler | others     |
|---------------------------------|-----------------------|-------------------|------------|
| Permit wait (defaultTimeout...) | 600 s (Koordinator)   | 300 s (kube)      | 60 s       |
| match policy                    | once-satisfied        | once-satisfied    | same       |
| satisfied once lasts            | while the object lasts| while placed      | same       |

(gang/defaults.py says where each comes from.)
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.cluster.clock import VIRTUAL_EPOCH, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import SchedulerProfile
from phalanx.scheduler.framework.config import PluginConfig
from phalanx.scheduler.gang import MatchPolicy, SatisfiedScope
from phalanx.scheduler.gang.runtime import GangRuntime

from ..gang.builders import members, podgang
from ..helpers import node, pod, run_scheduler
from .kit import MODE, PG_LABEL, koord_profile, koord_scheduler, make_pg

GANG = "coscheduling:default/g"


def _nonstrict_gang(timeout: int | None) -> list[Any]:
    """A NonStrict koord gang of 3 whose third member fits nowhere: the other two wait at
    Permit until the gang's wait runs out."""
    pg = make_pg("g", min_member=3, timeout=timeout, ann={MODE: "NonStrict"})
    return [
        pg,
        *[
            pod(
                f"m-{i}",
                gpu=1,
                scheduler="koord-scheduler",
                labels={PG_LABEL: "g"},
                node_selector={"zone": "nowhere"} if i == 2 else None,
            )
            for i in range(3)
        ],
    ]


def _time_to_release(profile: SchedulerProfile, timeout: int | None = None) -> float:
    async def body(client: MemoryCluster, sched: Scheduler) -> float:
        from phalanx.api.core import Event

        async def timed_out() -> bool:
            # Koordinator's PodGroup has no conditions: the pods' Events say it.
            events = (await client.list(Event, "default")).items
            return any(e.reason == "GangScheduleTimeout" for e in events)

        assert await wait_for_condition(timed_out, timeout=1200)
        return sched.client.clock.now() - VIRTUAL_EPOCH

    return run_scheduler(
        body,
        nodes=[node("n1", gpu=3)],
        pods=_nonstrict_gang(timeout),
        scheduler_factory=koord_scheduler(profile),
    )


def test_koord_scheduler_gangs_wait_600s_by_default() -> None:
    released = _time_to_release(koord_profile())
    assert 600 <= released < 610


def test_a_profile_sets_its_default_wait() -> None:
    released = _time_to_release(koord_profile(defaultTimeoutSeconds=120))
    assert 120 <= released < 130


def test_the_gangs_own_wait_wins_over_the_default() -> None:
    released = _time_to_release(koord_profile(), timeout=30)
    assert 30 <= released < 40


@pytest.mark.parametrize(
    ("scheduler", "want"),
    [
        (labels.SCHEDULER_KOORDINATOR, 600.0),
        (labels.SCHEDULER_DEFAULT, 300.0),
        (labels.SCHEDULER_PHALANX, 60.0),
        (labels.SCHEDULER_KAI, 60.0),
        (labels.SCHEDULER_VOLCANO, 60.0),
    ],
)
def test_default_wait_per_scheduler_name(scheduler: str, want: float) -> None:
    sched = Scheduler(MemoryCluster())  # every profile, default args
    rt = GangRuntime.for_handle(sched.handles[scheduler])
    d = rt.cache.known_defaults(scheduler)
    assert d is not None and d.timeout == want
    scope = (
        SatisfiedScope.OBJECT
        if scheduler == labels.SCHEDULER_KOORDINATOR
        else SatisfiedScope.PLACEMENT
    )
    assert d.satisfied_scope is scope and d.match_policy is MatchPolicy.ONCE_SATISFIED


def test_profile_args_are_validated_by_name() -> None:
    with pytest.raises(Exception, match="defaultMatchPolicy|default_match_policy"):
        Scheduler(MemoryCluster(), [koord_profile(defaultMatchPolicy="sometimes")])


def _replacement_run(
    profile: SchedulerProfile, objs: list[Any], gang_pods: list[Pod], replacement: Pod
) -> dict[str, str | None]:
    """The gang binds; every pod of it is deleted; one new member is created."""

    async def body(client: MemoryCluster, sched: Scheduler) -> dict[str, str | None]:
        for o in [*objs, *gang_pods]:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        assert all(p.spec.node_name for p in (await client.list(Pod, "default")).items)
        for p in gang_pods:
            await client.delete(Pod, p.name, "default")
        assert await sched.wait_idle(timeout=60)
        await client.create(replacement)
        assert await sched.wait_idle(timeout=60)
        return {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}

    return run_scheduler(
        body, nodes=[node("n1", gpu=4)], scheduler_factory=lambda c: Scheduler(c, [profile])
    )


def _phalanx_profile(**args: Any) -> SchedulerProfile:
    return SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugin_config=[PluginConfig(name="Coscheduling", args=args)],
    )


@pytest.mark.parametrize(
    ("args", "bound"),
    [
        pytest.param({}, False, id="phalanx-scheduler default: placement, placed whole again"),
        pytest.param(
            {"onceSatisfiedScope": "object"}, True, id="onceSatisfiedScope object: as Koordinator"
        ),
    ],
)
def test_phalanx_scheduler_once_satisfied_scope(args: dict[str, Any], bound: bool) -> None:
    gang = members("g", "w", 2, gpu=1)
    extra = members("g", "w", 3, gpu=1)[2]
    nodes = _replacement_run(_phalanx_profile(**args), [podgang("g", {"w": 2})], gang, extra)
    assert (nodes["w-2"] is not None) == bound


def _koord_pod(name: str) -> Pod:
    return pod(name, gpu=1, scheduler="koord-scheduler", labels={PG_LABEL: "g"})


@pytest.mark.parametrize(
    ("args", "bound"),
    [
        pytest.param(
            {}, True, id="koord-scheduler default: object, satisfied while the PodGroup exists"
        ),
        pytest.param({"onceSatisfiedScope": "placement"}, False, id="onceSatisfiedScope placement"),
    ],
)
def test_koord_scheduler_once_satisfied_scope(args: dict[str, Any], bound: bool) -> None:
    nodes = _replacement_run(
        koord_profile(**args),
        [make_pg("g", min_member=2)],
        [_koord_pod("a"), _koord_pod("b")],
        _koord_pod("c"),
    )
    assert (nodes["c"] is not None) == bound


def test_default_match_policy_arg_applies_to_gangs_that_set_none() -> None:
    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[Any, Any]:
        await client.create(make_pg("g", min_member=1))
        await client.create(
            make_pg(
                "h",
                min_member=1,
                ann={"gang.scheduling.koordinator.sh/match-policy": "waiting-and-running"},
            )
        )
        await client.create(pod("a", scheduler="koord-scheduler", labels={PG_LABEL: "g"}))
        await client.create(pod("b", scheduler="koord-scheduler", labels={PG_LABEL: "h"}))
        assert await sched.wait_idle(timeout=30)
        rt = GangRuntime.for_handle(sched.handles["koord-scheduler"])
        return rt.cache.get(GANG).policy, rt.cache.get("coscheduling:default/h").policy

    g, h = run_scheduler(
        body,
        nodes=[node("n1")],
        scheduler_factory=koord_scheduler(koord_profile(defaultMatchPolicy="only-waiting")),
    )
    assert g is MatchPolicy.ONLY_WAITING and h is MatchPolicy.WAITING_AND_RUNNING
