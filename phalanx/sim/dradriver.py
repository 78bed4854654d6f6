"""A simulated DRA driver for GPUs: publishes a DeviceClass and one ResourceSlice per node.

    driver = SimDraDriver(client, dra_pools(cluster_spec))
    await driver.start()     # slices for the nodes there are, and for nodes added later

Names follow NVIDIA's DRA driver for GPUs: driver and DeviceClass `gpu.nvidia.com` (the
class selects `device.attributes["gpu.nvidia.com"].type == "gpu"`), devices `gpu-<index>`
with the attributes `type`, `uuid`, `index`, `minor`, `productName`, `brand`,
`architecture`, `cudaComputeCapability` and `driverVersion` (versions), and the capacity
`memory`. NVIDIA's GPU driver publishes no NVLink attribute on the device; the NVLink
domain lives in GPU feature discovery's node label `nvidia.com/gpu.clique` and the
ComputeDomain status's `cliqueID`. The simulation adds that same value as the device
attribute `cliqueID`, so a claim can say `matchAttribute: gpu.nvidia.com/cliqueID`.

Each node's slice is its own pool (named after the node, generation 1, one slice), as the
real driver publishes. A node deleted takes its slice with it.
"""

from __future__ import annotations

import uuid

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node
from phalanx.api.resource import (
    CELDeviceSelector,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceClassSpec,
    DeviceSelector,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from phalanx.cluster.client import AlreadyExists, Client, NotFound
from phalanx.cluster.controller import Controller, Manager, Result

from .clusterspec import CLIQUE_LABEL, POOL_LABEL, DraGpus


def device_class(driver: str = "gpu.nvidia.com") -> DeviceClass:
    expr = f'device.driver == "{driver}" && device.attributes["{driver}"].type == "gpu"'
    return DeviceClass(metadata=ObjectMeta(name=driver), spec=DeviceClassSpec(
        selectors=[DeviceSelector(cel=CELDeviceSelector(expression=expr))]))


def slice_name(node: str, driver: str) -> str:
    return f"{node}-{driver}"


def gpu_slice(node: Node, gpus: DraGpus) -> ResourceSlice:
    """The ResourceSlice the driver publishes for `node`."""
    clique = node.metadata.labels.get(CLIQUE_LABEL, "")
    devices = []
    for i in range(gpus.count or 0):
        attrs = {
            "type": DeviceAttribute(string="gpu"),
            "uuid": DeviceAttribute(string="GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS,
                                                                   f"{node.name}/{i}"))),
            "index": DeviceAttribute(int=i),
            "minor": DeviceAttribute(int=i),
            "productName": DeviceAttribute(string=gpus.product_name),
            "brand": DeviceAttribute(string="Nvidia"),
            "architecture": DeviceAttribute(string=gpus.architecture),
            "cudaComputeCapability": DeviceAttribute(version=gpus.cuda_compute_capability),
            "driverVersion": DeviceAttribute(version=gpus.driver_version),
        }
        if clique:
            attrs["cliqueID"] = DeviceAttribute(string=clique)
        devices.append(Device(name=f"gpu-{i}", attributes=attrs,
                              capacity={"memory": DeviceCapacity(value=gpus.memory)}))
    return ResourceSlice(
        metadata=ObjectMeta(name=slice_name(node.name, gpus.driver)),
        spec=ResourceSliceSpec(driver=gpus.driver, node_name=node.name,
                               pool=ResourcePool(name=node.name, generation=1,
                                                 resource_slice_count=1),
                               devices=devices))


class SimDraDriver:
    def __init__(self, client: Client, pools: dict[str, DraGpus]) -> None:
        self.client = client
        self.pools = pools
        self.manager = Manager(client)
        self.nodes = self.manager.informer(Node)
        self.slices = self.manager.informer(ResourceSlice)
        self.ctl = self.manager.add(Controller("sim-dra-driver", self._sync))
        self.ctl.watch(self.nodes)
        self.published = 0

    async def start(self) -> None:
        for driver in sorted({g.driver for g in self.pools.values()}):
            try:
                await self.client.create(device_class(driver), returning=False)
            except AlreadyExists:
                pass
        await self.manager.start()

    async def stop(self) -> None:
        await self.manager.stop()

    async def wait_idle(self, timeout: float | None = None) -> None:
        await self.manager.wait_idle(timeout=timeout)

    async def _sync(self, key: str) -> Result | None:
        node = self.nodes.get(key)
        for driver in sorted({g.driver for g in self.pools.values()}):
            name = slice_name(key, driver)
            gpus = self.pools.get(node.metadata.labels.get(POOL_LABEL, "")) \
                if node is not None else None
            if node is None or gpus is None or gpus.driver != driver:
                if self.slices.get(name) is not None:
                    try:
                        await self.client.delete(ResourceSlice, name)
                    except NotFound:
                        pass
                continue
            if self.slices.get(name) is None:
                try:
                    await self.client.create(gpu_slice(node, gpus), returning=False)
                    self.published += 1
                except AlreadyExists:
                    pass
        return None
