"""DRA on a real kube-apiserver 1.36 (resource.k8s.io/v1), next to the real kube-scheduler.

A fake driver (this test) publishes a DeviceClass and a ResourceSlice of 4 GPUs for one fake
node. Claims of two GPUs on one clique are then allocated in turn by phalanx-scheduler (in
this process, on a KubeCluster) and by kube-scheduler, each honouring what the other
allocated: the API server accepts phalanx's allocation and reservation, kube-scheduler
gives the next claim the two GPUs phalanx left, and then neither scheduler finds a device
for a third claim. Both allocations have the same form (request, driver, pool, node
selector), which is what kube's allocator writes.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from phalanx.api.core import Node, Pod
from phalanx.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.cluster.client import NotFound
from phalanx.envtest import wait_until_async
from phalanx.sim.clusterspec import DraGpus
from phalanx.sim.dradriver import device_class, gpu_slice

from .kit import claim, claim_pod, claim_spec, request


async def _bound(kube, ns: str, name: str) -> str | None:
    p = await kube.get(Pod, name, ns)
    return p.spec.node_name


async def _unschedulable(kube, ns: str, name: str) -> str:
    p = await kube.get(Pod, name, ns)
    cond = p.get_condition("PodScheduled")
    return cond.message if cond is not None and cond.status == "False" else ""


@pytest.mark.timeout(180)
def test_phalanx_and_kube_scheduler_allocate_the_same_claims(control_plane, kube_scheduler,
                                                             kube_namespace, fake_nodes):
    from phalanx.scheduler import Scheduler
    from phalanx.scheduler.framework.config import default_profile

    ns = kube_namespace
    [node] = fake_nodes(1)
    driver = f"gpu-{uuid.uuid4().hex[:6]}.example.com"
    attr = f"{driver}/cliqueID"

    async def main():
        async with control_plane.client() as kube:
            n = await kube.get(Node, node)
            n.metadata.labels["nvidia.com/gpu.clique"] = "clique-a.0"
            dc = await kube.create(device_class(driver))
            rs = await kube.create(gpu_slice(n, DraGpus(driver=driver, count=4)))
            spec = claim_spec(request(count=2), match=attr)
            spec["devices"]["requests"][0]["exactly"]["deviceClassName"] = driver
            for name in ("phx", "kube", "third-kube", "third-phx"):
                await kube.create(claim(name, spec, namespace=ns))
            # Only phalanx-scheduler's profile: kube-scheduler serves default-scheduler.
            sched = Scheduler(kube, [default_profile("phalanx-scheduler")])
            await sched.start()
            try:
                await kube.create(claim_pod("phx", claim="phx").model_copy(
                    update={"metadata": _meta("phx", ns)}))
                await wait_until_async(lambda: _bound(kube, ns, "phx"), timeout=60,
                                       what="phalanx-scheduler binds pod phx")
                phx = await kube.get(ResourceClaim, "phx", ns)
                await kube.create(claim_pod("kube", claim="kube", scheduler="default-scheduler")
                                  .model_copy(update={"metadata": _meta("kube", ns)}))
                await wait_until_async(lambda: _bound(kube, ns, "kube"), timeout=60,
                                       what="kube-scheduler binds pod kube")
                kc = await kube.get(ResourceClaim, "kube", ns)
                await kube.create(claim_pod("third-kube", claim="third-kube",
                                            scheduler="default-scheduler").model_copy(
                    update={"metadata": _meta("third-kube", ns)}))
                await kube.create(claim_pod("third-phx", claim="third-phx").model_copy(
                    update={"metadata": _meta("third-phx", ns)}))
                kube_msg = await wait_until_async(
                    lambda: _unschedulable(kube, ns, "third-kube"), timeout=60,
                    what="kube-scheduler reports third-kube unschedulable")
                phx_msg = await wait_until_async(
                    lambda: _unschedulable(kube, ns, "third-phx"), timeout=60,
                    what="phalanx-scheduler reports third-phx unschedulable")
                return phx, kc, kube_msg, phx_msg
            finally:
                await sched.stop()
                for pod in ("phx", "kube", "third-kube", "third-phx"):
                    try:
                        await kube.delete(Pod, pod, ns)
                    except NotFound:
                        pass
                await kube.delete(ResourceSlice, rs.name)
                await kube.delete(DeviceClass, dc.name)

    phx, kc, kube_msg, phx_msg = asyncio.run(main())
    for c, pod in ((phx, "phx"), (kc, "kube")):
        alloc = c.status.allocation
        assert alloc is not None, c.name
        assert [r.request for r in alloc.devices.results] == ["gpus", "gpus"]
        assert {r.driver for r in alloc.devices.results} == {driver}
        assert alloc.node_selector.node_selector_terms[0].match_fields[0].values == [node]
        assert [r.name for r in c.status.reserved_for or ()] == [pod], c.to_dict()
    mine = {r.device for r in phx.status.allocation.devices.results}
    theirs = {r.device for r in kc.status.allocation.devices.results}
    assert mine.isdisjoint(theirs) and len(mine | theirs) == 4
    assert "cannot allocate all claims" in kube_msg
    assert "cannot allocate all claims" in phx_msg


def _meta(name: str, ns: str):
    from phalanx.api.base import ObjectMeta

    return ObjectMeta(name=name, namespace=ns)
