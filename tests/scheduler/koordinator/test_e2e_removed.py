"""Koordinator's end-to-end coscheduling tests that #2417 removed (TestDeadLockFree,
TestFairness, TestNoRejectWhenInvalidCycle, coscheduling_test.go before 13f40659), on the
embedded scheduler with koord-scheduler PodGroups.

Koordinator drove its scheduler by hand (`simulateScheduleOne` on a fake host with unlimited
room) and injected Filter errors: for a pod labelled `filterError`, and, in TestDeadLockFree,
for any pod once `limit` pods wait at Permit (a cluster with room for 13 waiting pods). Here
the scheduler runs on its own, one node with room for every pod, and the test plugin
`TestInjectFilterError` (below) injects the same errors. Pods are created in a shuffled
order with a fixed seed (Koordinator shuffles at random).

What is asserted, as Koordinator's:
- TestDeadLockFree: 4 gangs of 13 compete for 13 Permit slots; every pod ends up bound.
- TestFairness: gang groups {A,B,C}, {D,E}, {F,G}, {H,I,J}; one member of C, F and J always
  fails. D and E (room for 40 waiting pods) are bound; the three groups that can never run
  keep being retried, each at least 3 times (Koordinator: each gang's schedule cycle >= 3), so
  no group starves the others.
- TestNoRejectWhenInvalidCycle: a failure reported for a gang before any of its members was
  tried does not keep it from running.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from phalanx.api.core import Pod
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import (
    FilterResult,
    Plugin,
    PluginRef,
    Plugins,
    PluginSet,
    Status,
    register_plugin,
)
from phalanx.scheduler.framework.config import SchedulerConfiguration
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.types import PodInfo

from ..helpers import node, pod
from .kit import GROUPS, PG_LABEL, koord_profile, make_pg

FILTER_ERROR = "filterError"
# Gang name -> how many pods may wait at Permit before its pods fail Filter (all: None).
WAITING_LIMIT: dict[str | None, int] = {}
FAILURES: Counter[str] = Counter()  # gang name -> BeforePostFilter calls (failed cycles)


@register_plugin
class InjectFilterError(Plugin):
    """Koordinator's injected Filter errors: a `filterError` pod always fails; any pod fails
    while `WAITING_LIMIT` pods (per its gang, else for all) wait at Permit."""

    NAME = "TestInjectFilterError"

    def filter(self, state: Any, pod: Any, snap: Any, idx: Any) -> FilterResult:
        labels = pod.pod.metadata.labels or {}
        if labels.get(FILTER_ERROR) == "true":
            return FilterResult.reject_all(idx.size, "injected filter error")
        limit = WAITING_LIMIT.get(labels.get(PG_LABEL), WAITING_LIMIT.get(None))
        if limit is not None and sum(1 for _ in self.handle.waiting_pods()) >= limit:
            return FilterResult.reject_all(idx.size, f"{limit} pods wait at Permit")
        return FilterResult.all_pass(idx.size)

    def before_post_filter(self, state: Any, pod: Any, status: Any, fit: Any) -> Status:
        FAILURES[(pod.pod.metadata.labels or {}).get(PG_LABEL, "")] += 1
        return Status()


def _profile() -> Any:
    point = PluginSet(enabled=[PluginRef(name="TestInjectFilterError")])
    return koord_profile(plugins=Plugins(filter=point, before_post_filter=point))


def _gangs(
    mins: dict[str, int], groups: dict[str, list[str]], seed: int, bad: dict[str, int] | None = None
) -> list[Any]:
    """PodGroups (1 h wait) and their members, the members shuffled."""
    objs: list[Any] = []
    pods: list[Pod] = []
    for name, n in mins.items():
        group = json.dumps([f"default/{g}" for g in groups.get(name, [name])])
        objs.append(make_pg(name, min_member=n, timeout=3600, ann={GROUPS: group}))
        for j in range(n):
            lbl = {PG_LABEL: name}
            if bad and bad.get(name) == j:
                lbl[FILTER_ERROR] = "true"
            pods.append(
                pod(f"{name}-{j}", cpu="10m", memory="1Mi", scheduler="koord-scheduler", labels=lbl)
            )
    random.Random(seed).shuffle(pods)
    return objs + pods


async def _start(objs: list[Any]) -> tuple[MemoryCluster, Scheduler]:
    client = MemoryCluster()
    await client.create(node("fake-host", cpu="1000", memory="1000Gi", pods=1000))
    for o in objs:
        await client.create(o)
    # Koordinator's tests: backoff 1 s (0 s in TestFairness) and no stay among the
    # unschedulable pods (0 s; ours must be positive: 1 s).
    config = SchedulerConfiguration(
        profiles=[_profile()],
        pod_initial_backoff_seconds=1,
        pod_max_backoff_seconds=1,
        pod_max_in_unschedulable_pods_duration_seconds=1,
    )
    sched = Scheduler(client, config)
    await sched.start()
    return client, sched


async def _bound(client: MemoryCluster) -> dict[str, bool]:
    return {p.name: bool(p.spec.node_name) for p in (await client.list(Pod, "default")).items}


def test_DeadLockFree() -> None:
    WAITING_LIMIT.clear()
    WAITING_LIMIT[None] = 13
    names = ["ganga", "gangb", "gangc", "gangd"]
    objs = _gangs(dict.fromkeys(names, 13), {}, seed=1)

    async def main() -> dict[str, bool]:
        client, sched = await _start(objs)
        try:

            async def all_bound() -> bool:
                return all((await _bound(client)).values())

            await wait_for_condition(all_bound, timeout=1800)
            return await _bound(client)
        finally:
            await sched.stop()

    try:
        bound = run_virtual(main)
    finally:
        WAITING_LIMIT.clear()
    assert len(bound) == 52 and all(bound.values())


def test_Fairness() -> None:
    WAITING_LIMIT.clear()
    FAILURES.clear()
    names = "abcdefghij"
    mins = dict(
        zip((f"gang{x}" for x in names), [20, 10, 32, 20, 20, 18, 43, 20, 30, 20], strict=True)
    )
    sets = [
        ["ganga", "gangb", "gangc"],
        ["gangd", "gange"],
        ["gangf", "gangg"],
        ["gangh", "gangi", "gangj"],
    ]
    groups = {g: s for s in sets for g in s}
    rng = random.Random(7)
    bad = {g: rng.randrange(mins[g]) for g in ("gangc", "gangf", "gangj")}
    WAITING_LIMIT.update({"gangd": 40, "gange": 40})
    objs = _gangs(mins, groups, seed=7, bad=bad)

    async def main() -> tuple[dict[str, bool], Counter[str]]:
        client, sched = await _start(objs)
        try:

            async def de_bound() -> bool:
                b = await _bound(client)
                return all(v for k, v in b.items() if k.startswith(("gangd-", "gange-")))

            assert await wait_for_condition(de_bound, timeout=600)
            await wait_for_condition(lambda: False, timeout=60)  # keep running a while
            return await _bound(client), Counter(FAILURES)
        finally:
            await sched.stop()

    try:
        bound, failures = run_virtual(main)
    finally:
        WAITING_LIMIT.clear()
    assert all(v for k, v in bound.items() if k.startswith(("gangd-", "gange-")))
    assert not any(v for k, v in bound.items() if not k.startswith(("gangd-", "gange-")))
    for s in (sets[0], sets[2], sets[3]):
        assert sum(failures[g] for g in s) >= 3, (s, failures)


def test_NoRejectWhenInvalidCycle() -> None:
    WAITING_LIMIT.clear()
    groups = {"ganga": ["ganga", "gangb"], "gangb": ["ganga", "gangb"]}
    objs = _gangs({"ganga": 1, "gangb": 2}, groups, seed=3)
    pods = [o for o in objs if isinstance(o, Pod)]
    for p in pods:  # held until the stray failure below is reported
        p.spec.scheduling_gates = [{"name": "test.phalanx.io/hold"}]

    async def main() -> dict[str, bool]:
        client, sched = await _start(objs)
        try:
            cs = sched.frameworks["koord-scheduler"].plugins["Coscheduling"]
            assert await wait_for_condition(lambda: len(cs.cache.gangs()) == 2, timeout=10)
            first = await client.get(Pod, pods[0].name, "default")
            cs.before_post_filter(CycleState(), PodInfo(first), Status.unschedulable("stray"), None)
            for p in pods:
                await client.patch(Pod, p.name, {"spec": {"schedulingGates": None}}, "default")

            async def all_bound() -> bool:
                return all((await _bound(client)).values())

            await wait_for_condition(all_bound, timeout=120)
            return await _bound(client)
        finally:
            await sched.stop()

    bound = run_virtual(main)
    assert bound == {"ganga-0": True, "gangb-0": True, "gangb-1": True}
