"""Topology packing from PodGang pack constraints: required domains, room per domain, preferences."""

from __future__ import annotations

from phalanx.api.podgang import PodGang
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import node, run_scheduler

RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"


def rack_nodes(spec: dict[str, list[int | tuple[int, int]]]) -> list:
    """rack -> per node: GPUs, or (GPUs, cpus). LeastAllocated prefers nodes with more free cpu."""
    out = []
    for rack, nodes in spec.items():
        for i, n in enumerate(nodes):
            gpus, cpus = n if isinstance(n, tuple) else (n, 8)
            name = f"{rack}-n{i}"
            out.append(node(name, gpu=gpus, cpu=cpus, labels={RACK: rack, HOST: name}))
    return out


def _racks(bound: list[str | None]) -> set[str]:
    return {n.split("-")[0] for n in bound if n}


def test_required_rack_picks_a_rack_with_room_for_the_whole_gang() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client)

    # r1's node is the emptiest (LeastAllocated would start there) but has only 3 GPUs.
    bound = run_scheduler(
        body,
        nodes=rack_nodes({"r1": [(3, 64)], "r2": [2, 2]}),
        pods=[podgang("g", {"w": 4}, required=RACK), *members("g", "w", 4, gpu=1, cpu="100m")],
    )
    assert all(bound["g"]) and _racks(bound["g"]) == {"r2"}


def test_required_pack_that_no_domain_can_hold_is_explained() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        cond = (await client.get(PodGang, "g", "default")).condition(CONDITION_GANG_SCHEDULED)
        return await bound_by_gang(client), cond

    bound, cond = run_scheduler(
        body,
        nodes=rack_nodes({"r1": [2], "r2": [2]}),
        pods=[podgang("g", {"w": 3}, required=RACK), *members("g", "w", 3, gpu=1, cpu="100m")],
    )
    assert bound["g"] == [None] * 3
    assert cond is not None and cond.reason == "Unschedulable"
    assert f"topology domain ({RACK}) without room for the gang's 3 pods" in cond.message


def test_group_level_required_host_and_gang_level_preferred_rack() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client)

    pods = [
        podgang("g", {"a": 2, "b": 2}, preferred=RACK, group_required={"a": HOST, "b": HOST}),
        *members("g", "a", 2, gpu=1, cpu="100m"),
        *members("g", "b", 2, gpu=1, cpu="100m"),
    ]
    for p in pods[1:]:
        p.metadata.name = f"{p.metadata.labels['grove.io/podclique']}-{p.metadata.name}"
    # Group a goes to the emptiest host (r1-n0); by free cpu group b would pick r2.
    bound = run_scheduler(body, nodes=rack_nodes({"r1": [(2, 64), (2, 8)], "r2": [(2, 32), (2, 32)]}), pods=pods)
    nodes = bound["g"]
    assert all(nodes)
    # Each group on one host; the whole gang in one rack (preferred, and possible).
    assert len(_racks(nodes)) == 1
    assert len(set(nodes)) == 2


def test_preferred_rack_follows_the_first_member() -> None:
    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client)

    bound = run_scheduler(
        body,
        nodes=rack_nodes({"r1": [(1, 64), (1, 8), (1, 8)], "r2": [(1, 32), (1, 32), (1, 32)]}),
        pods=[podgang("g", {"w": 3}, preferred=RACK), *members("g", "w", 3, gpu=1, cpu="100m")],
    )
    assert all(bound["g"]) and len(_racks(bound["g"])) == 1
