"""DRA in the benchmarks: GPUs as devices instead of `nvidia.com/gpu`, and the fragmented
cluster where gang-aware allocation matters.

`with_dra(nodes, gangs)` turns the scheduler bench's workload into its DRA twin: every node
loses `nvidia.com/gpu` and publishes its 8 GPUs in a ResourceSlice (the simulated NVIDIA
driver's), and every pod that asked for a GPU gets a ResourceClaim of one device of class
`gpu.nvidia.com` instead (so each GPU pod has a claim; CPU-only gangs have none).

`run_fragmented(...)`: racks whose GPUs are partly taken (each node keeps 1 or 3 free), and
one gang per rack (a required pack on the rack) whose members each take two GPUs of one node
if they can, else one (`firstAvailable`), with as many members as the rack has free GPUs.
One member at a time, members take their first choice where it fits and the gang runs out
of GPUs in any order; planned as a gang, every member takes one. The run counts the gangs
placed with the whole-gang plan on and off.
"""

from __future__ import annotations

import random
import time
from typing import Any

from phalanx.api.core import Node, Pod
from phalanx.api.podgang import PodGang
from phalanx.api.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.clusterspec import DraGpus
from phalanx.sim.dradriver import device_class, gpu_slice

GPU = "nvidia.com/gpu"
CLASS = "gpu.nvidia.com"


def _claim(name: str, namespace: str, spec: dict[str, Any]) -> ResourceClaim:
    return ResourceClaim.model_validate({"metadata": {"name": name, "namespace": namespace},
                                        "spec": spec})


def one_gpu() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}]}}


def two_or_one_gpus() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "two", "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 2},
        {"name": "one", "deviceClassName": CLASS, "allocationMode": "ExactCount",
         "count": 1}]}]}}


def claim_pod(pod: Pod, claim: str) -> None:
    """Make `pod` use ResourceClaim `claim` (named in spec.resourceClaims) for its GPUs."""
    pod.spec.resource_claims = [{"name": "gpu", "resourceClaimName": claim}]
    for c in pod.spec.containers:
        if c.resources is not None and c.resources.requests:
            c.resources.requests.pop(GPU, None)
        if c.resources is not None and c.resources.limits:
            c.resources.limits.pop(GPU, None)
        if c.resources is not None:
            c.resources.claims = [{"name": "gpu"}]
    pod.spec.invalidate_requests()


def with_dra(nodes: list[Node], gangs: list[tuple[PodGang, list[Pod]]],
             gpus: int = 8) -> list[Any]:
    """Rewrite the workload in place for DRA; returns the objects to create first (the
    DeviceClass, the slices and the claims)."""
    spec = DraGpus(count=gpus)
    extra: list[Any] = [device_class(CLASS)]
    for n in nodes:
        n.status.allocatable.pop(GPU, None)
        n.status.capacity.pop(GPU, None)
        n.status.invalidate_allocatable()
        extra.append(gpu_slice(n, spec))
    for _, members in gangs:
        for p in members:
            wants = any(c.resources is not None and (c.resources.requests or {}).get(GPU)
                        for c in p.spec.containers)
            if not wants:
                continue
            name = f"{p.name}-gpu"
            extra.append(_claim(name, p.namespace or "default", one_gpu()))
            claim_pod(p, name)
    return extra


# --- the fragmented cluster -----------------------------------------------------------------


def _held(node: str, devices: list[int], uid: str) -> ResourceClaim:
    """A claim already allocated to `devices` of `node` and reserved by a running pod."""
    c = _claim(f"held-{node}", "bench", {"devices": {"requests": [{
        "name": "gpu", "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount",
                                   "count": len(devices)}}]}})
    c.status.allocation = AllocationResult(devices=DeviceAllocationResult(results=[
        DeviceRequestAllocationResult(request="gpu", driver=CLASS, pool=node,
                                      device=f"gpu-{i}") for i in devices]))
    c.status.reserved_for = [ResourceClaimConsumerReference(resource="pods", name="holder",
                                                           uid=uid)]
    return c


RACK = "topology.kubernetes.io/rack"  # make_nodes: 16 nodes per rack


