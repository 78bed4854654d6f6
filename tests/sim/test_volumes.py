"""The simulated PV controller, provisioner and ephemeral volume controller
(phalanx.sim.volumes), as kube-controller-manager's behave."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node, NodeStatus, Pod
from phalanx.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.volumes import VolumeControllers

ZONE = "topology.kubernetes.io/zone"


def pv(name: str, size: str = "10Gi", cls: str = "std", modes: tuple[str, ...] = ("ReadWriteOnce",),
       claim: str | None = None, policy: str | None = None) -> PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes),
                            "storageClassName": cls, "nfs": {"server": "s", "path": f"/{name}"}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    if policy:
        spec["persistentVolumeReclaimPolicy"] = policy
    return PersistentVolume.model_validate({"metadata": {"name": name}, "spec": spec})


def pvc(name: str, size: str = "1Gi", cls: str | None = "std", volume: str | None = None,
        modes: tuple[str, ...] = ("ReadWriteOnce",), annotations: dict[str, str] | None = None,
        ) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"accessModes": list(modes),
                            "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    return PersistentVolumeClaim.model_validate(
        {"metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
         "spec": spec})


def sc(name: str = "std", mode: str = "Immediate",
       provisioner: str = "kubernetes.io/no-provisioner",
       default: bool = False, topologies: list[dict[str, list[str]]] | None = None,
       policy: str | None = None) -> StorageClass:
    data: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner,
                            "volumeBindingMode": mode}
    if default:
        data["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if topologies:
        data["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]}
            for t in topologies]
    if policy:
        data["reclaimPolicy"] = policy
    return StorageClass.model_validate(data)


def node(name: str, zone: str) -> Node:
    res = {"cpu": "8", "memory": "8Gi", "pods": "10"}
    return Node(metadata=ObjectMeta(name=name, labels={ZONE: zone}),
                status=NodeStatus(allocatable=res, capacity=res))


Body = Callable[[MemoryCluster, VolumeControllers], Awaitable[Any]]


def run(body: Body, *objects: Any) -> Any:
    async def main() -> Any:
        client = MemoryCluster()
        for obj in objects:
            await client.create(obj)
        volumes = VolumeControllers(client)
        await volumes.start()
        try:
            await volumes.wait_idle(timeout=60)
            return await body(client, volumes)
        finally:
            await volumes.stop()

    return run_virtual(main)


async def claim(client: MemoryCluster, name: str = "data") -> PersistentVolumeClaim:
    return await client.get(PersistentVolumeClaim, name, "default")


async def volume(client: MemoryCluster, name: str) -> PersistentVolume:
    return await client.get(PersistentVolume, name)


def test_immediate_claim_binds_to_the_smallest_available_pv_that_fits() -> None:
    async def body(client, _v):
        c = await claim(client)
        return c, await volume(client, "medium"), await volume(client, "big")

    c, medium, big = run(body, sc(), pv("tiny", "512Mi"), pv("big", "100Gi"), pv("medium", "5Gi"),
                         pv("wrong-mode", "2Gi", modes=("ReadOnlyMany",)),
                         pv("other-class", "2Gi", cls="other"), pvc("data", "1Gi"))
    assert c.spec.volume_name == "medium" and c.status.phase == "Bound"
    assert c.status.capacity == {"storage": "5Gi"}
    assert c.status.access_modes == ["ReadWriteOnce"]
    assert c.metadata.annotations[ANN_BIND_COMPLETED] and ANN_BOUND_BY_CONTROLLER in \
        c.metadata.annotations
    assert medium.status.phase == "Bound" and medium.spec.claim_ref.uid == c.metadata.uid
    assert big.status.phase == "Available" and big.spec.claim_ref is None


def test_claim_waits_pending_and_binds_when_a_pv_appears() -> None:
    async def body(client, volumes):
        before = (await claim(client)).status.phase
        await client.create(pv("late"))
        await volumes.wait_idle(timeout=60)
        return before, (await claim(client)).spec.volume_name

    assert run(body, sc(), pvc("data")) == ("Pending", "late")


def test_claim_naming_its_pv_binds_to_it_only_if_it_fits() -> None:
    async def body(client, _v):
        named, too_big = await claim(client, "named"), await claim(client, "too-big")
        return named.status.phase, too_big.status.phase

    assert run(body, sc(), pv("chosen"), pv("small", "1Gi"), pvc("named", volume="chosen"),
               pvc("too-big", "5Gi", volume="small")) == ("Bound", "Pending")


def test_pv_pre_bound_to_a_claim_goes_to_that_claim() -> None:
    async def body(client, _v):
        b, a = await claim(client, "b"), await claim(client, "a")
        return b.spec.volume_name, a.spec.volume_name

    # "reserved" is pre-bound to claim b (claimRef without uid); claim a takes the other.
    a, b = run(body, sc(), pv("reserved", "2Gi", claim="b"), pv("free", "3Gi"),
               pvc("a", "1Gi"), pvc("b", "1Gi"))[::-1]
    assert (a, b) == ("free", "reserved")


def test_claim_without_class_gets_the_default_class() -> None:
    async def body(client, _v):
        c = await claim(client)
        return c.spec.storage_class_name, c.spec.volume_name

    assert run(body, sc("std", default=True), pv("p"), pvc("data", cls=None)) == ("std", "p")


def test_wait_for_first_consumer_claim_is_left_to_the_scheduler() -> None:
    async def body(client, volumes):
        before = await claim(client)
        # The scheduler's PreBind pre-binds the PV; the controller completes the binding.
        p = await volume(client, "local")
        p.spec.claim_ref = p.spec.claim_ref or type(p.spec).model_validate(
            {"claimRef": {"namespace": "default", "name": "data",
                          "uid": before.metadata.uid}}).claim_ref
        await client.update(p)
        await volumes.wait_idle(timeout=60)
        return before.status.phase, await claim(client)

    phase, after = run(body, sc("local", "WaitForFirstConsumer"), pv("local", cls="local"),
                       pvc("data", cls="local"))
    assert phase == "Pending"
    assert after.spec.volume_name == "local" and after.status.phase == "Bound"


def test_provisioning_for_immediate_claims_follows_allowed_topologies() -> None:
    async def body(client, _v):
        c = await claim(client)
        return c, await volume(client, c.spec.volume_name or "")

    c, p = run(body, sc("fast", provisioner="csi.example.com", topologies=[{ZONE: ["b"]}]),
               pvc("data", "3Gi", cls="fast"))
    assert c.status.phase == "Bound" and p.name == f"pvc-{c.metadata.uid}"
    assert p.spec.capacity == {"storage": "3Gi"} and p.spec.csi["driver"] == "csi.example.com"
    assert p.metadata.annotations[ANN_DYNAMICALLY_PROVISIONED] == "csi.example.com"
    assert p.spec.persistent_volume_reclaim_policy == "Delete"
    req = p.spec.node_affinity.required.node_selector_terms[0].match_expressions[0]
    assert (req.key, req.values) == (ZONE, ["b"])


def test_delayed_provisioning_waits_for_the_selected_node_and_uses_its_zone() -> None:
    async def body(client, volumes):
        before = await claim(client)
        c = before.copy_deep()
        c.metadata.annotations[ANN_SELECTED_NODE] = "n-c"
        await client.update(c)
        await volumes.wait_idle(timeout=60)
        after = await claim(client)
        return before.spec.volume_name, await volume(client, after.spec.volume_name or "")

    unbound, p = run(body, node("n-c", "c"), sc("fast", "WaitForFirstConsumer", "csi.example.com"),
                     pvc("data", cls="fast"))
    assert unbound is None
    req = p.spec.node_affinity.required.node_selector_terms[0].match_expressions[0]
    assert (req.key, req.values) == (ZONE, ["c"])


def test_provisioner_drops_a_selected_node_that_does_not_exist() -> None:
    async def body(client, _v):
        return await claim(client)

    c = run(body, sc("fast", "WaitForFirstConsumer", "csi.example.com"),
            pvc("data", cls="fast", annotations={ANN_SELECTED_NODE: "gone"}))
    assert ANN_SELECTED_NODE not in c.metadata.annotations and c.spec.volume_name is None


def test_released_volumes_follow_their_reclaim_policy() -> None:
    async def body(client, volumes):
        await client.delete(PersistentVolumeClaim, "keep", "default")
        await client.delete(PersistentVolumeClaim, "drop", "default")
        await volumes.wait_idle(timeout=60)
        kept = await volume(client, "retained")
        left = [v.name for v in (await client.list(PersistentVolume)).items]
        return kept.status.phase, left

    phase, left = run(body, sc(), pv("retained", "1Gi", claim="keep"),
                      pv("deleted", "1Gi", claim="drop", policy="Delete"),
                      pvc("keep"), pvc("drop"))
    assert phase == "Released"
    assert left == ["retained"]


def test_bound_claim_whose_volume_vanished_is_lost() -> None:
    async def body(client, volumes):
        await client.delete(PersistentVolume, "p")
        await volumes.wait_idle(timeout=60)
        return (await claim(client)).status.phase

    assert run(body, sc(), pv("p"), pvc("data")) == "Lost"


def test_generic_ephemeral_volume_gets_its_claim_owned_by_the_pod() -> None:
    pod = Pod.model_validate({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [{
            "name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "std",
                         "resources": {"requests": {"storage": "1Gi"}}}}}}]}})

    async def body(client, _v):
        owner = await client.get(Pod, "web", "default")
        return owner, await claim(client, "web-scratch")

    owner, c = run(body, sc(), pv("p"), pod)
    ref = c.metadata.controller_ref()
    assert ref is not None and ref.uid == owner.metadata.uid and ref.kind == "Pod"
    assert c.metadata.labels == {"app": "web"} and c.spec.volume_name == "p"
