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


def _scaled_follows_base(required: bool) -> dict[str, list[str | None]]:
    """Base PodGang `b` (2 x 1 GPU, rack pack) fills r1-n0 (bin-packing: the fullest node
    that fits); a stranger takes 1 of r2-n0's 4 GPUs; then the scaled PodGang `s`
    (label grove.io/base-podgang: b). Bin-packing alone would put `s` on r2-n0, the fuller
    node (1 of 4 GPUs used by a stranger); following its base it goes to r1-n1."""
    from phalanx.api import labels

    from ..helpers import pod

    def gang(name: str) -> PodGang:
        pg = podgang(name, {f"{name}w": 2}, required=RACK if required else None, preferred=None if required else RACK)
        if name == "s":
            pg.metadata.labels[labels.LABEL_BASE_PODGANG] = "b"
        return pg

    async def body(client: MemoryCluster, sched: Scheduler):
        for o in [gang("b"), *members("b", "bw", 2, gpu=1, cpu="100m", node_selector={RACK: "r1"})]:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        await client.create(pod("stranger", gpu=1, cpu="100m", node_selector={HOST: "r2-n0"}))
        assert await sched.wait_idle(timeout=60)
        for o in [gang("s"), *members("s", "sw", 2, gpu=1, cpu="100m")]:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client)

    # Preferred: r2 (8 GPUs) has the most room, which the preference alone would pick.
    return run_scheduler(body, nodes=rack_nodes({"r1": [2, 4], "r2": [4 if required else 8]}))


def test_a_scaled_podgang_goes_to_its_base_podgangs_required_domain() -> None:
    bound = _scaled_follows_base(required=True)
    assert bound["b"] == ["r1-n0", "r1-n0"]
    assert _racks(bound["s"]) == {"r1"} and all(bound["s"])


def test_a_scaled_podgang_tries_its_base_podgangs_preferred_domain_first() -> None:
    bound = _scaled_follows_base(required=False)
    assert _racks(bound["b"]) == {"r1"}
    assert _racks(bound["s"]) == {"r1"} and all(bound["s"])


def test_placed_members_pin_the_required_domain_even_when_another_looks_better() -> None:
    """Issue 21, "Gang invariants": once a member is placed, the rest of a required scope go to
    its domain. Here r2 cannot hold the gang of 2 (a stranger holds 3 of its 4 GPUs), so the
    first member goes to r1; for the second alone r2-n0 then looks better (bin-packing
    prefers the fuller node), and only the pin keeps it in r1."""
    from ..helpers import pod

    async def body(client: MemoryCluster, sched: Scheduler):
        await client.create(pod("stranger", gpu=3, cpu="100m", node_selector={HOST: "r2-n0"}))
        assert await sched.wait_idle(timeout=60)
        for o in [podgang("g", {"w": 2}, required=RACK), *members("g", "w", 2, gpu=1, cpu="100m")]:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        return await bound_by_gang(client)

    bound = run_scheduler(body, nodes=rack_nodes({"r1": [2], "r2": [4]}))
    assert bound["g"] == ["r1-n0", "r1-n0"]
