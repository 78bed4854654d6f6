"""DynamicResourcesArgs.filterTimeout: the allocator's search for one node stops after it.

kube 1.36 (dynamicresources.go Filter) runs the allocator under context.WithTimeout and, when
the deadline passes, returns the Error `node <name>: timed out trying to allocate devices`:
the attempt fails and the pod retries after backoff. 0 turns the timeout off. Rows ported
from dynamicresources_test.go TestPlugin (ids = kube's names): "timeout", "timeout_zero".
Not ported: "canceled" (nothing cancels a Filter here), "timeout_disabled" (the gate is on).

The allocator's clock is replaced by one that advances a second per reading, so "the search
took longer than the timeout" does not depend on the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.dra import allocator as allocator_module
from phalanx.scheduler.dra.allocator import AllocationTimeout, Allocator
from phalanx.scheduler.dra.args import DynamicResourcesArgs
from phalanx.scheduler.dra.pools import gather_pools
from phalanx.scheduler.framework import SchedulerConfiguration
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.plugins.dynamicresources import DynamicResources
from phalanx.scheduler.snapshot import Snapshot

from . import kit
from .test_plugin import CLASS, NODE, _Handle, claim, device_class, node, node_slice, pod


@pytest.fixture
def slow_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The allocator's clock: a second passes at every reading."""
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(allocator_module, "_now", tick)
    yield now


# A prioritized request: not a plain count, so Filter runs the allocator on each node.
PRIORITIZED = [{"name": "req-0", "firstAvailable": [
    {"name": "subreq-1", "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}]}]


async def _filter(args: dict[str, Any]) -> tuple[Any, CycleState, DynamicResources]:
    client = MemoryCluster()
    snap = Snapshot()
    snap.set_node(node(NODE))
    plugin = DynamicResources(_Handle(client, snap), DynamicResourcesArgs.model_validate(args))
    tracker = plugin.tracker
    tracker.set_class(await client.create(DeviceClass.model_validate(device_class())))
    tracker.set_slice(await client.create(ResourceSlice.model_validate(node_slice(NODE))))
    tracker.set_claim(await client.create(ResourceClaim.model_validate(claim(requests=PRIORITIZED))))
    info = PodInfo(pod())
    state = CycleState()
    _, st = plugin.pre_filter(state, info, snap)
    assert st.is_success
    return plugin.filter(state, info, snap, snap.valid_rows()), state, plugin


def test_timeout(slow_clock: list[float]) -> None:
    res, state, _ = run_virtual(_filter({"filterTimeout": "1ns"}))
    assert not res.feasible.any()
    assert [r.reason for r in res.rejections] == ["node worker: timed out trying to allocate devices"]
    err = state.filter_error
    assert err is not None and err.code == Code.ERROR
    assert err.message == ('running "DynamicResources" filter plugin: node worker: '
                           "timed out trying to allocate devices")


def test_timeout_zero(slow_clock: list[float]) -> None:
    res, state, _ = run_virtual(_filter({"filterTimeout": "0"}))
    assert res.feasible.all() and state.filter_error is None


def test_a_search_within_the_timeout_is_not_stopped(slow_clock: list[float]) -> None:
    res, state, _ = run_virtual(_filter({"filterTimeout": "1h"}))
    assert res.feasible.all() and state.filter_error is None


def test_the_allocator_checks_its_deadline_at_every_search_step(slow_clock: list[float]) -> None:
    """As kube's allocateOne checks its context: the first step past the deadline stops."""
    slc = ResourceSlice.model_validate(node_slice(NODE, *[{"name": f"d{i}"} for i in range(4)]))
    cls = DeviceClass.model_validate(device_class())
    claims = [ResourceClaim.model_validate(claim(requests=[{"name": "r", "exactly": {
        "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 3}}]))]
    pools = gather_pools([slc], node(NODE))
    a = Allocator(lambda name: cls if name == CLASS else None)
    assert a.allocate(node(NODE), claims, pools) is not None  # no timeout
    steps = a.invocations
    assert steps > 3
    for timeout, done in ((2.5, 3), (100.0, None)):
        a = Allocator(lambda name: cls if name == CLASS else None)
        if done is None:
            assert a.allocate(node(NODE), claims, pools, timeout) is not None
            continue
        with pytest.raises(AllocationTimeout):
            a.allocate(node(NODE), claims, pools, timeout)
        # The deadline is 1 + 2.5: steps 1 and 2 read 2 and 3; step 3 reads 4 and stops
        # (counted, as kube counts allocateOne before it checks its context).
        assert a.invocations == done


def test_a_timed_out_attempt_fails_with_the_error_and_retries_after_backoff(
        slow_clock: list[float]) -> None:
    """On the scheduler: the pod is not bound, its diagnosis is the Error (no PostFilter),
    and it is tried again with no cluster event (backoff, not the unschedulable pool)."""

    def conf(timeout: str) -> SchedulerConfiguration:
        return SchedulerConfiguration.model_validate({"profiles": [{
            "schedulerName": "phalanx-scheduler",
            "pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": timeout}}]}]})

    def run(timeout: str) -> tuple[str | None, Any, int]:
        async def body(client: MemoryCluster, sched: Scheduler, ctl: Any) -> Any:
            p = await client.get(Pod, "p", "default")
            attempts = sched.attempts
            await kit.settle(sched, ctl, strict=False)
            return p.spec.node_name, sched.diagnosis("default/p"), sched.attempts - attempts

        return kit.run_dra(body, kit.cluster_spec(1, 4),
                           [kit.template("alt", kit.claim_spec(kit.prioritized("gpus", 2, 1))),
                            kit.claim_pod("p", template="alt")],
                           lambda c: Scheduler(c, conf(timeout)), strict=False)

    bound, diag, retries = run("1s")
    assert bound is None
    assert diag is not None and diag.code == Code.ERROR
    assert "timed out trying to allocate devices" in diag.message()
    assert "preemption" not in diag.message()
    assert retries > 0  # backoff brought it back without any event
    bound, diag, _ = run("0")
    assert bound == "gpu-000" and diag is None
