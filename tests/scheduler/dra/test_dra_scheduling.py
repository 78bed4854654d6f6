"""DynamicResources on the embedded cluster with the simulated GPU driver and the
resourceclaim controller: claims from templates, allocation at PreBind, matchAttribute on
the NVLink clique, All, prioritized alternatives, shared claims, deallocation."""

from __future__ import annotations

from phalanx.api.core import Pod
from phalanx.api.resource import FINALIZER, ResourceClaim

from .kit import (
    CLIQUE,
    allocations,
    claim,
    claim_pod,
    claim_spec,
    cluster_spec,
    prioritized,
    request,
    run_dra,
    settle,
    template,
)


async def _nodes(client) -> dict[str, str | None]:
    return {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}


def test_template_claims_are_allocated_at_prebind_and_reserved_for_their_pod() -> None:
    async def body(client, sched, ctl):
        claims = (await client.list(ResourceClaim, "default")).items
        return await _nodes(client), claims, sched.diagnosis("default/p4")

    nodes, claims, diag = run_dra(body, cluster_spec(2, 4), [
        template("two", claim_spec(request(count=2), match=CLIQUE)),
        *[claim_pod(f"p{i}", template="two") for i in range(5)]])
    assert sorted(n for n in nodes.values() if n) == ["gpu-000"] * 2 + ["gpu-001"] * 2
    assert nodes["p4"] is None
    assert diag is not None and "2 cannot allocate all claims" in diag.message()
    by_pod = {c.metadata.controller_ref().name: c for c in claims}
    for name, node in nodes.items():
        c = by_pod[name]
        assert c.name.startswith(f"{name}-gpus-") and len(c.name) == len(f"{name}-gpus-") + 5
        if node is None:
            assert c.status.allocation is None
            continue
        alloc = c.status.allocation
        assert alloc is not None and [r.pool for r in alloc.devices.results] == [node, node]
        assert alloc.node_selector.node_selector_terms[0].match_fields[0].values == [node]
        assert [r.name for r in c.status.reserved_for] == [name]
        assert FINALIZER in c.metadata.finalizers
    used = [f"{r.pool}/{r.device}" for c in claims if c.status.allocation
            for r in c.status.allocation.devices.results]
    assert len(used) == len(set(used)) == 8


def test_deleting_a_pod_frees_its_devices_and_deletes_its_generated_claim() -> None:
    async def body(client, sched, ctl):
        await client.create(claim_pod("p1", template="all4"))
        await settle(sched, ctl)
        before = await _nodes(client)
        await client.delete(Pod, "p0", "default")
        await settle(sched, ctl)
        claims = {c.metadata.controller_ref().name for c in
                  (await client.list(ResourceClaim, "default")).items}
        return before, await _nodes(client), claims, await allocations(client)

    before, after, claims, allocs = run_dra(body, cluster_spec(1, 4), [
        template("all4", claim_spec(request(count=4))), claim_pod("p0", template="all4")])
    assert before == {"p0": "gpu-000", "p1": None}
    assert after == {"p1": "gpu-000"}
    assert claims == {"p1"}
    assert allocs == {"p1": [f"gpu-000/gpu-{i}" for i in range(4)]}


def test_all_mode_takes_every_matching_device_of_the_node() -> None:
    async def body(client, sched, ctl):
        return await _nodes(client), await allocations(client)

    nodes, allocs = run_dra(body, cluster_spec(1, 3), [
        template("every", claim_spec(request(mode="All"))),
        claim_pod("p", template="every")])
    assert nodes == {"p": "gpu-000"}
    assert allocs == {"p": ["gpu-000/gpu-0", "gpu-000/gpu-1", "gpu-000/gpu-2"]}


def test_selectors_on_attributes_and_capacity_choose_the_devices() -> None:
    async def body(client, sched, ctl):
        return await _nodes(client), await allocations(client)

    sel = ['device.attributes["gpu.nvidia.com"].index >= 2',
           'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
           'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))']
    nodes, allocs = run_dra(body, cluster_spec(1, 4), [
        template("high", claim_spec(request(count=2, selectors=sel))),
        template("huge", claim_spec(request(selectors=[
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) >= 0']))),
        claim_pod("p", template="high"), claim_pod("q", template="huge")])
    assert nodes == {"p": "gpu-000", "q": None}
    assert allocs == {"p": ["gpu-000/gpu-2", "gpu-000/gpu-3"], "q": None}


def test_prioritized_alternatives_fall_back_to_the_first_that_fits() -> None:
    async def body(client, sched, ctl):
        return await _nodes(client), await allocations(client)

    nodes, allocs = run_dra(body, cluster_spec(2, 2), [
        template("three-or-one", claim_spec(prioritized("gpus", 3, 1))),
        claim_pod("a", template="three-or-one")])
    assert allocs == {"a": [f"{nodes['a']}/gpu-0"]}  # 3 fit nowhere: the second choice


def test_a_claim_shared_by_two_pods_is_allocated_once_and_reserved_for_both() -> None:
    async def body(client, sched, ctl):
        c = await client.get(ResourceClaim, "shared", "default")
        return await _nodes(client), c

    nodes, c = run_dra(body, cluster_spec(2, 2), [
        claim("shared", claim_spec(request(count=2))),
        claim_pod("a", claim="shared"), claim_pod("b", claim="shared")])
    assert nodes["a"] == nodes["b"] is not None
    assert sorted(r.name for r in c.status.reserved_for) == ["a", "b"]
    assert len(c.status.allocation.devices.results) == 2


def test_a_claim_reserved_by_nobody_any_more_is_deallocated() -> None:
    async def body(client, sched, ctl):
        before = await client.get(ResourceClaim, "shared", "default")
        await client.delete(Pod, "a", "default")
        await settle(sched, ctl)
        after = await client.get(ResourceClaim, "shared", "default")
        return before, after

    before, after = run_dra(body, cluster_spec(1, 2), [
        claim("shared", claim_spec(request())), claim_pod("a", claim="shared")])
    assert before.status.allocation is not None and FINALIZER in before.metadata.finalizers
    assert after.status.allocation is None and not after.status.reserved_for
    assert FINALIZER not in after.metadata.finalizers


def test_pods_wait_for_a_missing_template_or_class_and_say_which() -> None:
    async def body(client, sched, ctl):
        first = await _nodes(client)
        await client.create(template("later", claim_spec(request())))
        await settle(sched, ctl)
        return first, await _nodes(client)

    first, nodes = run_dra(body, cluster_spec(1, 1), [claim_pod("p", template="later")])
    assert first == {"p": None}
    assert nodes == {"p": "gpu-000"}
