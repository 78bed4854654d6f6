"""Volumes and host ports through the whole scheduler, on the embedded cluster with the
simulated PV controller and provisioner (phalanx.sim.volumes)."""

from __future__ import annotations

from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.core import ContainerPort, Pod
from phalanx.api.storage import (
    ANN_SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    StorageClass,
    VolumeResourceRequirements,
)
from phalanx.cluster.clock import wait_for_condition
from phalanx.scheduler import Scheduler

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod
from .kube.volume_harness import run

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def zoned_nodes() -> list[Any]:
    return [node(f"{z}{i}", labels={HOST: f"{z}{i}", ZONE: z}) for z in ("a", "b", "c")
            for i in (1, 2)]


def storage_class(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner") -> Any:
    return StorageClass(metadata=ObjectMeta(name=name), provisioner=provisioner,
                        volume_binding_mode=mode)  # type: ignore[arg-type]


def volume(name: str, cls: str, affinity: dict[str, str] | None = None, size: str = "10Gi",
           modes: tuple[str, ...] = ("ReadWriteOnce",)) -> PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes),
                            "storageClassName": cls, "csi": {"driver": "d", "volumeHandle": name}}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": [v]} for k, v in affinity.items()]}]}}
    return PersistentVolume.model_validate({"metadata": {"name": name}, "spec": spec})


def claim(name: str, cls: str, size: str = "5Gi", modes: tuple[str, ...] = ("ReadWriteOnce",),
          volume_name: str | None = None) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PersistentVolumeClaimSpec(access_modes=list(modes),  # type: ignore[arg-type]
                                       storage_class_name=cls, volume_name=volume_name,
                                       resources=VolumeResourceRequirements(
                                           requests={"storage": size})))


def using(p: Pod, *claims: str) -> Pod:
    p.spec.volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                      for i, c in enumerate(claims)]
    return p


def with_host_port(p: Pod, port: int) -> Pod:
    p.spec.containers[0].ports = [ContainerPort(container_port=80, host_port=port)]
    return p


async def settle(sched: Scheduler) -> None:
    assert await sched.wait_idle(timeout=120)


def message(sched: Scheduler, name: str) -> str:
    diag = sched.diagnosis(f"default/{name}")
    return diag.message() if diag is not None else ""


# --- bound claims: PV node affinity ------------------------------------------------------


def test_pod_with_a_zonal_volume_lands_in_the_volumes_zone() -> None:
    """An Immediate claim bound (by the PV controller) to a PV of zone b: the pod goes to b."""

    async def body(client, sched):
        await settle(sched)
        placed = await bound_nodes(client)
        got = await client.get(PersistentVolumeClaim, "data", "default")
        return placed, got.status.phase, got.spec.volume_name

    placed, phase, bound_to = run(body, nodes=zoned_nodes(), objects=[
        storage_class("zonal", "Immediate"), volume("disk-b", "zonal", {ZONE: "b"}),
        claim("data", "zonal"), using(pod("db"), "data")])
    assert (phase, bound_to) == ("Bound", "disk-b")
    assert placed["db"] in ("b1", "b2")


def test_zone_labels_on_a_bound_pv_restrict_the_pod_to_that_zone() -> None:
    """VolumeZone: a PV labelled with zone c (no node affinity) keeps the pod in zone c."""
    pv = volume("labelled", "zonal")
    pv.metadata.labels[ZONE] = "c"

    async def body(client, sched):
        await settle(sched)
        return await bound_nodes(client)

    placed = run(body, nodes=zoned_nodes(), objects=[
        storage_class("zonal", "Immediate"), pv, claim("data", "zonal"), using(pod("db"), "data")])
    assert placed["db"] in ("c1", "c2")


# --- WaitForFirstConsumer ---------------------------------------------------------------


