"""NodeVolumeLimits through the whole scheduler, on the embedded cluster with the simulated
PV controller and provisioner: CSINode limits are honoured for single pods and for gangs,
and a pod refused for a node's limit is retried when a volume goes away.

Each pod has its own WaitForFirstConsumer claim of a class whose provisioner is a CSI driver.
phalanx-scheduler packs, so every pod prefers the small node a1 on resources alone (the
control test checks it): only the volume limit sends pods to b1.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod
from phalanx.api.storage_csi import CSINode, CSINodeDriver, CSINodeSpec, VolumeNodeResources
from phalanx.cluster.clock import wait_for_condition
from phalanx.scheduler import Scheduler

from ..gang.builders import bound_by_gang, members, podgang
from ..helpers import bound_nodes, node, pod
from .kube.volume_harness import run
from .test_volume_scheduling import claim, storage_class, using

HOST = "kubernetes.io/hostname"
DRIVER = "csi.example.com"


def csi_node(name: str, count: int | None, driver: str = DRIVER) -> CSINode:
    allocatable = VolumeNodeResources(count=count) if count is not None else None
    return CSINode(metadata=ObjectMeta(name=name), spec=CSINodeSpec(drivers=[
        CSINodeDriver(name=driver, node_id=name, allocatable=allocatable)]))


def nodes() -> list[Any]:
    return [node("a1", labels={HOST: "a1"}), node("b1", cpu=64, labels={HOST: "b1"})]


def volume_pods(n: int) -> list[Any]:
    objs: list[Any] = [storage_class("csi", "WaitForFirstConsumer", provisioner=DRIVER)]
    for i in range(n):
        objs += [claim(f"c{i}", "csi"), using(pod(f"p{i}", cpu="100m"), f"c{i}")]
    return objs


async def settle(sched: Scheduler) -> None:
    assert await sched.wait_idle(timeout=120)


def message(sched: Scheduler, name: str) -> str:
    diag = sched.diagnosis(f"default/{name}")
    return diag.message() if diag is not None else ""


async def placed(client: Any, sched: Scheduler) -> dict[str, str | None]:
    await settle(sched)
    return await bound_nodes(client)


def test_a_node_whose_csinode_allows_two_volumes_takes_at_most_two_such_pods() -> None:
    where = run(placed, nodes=nodes(), objects=[csi_node("a1", 2), *volume_pods(3)])
    assert sorted(where.values()) == ["a1", "a1", "b1"]


def test_without_a_limit_every_pod_goes_to_the_preferred_node() -> None:
    """The control: a CSINode without a count (or with other drivers' counts) limits nothing."""
    where = run(placed, nodes=nodes(), objects=[csi_node("a1", None), *volume_pods(3)])
    assert sorted(where.values()) == ["a1", "a1", "a1"]
    where = run(placed, nodes=nodes(), objects=[csi_node("a1", 1, driver="other.csi.io"),
                                                *volume_pods(3)])
    assert sorted(where.values()) == ["a1", "a1", "a1"]


def test_a_pod_over_the_limit_waits_named_and_binds_when_a_volume_goes_away() -> None:
    async def body(client: Any, sched: Scheduler) -> Any:
        before = await placed(client, sched)
        pending = next(k for k, v in before.items() if v is None)
        why = message(sched, pending)
        gone = next(k for k, v in before.items() if v is not None)
        await client.delete(Pod, gone, "default")  # a deleted pod's volume may free a slot
        assert await wait_for_condition(lambda: sched.scheduled >= 3, timeout=120)
        return before, why, pending, await bound_nodes(client)

    before, why, pending, after = run(body, nodes=nodes()[:1],
                                      objects=[csi_node("a1", 2), *volume_pods(3)])
    assert sorted(before.values(), key=str) == [None, "a1", "a1"]
    assert why.startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")
    assert after[pending] == "a1"


def test_a_raised_limit_lets_the_waiting_pod_in() -> None:
    """A CSINode update that raises the driver's count requeues the pod (kube's hint)."""

    async def body(client: Any, sched: Scheduler) -> Any:
        before = await placed(client, sched)
        got = await client.get(CSINode, "a1")
        got.spec.drivers[0].allocatable = VolumeNodeResources(count=3)
        await client.update(got)
        assert await wait_for_condition(lambda: sched.scheduled >= 3, timeout=120)
        return before, await bound_nodes(client)

    before, after = run(body, nodes=nodes()[:1], objects=[csi_node("a1", 2), *volume_pods(3)])
    assert sorted(v for v in before.values() if v) == ["a1", "a1"]
    assert sorted(after.values()) == ["a1", "a1", "a1"]


def test_a_new_node_lets_the_waiting_pod_in() -> None:
    """A node added requeues the pod at once (kube waits for its CSINode, which a simulated
    node never publishes; the periodic retry would come only after 300 s)."""

    async def body(client: Any, sched: Scheduler) -> Any:
        await placed(client, sched)
        await client.create(nodes()[1])
        assert await wait_for_condition(lambda: sched.scheduled >= 3, timeout=60)
        return await bound_nodes(client)

    after = run(body, nodes=nodes()[:1], objects=[csi_node("a1", 2), *volume_pods(3)])
    assert sorted(after.values()) == ["a1", "a1", "b1"]


def gang(n: int) -> list[Any]:
    objs: list[Any] = [storage_class("csi", "WaitForFirstConsumer", provisioner=DRIVER),
                       podgang("g", {"w": n})]
    for i, m in enumerate(members("g", "w", n, cpu="100m")):
        objs += [claim(f"c{i}", "csi"), using(m, f"c{i}")]
    return objs


async def by_gang(client: Any, sched: Scheduler) -> Any:
    await settle(sched)
    return await bound_by_gang(client)


def test_a_gang_of_three_spreads_over_the_nodes_the_limits_allow() -> None:
    """Members placed earlier in the attempt hold their volumes (assumed pods count): two on
    a1, the third on b1, all bound together."""
    got = run(by_gang, nodes=nodes(), objects=[csi_node("a1", 2), csi_node("b1", 2), *gang(3)])
    assert sorted(got["g"]) == ["a1", "a1", "b1"]  # type: ignore[type-var]


def test_a_gang_that_exceeds_every_limit_binds_no_member() -> None:
    async def body(client: Any, sched: Scheduler) -> Any:
        def refused() -> bool:
            return any("exceed max volume count" in d.message()
                       for d in sched.diagnoses().values())

        assert await wait_for_condition(refused, timeout=60)
        assert not await wait_for_condition(lambda: sched.scheduled > 0, timeout=120)
        return await bound_by_gang(client)

    got = run(body, nodes=nodes()[:1], objects=[csi_node("a1", 2), *gang(3)])
    assert got["g"] == [None, None, None]
