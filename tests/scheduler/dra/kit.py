"""Builders for DRA tests on the embedded cluster: GPU nodes with the simulated driver,
claim templates, pods with claims, and a running scheduler with the claim controller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from phalanx.api.core import Pod
from phalanx.api.resource import ResourceClaim, ResourceClaimTemplate
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.sim.clusterspec import ClusterSpec, build_nodes, dra_pools
from phalanx.sim.dradriver import SimDraDriver
from phalanx.sim.resourceclaims import ResourceClaimController

GPU_CLASS = "gpu.nvidia.com"
CLIQUE = "gpu.nvidia.com/cliqueID"


def cluster_spec(nodes: int = 2, gpus: int = 4, *, domain_nodes: int = 1,
                 labels: dict[str, str] | None = None, nodes_per: dict[str, int] | None = None,
                 topology: list[dict[str, str]] | None = None) -> ClusterSpec:
    return ClusterSpec.model_validate({"metadata": {"name": "dra"}, "spec": {
        "topology": topology or [],
        "nodePools": [{"name": "gpu", "count": nodes,
                       "allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus),
                                       "pods": "110"},
                       "labels": labels or {}, "nodesPer": nodes_per or {},
                       "dra": {"nvlinkDomainNodes": domain_nodes}}]}})


def request(name: str = "gpus", count: int = 1, *, selectors: list[str] = (),
            mode: str = "ExactCount") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def prioritized(name: str, *counts: int) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [
        {"name": f"n{c}", "deviceClassName": GPU_CLASS, "count": c} for c in counts]}


def claim_spec(*requests: dict[str, Any], match: str | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests) or [request()]}
    if match:
        devices["constraints"] = [{"matchAttribute": match}]
    return {"devices": devices}


def template(name: str, spec: dict[str, Any], namespace: str = "default") -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"spec": spec}})


def claim(name: str, spec: dict[str, Any], namespace: str = "default") -> ResourceClaim:
    return ResourceClaim.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec})


def claim_pod(name: str, *, template: str | None = None, claim: str | None = None,
              labels: dict[str, str] | None = None, cpu: str = "1",
              scheduler: str = "phalanx-scheduler", priority: int | None = None) -> Pod:
    entry: dict[str, Any] = {"name": "gpus"}
    if template:
        entry["resourceClaimTemplateName"] = template
    else:
        entry["resourceClaimName"] = claim
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu},
                                                  "claims": [{"name": "gpus"}]}}],
        "resourceClaims": [entry]}
    if priority is not None:
        spec["priority"] = priority
    return Pod.model_validate({"metadata": {"name": name, "namespace": "default",
                                            "labels": labels or {}}, "spec": spec})


async def settle(sched: Scheduler, ctl: ResourceClaimController, rounds: int = 3, *,
                 strict: bool = True) -> None:
    """Until the controller and the scheduler are idle. `strict=False` for a scheduler that
    keeps retrying (a gang that can never fit): give up after 120 s of virtual time."""
    for _ in range(rounds):
        await ctl.wait_idle()
        idle = await sched.wait_idle(timeout=120)
        assert idle or not strict


def run_dra(body: Callable[[MemoryCluster, Scheduler, ResourceClaimController], Awaitable[Any]],
            spec: ClusterSpec, objects: list[Any] = (),  # type: ignore[assignment]
            scheduler_factory: Callable[[MemoryCluster], Scheduler] | None = None, *,
            strict: bool = True) -> Any:
    """Nodes of `spec` with the simulated driver, the claim controller and a scheduler."""

    async def main() -> Any:
        client = MemoryCluster()
        for n in build_nodes(spec):
            await client.create(n)
        driver = SimDraDriver(client, dra_pools(spec))
        ctl = ResourceClaimController(client)
        await driver.start()
        await ctl.start()
        await driver.wait_idle()
        sched = scheduler_factory(client) if scheduler_factory else Scheduler(client)
        await sched.start()
        try:
            for obj in objects:
                await client.create(obj)
            await settle(sched, ctl, strict=strict)
            return await body(client, sched, ctl)
        finally:
            await sched.stop()
            await ctl.stop()
            await driver.stop()

    return run_virtual(main)


async def allocations(client: MemoryCluster) -> dict[str, list[str] | None]:
    """Generated claim's pod entry (or claim name) -> allocated devices (node/device)."""
    out: dict[str, list[str] | None] = {}
    for c in (await client.list(ResourceClaim, "default")).items:
        a = c.status.allocation
        owner = c.metadata.controller_ref()
        key = owner.name if owner is not None else c.name
        out[key] = sorted(f"{r.pool}/{r.device}" for r in a.devices.results) if a else None
    return out