def test_wait_for_first_consumer_claim_binds_at_prebind_to_a_pv_on_the_chosen_node() -> None:
    """Local PVs on b1 and c2 only: the pod lands on one of them and the claim is bound (by
    the scheduler's PreBind and the PV controller) to that node's PV, before the pod binds."""

    async def body(client, sched):
        await settle(sched)
        placed = await bound_nodes(client)
        got = await client.get(PersistentVolumeClaim, "data", "default")
        pv = await client.get(PersistentVolume, got.spec.volume_name or "")
        return placed, got.status.phase, pv

    placed, phase, pv = run(body, nodes=zoned_nodes(), objects=[
        storage_class("local", "WaitForFirstConsumer"),
        volume("local-b1", "local", {HOST: "b1"}), volume("local-c2", "local", {HOST: "c2"}),
        claim("data", "local"), using(pod("db"), "data")])
    assert phase == "Bound" and pv.status.phase == "Bound"
    assert placed["db"] in ("b1", "c2")
    assert pv.name == f"local-{placed['db']}"
    assert pv.spec.claim_ref is not None and pv.spec.claim_ref.name == "data"


def test_wait_for_first_consumer_claim_with_no_fitting_pv_keeps_the_pod_pending() -> None:
    async def body(client, sched):
        await settle(sched)
        return (await bound_nodes(client))["db"], message(sched, "db")

    where, why = run(body, nodes=zoned_nodes(), objects=[
        storage_class("local", "WaitForFirstConsumer"),
        volume("small", "local", {HOST: "a1"}, size="1Gi"), claim("data", "local", size="5Gi"),
        using(pod("db"), "data")])
    assert where is None
    # (what preemption adds after it is the preemption plugin's business)
    assert why.startswith("0/6 nodes are available: 6 node(s) didn't find available persistent "
                          "volumes to bind.")


def test_dynamic_provisioning_creates_the_pv_in_the_chosen_nodes_zone() -> None:
    """A class with a provisioner: the scheduler picks a node (pinned to zone b by a node
    selector), annotates the claim with it, the provisioner creates a PV of that zone."""

    async def body(client, sched):
        await settle(sched)
        placed = await bound_nodes(client)
        got = await client.get(PersistentVolumeClaim, "data", "default")
        pv = await client.get(PersistentVolume, got.spec.volume_name or "")
        return placed, got, pv

    placed, got, pv = run(body, nodes=zoned_nodes(), objects=[
        storage_class("fast", "WaitForFirstConsumer", provisioner="csi.example.com"),
        claim("data", "fast"), using(pod("db", node_selector={ZONE: "b"}), "data")])
    assert placed["db"] in ("b1", "b2")
    assert got.metadata.annotations[ANN_SELECTED_NODE] == placed["db"]
    assert got.status.phase == "Bound" and pv.spec.storage_class_name == "fast"
    terms = pv.spec.node_affinity.required.node_selector_terms  # type: ignore[union-attr]
    assert [(r.key, r.values) for r in terms[0].match_expressions or ()] == [(ZONE, ["b"])]


def test_a_gangs_members_never_take_the_same_local_volume() -> None:
    """Two members, each with its own WaitForFirstConsumer claim; one free local PV on a1
    (a big node, which both prefer) and one on b1. The first member's PV is assumed at
    Reserve, so the second, placed in the same attempt, takes b1's PV: both bind, on a1 and
    b1, with no failed binding on the way."""

    async def body(client, sched):
        await settle(sched)
        return await bound_by_gang(client), sched.bind_failures

    nodes = [node("a1", cpu=64, labels={HOST: "a1", ZONE: "a"}),
             node("b1", labels={HOST: "b1", ZONE: "b"})]
    gang = members("g", "w", 2, cpu="100m")
    objs: list[Any] = [storage_class("local", "WaitForFirstConsumer"),
                       volume("pv-a1", "local", {HOST: "a1"}),
                       volume("pv-b1", "local", {HOST: "b1"}),
                       claim("c0", "local"), claim("c1", "local"), podgang("g", {"w": 2})]
    objs += [using(p, f"c{i}") for i, p in enumerate(gang)]
    by_gang, bind_failures = run(body, nodes=nodes, objects=objs)
    assert sorted(by_gang["g"]) == ["a1", "b1"]  # type: ignore[type-var]
    assert bind_failures == 0


# --- Immediate and missing claims ---------------------------------------------------------


def test_unbound_immediate_claim_keeps_the_pod_pending_until_the_pv_controller_binds() -> None:
    async def body(client, sched):
        await settle(sched)
        before = (await bound_nodes(client))["db"], message(sched, "db")
        got = await client.get(Pod, "db", "default")
        cond = got.get_condition("PodScheduled")
        await client.create(volume("late", "slow", {ZONE: "a"}))  # the controller binds it
        await settle(sched)
        return before, cond, (await bound_nodes(client))["db"]

    (where, why), cond, after = run(body, nodes=zoned_nodes(), objects=[
        storage_class("slow", "Immediate"), claim("data", "slow"), using(pod("db"), "data")])
    assert where is None
    assert why == "0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert cond is not None and cond.status == "False" and cond.reason == "Unschedulable"
    assert "pod has unbound immediate PersistentVolumeClaims" in cond.message
    assert after in ("a1", "a2")


