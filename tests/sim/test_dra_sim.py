"""The simulated DRA driver, the resourceclaim controller, and the ClusterSpec option."""

from __future__ import annotations

from phalanx.api.core import Pod
from phalanx.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.clusterspec import CLIQUE_LABEL, ClusterSpec, build_nodes, dra_pools
from phalanx.sim.dradriver import SimDraDriver
from phalanx.sim.resourceclaims import ResourceClaimController, generate_name

from tests.scheduler.dra.kit import claim_pod, claim_spec, request, template


def _spec(**dra) -> ClusterSpec:
    return ClusterSpec.model_validate({"metadata": {"name": "s"}, "spec": {"nodePools": [
        {"name": "gb200", "count": 4, "allocatable": {"cpu": "8", "nvidia.com/gpu": "4"},
         "dra": dra}]}})


def test_dra_pools_take_the_gpus_off_the_node_and_group_cliques() -> None:
    spec = _spec(nvlinkDomainNodes=2)
    nodes = build_nodes(spec)
    assert all("nvidia.com/gpu" not in n.status.allocatable for n in nodes)
    cliques = [n.metadata.labels[CLIQUE_LABEL] for n in nodes]
    assert cliques[0] == cliques[1] != cliques[2] == cliques[3]
    assert dra_pools(spec)["gb200"].count == 4
    kept = build_nodes(_spec(keepExtendedResource=True))
    assert all(n.status.allocatable["nvidia.com/gpu"] == "4" for n in kept)


def test_the_driver_publishes_a_slice_per_node_as_nvidias_driver_names_things() -> None:
    spec = _spec(nvlinkDomainNodes=2, productName="NVIDIA GB200", memory="186Gi")

    async def main():
        c = MemoryCluster()
        for n in build_nodes(spec):
            await c.create(n)
        drv = SimDraDriver(c, dra_pools(spec))
        await drv.start()
        await drv.wait_idle()
        slices = (await c.list(ResourceSlice)).items
        classes = (await c.list(DeviceClass)).items
        await drv.stop()
        return slices, classes

    slices, classes = run_virtual(main())
    assert [dc.name for dc in classes] == ["gpu.nvidia.com"]
    assert len(slices) == 4
    rs = sorted(slices, key=lambda s: s.name)[0]
    assert (rs.spec.driver, rs.spec.node_name, rs.spec.pool.name) == (
        "gpu.nvidia.com", "gb200-000", "gb200-000")
    dev = rs.spec.devices[2]
    assert dev.name == "gpu-2" and dev.attributes["index"].int_value == 2
    assert dev.attributes["productName"].string == "NVIDIA GB200"
    assert dev.attributes["type"].string == "gpu"
    assert dev.attributes["cliqueID"].string.endswith(".0")
    assert dev.capacity["memory"].value == "186Gi"


def test_generated_claim_names_keep_both_parts_when_cut() -> None:
    assert generate_name("pod", "gpus") == "pod-gpus-"
    long = generate_name("p" * 60, "c" * 20)
    assert len(long) <= 57 and long.startswith("p") and long.endswith("c")


def test_claims_are_made_for_pods_named_in_their_status_and_gone_with_them() -> None:
    async def main():
        c = MemoryCluster()
        ctl = ResourceClaimController(c)
        await ctl.start()
        await c.create(template("t", claim_spec(request(count=2))))
        await c.create(claim_pod("p", template="t"))
        await ctl.wait_idle()
        p = await c.get(Pod, "p", "default")
        claims = (await c.list(ResourceClaim, "default")).items
        await c.delete(Pod, "p", "default")
        await ctl.wait_idle()
        left = (await c.list(ResourceClaim, "default")).items
        await ctl.stop()
        return p, claims, left

    p, claims, left = run_virtual(main())
    [claim] = claims
    assert p.status.resource_claim_statuses == [{"name": "gpus",
                                                 "resourceClaimName": claim.name}]
    assert claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "gpus"
    ref = claim.metadata.controller_ref()
    assert ref is not None and ref.kind == "Pod" and ref.name == "p"
    assert claim.spec.devices.requests[0].exactly.count == 2
    assert left == []  # garbage-collected with its owner