def fragmented_workload(racks: int, seed: int = 0) -> tuple[
        list[Node], list[Any], list[tuple[PodGang, list[Pod]]]]:
    """`racks` racks of 16 nodes with 8 GPUs each; on every node all GPUs but 1 or 3 are
    held (half the nodes of a rack each); one gang per rack, packed on it (required), with
    as many members as the rack has free GPUs, each taking two GPUs or else one."""
    from phalanx.scheduler.bench import make_gangs, make_nodes

    rng = random.Random(seed)
    node_objs = make_nodes(racks * 16)
    objs: list[Any] = [device_class(CLASS)]
    for r in range(racks):
        frees = [1, 3] * 8
        rng.shuffle(frees)
        for n, free in zip(node_objs[r * 16:(r + 1) * 16], frees, strict=True):
            n.status.allocatable.pop(GPU, None)
            n.status.capacity.pop(GPU, None)
            n.status.invalidate_allocatable()
            objs.append(gpu_slice(n, DraGpus(count=8)))
            taken = sorted(rng.sample(range(8), 8 - free))
            objs.append(_held(n.name, taken, f"held-{n.name}"))
    size = 2 * 16  # free GPUs per rack
    gangs = make_gangs(racks * size, size, size, seed)
    out: list[tuple[PodGang, list[Pod]]] = []
    for gang, members in gangs:
        data = gang.to_dict()
        data["spec"]["topologyConstraint"] = {"packConstraint": {"required": RACK}}
        for p in members:
            name = f"{p.name}-gpu"
            objs.append(_claim(name, p.namespace or "bench", two_or_one_gpus()))
            claim_pod(p, name)
        out.append((PodGang.model_validate(data), members))
    return node_objs, objs, out


def run_fragmented(racks: int = 8, seed: int = 0, horizon: float = 600.0) -> dict[str, Any]:
    """Gangs placed on the fragmented cluster with and without the whole-gang plan."""
    from phalanx.scheduler import Scheduler
    from phalanx.scheduler.framework.config import (
        COSCHEDULING,
        PluginConfig,
        SchedulerConfiguration,
        SchedulerProfile,
    )

    out: dict[str, Any] = {"benchmark": "dra-fragmented", "racks": racks,
                           "nodes": racks * 16, "gpus_per_node": 8, "free_gpus_per_rack": 32,
                           "gang_size": 32, "seed": seed,
                           "horizon_virtual_seconds": horizon, "runs": {}}
    for mode, whole in (("gang-aware", True), ("pod-by-pod", False)):
        node_objs, objs, gangs = fragmented_workload(racks, seed)

        async def main(whole: bool = whole) -> dict[str, Any]:
            import asyncio

            client = MemoryCluster()
            for n in node_objs:
                await client.create(n)
            for o in objs:
                status = getattr(o, "status", None)
                made = await client.create(o)
                if isinstance(o, ResourceClaim) and status is not None and \
                        status.allocation is not None:
                    made.status = status
                    await client.update_status(made, returning=False)
            for gang, members in gangs:
                await client.create(gang)
                for p in members:
                    await client.create(p)
            prof = SchedulerProfile(scheduler_name="phalanx-scheduler")
            prof.plugin_config.append(PluginConfig(name=COSCHEDULING,
                                                   args={"wholeGangPlacement": whole}))
            sched = Scheduler(client, SchedulerConfiguration(profiles=[prof]),
                              record_events=False)
            t = time.perf_counter()
            await sched.start()
            await sched.wait_idle(timeout=horizon)
            await asyncio.sleep(0)
            wall = time.perf_counter() - t
            placed = 0
            for gang, members in gangs:
                bound = [await client.get(Pod, p.name, p.namespace) for p in members]
                placed += all(b.spec.node_name for b in bound)
            await sched.stop()
            return {"gangs": len(gangs), "gangs_placed": placed, "attempts": sched.attempts,
                    "wall_seconds": round(wall, 2)}

        out["runs"][mode] = run_virtual(main)
    runs = out["runs"]
    out["placed_only_gang_aware"] = runs["gang-aware"]["gangs_placed"] - \
        runs["pod-by-pod"]["gangs_placed"]
    return out