def test_missing_claim_is_named_and_the_pod_binds_once_it_exists() -> None:
    async def body(client, sched):
        await settle(sched)
        why = message(sched, "db")
        await client.create(volume("pv", "std"))
        await client.create(claim("nope", "std"))
        await settle(sched)
        return why, (await bound_nodes(client))["db"]

    why, after = run(body, nodes=zoned_nodes(), objects=[
        storage_class("std", "Immediate"), using(pod("db"), "nope")])
    assert why == '0/6 nodes are available: persistentvolumeclaim "nope" not found.'
    assert after is not None


def test_read_write_once_pod_claim_in_use_rejects_a_second_pod() -> None:
    async def body(client, sched):
        await settle(sched)
        await client.create(using(pod("second"), "solo"))
        await settle(sched)
        return await bound_nodes(client), message(sched, "second")

    placed, why = run(body, nodes=zoned_nodes()[:2], objects=[
        storage_class("std", "Immediate"), volume("pv", "std", modes=("ReadWriteOncePod",)),
        claim("solo", "std", modes=("ReadWriteOncePod",)), using(pod("first"), "solo")])
    assert placed["first"] is not None and placed["second"] is None
    assert why.startswith("0/2 nodes are available: 2 node(s) unavailable due to "
                          "PersistentVolumeClaim with ReadWriteOncePod access mode already "
                          "in-use by another pod.")


# --- host ports ---------------------------------------------------------------------------


def test_two_pods_with_the_same_host_port_never_share_a_node() -> None:
    async def body(client, sched):
        await settle(sched)
        placed = await bound_nodes(client)
        return placed, [message(sched, k) for k, v in placed.items() if v is None]

    one = [node("n1", labels={HOST: "n1"})]
    placed, why = run(body, nodes=one, objects=[with_host_port(pod(f"p{i}", cpu="100m"), 8080)
                                                for i in range(3)])
    assert sorted(placed.values(), key=str) == [None, None, "n1"]
    # What the PostFilter plugins add after the filters' counts is not this test's subject.
    assert [w.split(" no new claims")[0].split(" preemption:")[0] for w in why] == [
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod "
        "ports."] * 2
    two = [node(f"n{i}", labels={HOST: f"n{i}"}) for i in (1, 2)]
    placed = run(_placed, nodes=two,
                 objects=[with_host_port(pod(f"p{i}", cpu="100m"), 8080) for i in range(2)])
    assert sorted(placed.values()) == ["n1", "n2"]


async def _placed(client, sched):
    await settle(sched)
    return await bound_nodes(client)


def test_a_gangs_members_with_the_same_host_port_take_distinct_nodes() -> None:
    """Members placed earlier in the same attempt hold their ports (assumed pods count):
    2 members on 2 nodes bind apart; on 1 node none ever binds (all or nothing)."""

    def gang() -> list[Any]:
        return [podgang("g", {"w": 2}),
                *[with_host_port(p, 9000) for p in members("g", "w", 2, cpu="100m")]]

    two = [node(f"n{i}", labels={HOST: f"n{i}"}) for i in (1, 2)]
    by_gang = run(_by_gang, nodes=two, objects=gang())
    assert sorted(by_gang["g"]) == ["n1", "n2"]  # type: ignore[type-var]

    async def on_one_node(client, sched):
        # The gang retries (its room pre-check does not model ports), so no idle to wait
        # for: wait until the second member was refused for its port, then a while more.
        def refused() -> bool:
            return any("didn't have free ports" in d.message()
                       for d in sched.diagnoses().values())

        assert await wait_for_condition(refused, timeout=60)
        assert not await wait_for_condition(lambda: sched.scheduled > 0, timeout=120)
        return await bound_by_gang(client)

    assert run(on_one_node, nodes=two[:1], objects=gang())["g"] == [None, None]


async def _by_gang(client, sched):
    await settle(sched)
    return await bound_by_gang(client)
