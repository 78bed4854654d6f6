"""The simulated kubelet: start delay, startup order, failing pods, lost nodes."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Node, NodeCondition, Pod, PodSpec
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.kubelet import ANNOTATION_STARTS_AFTER, Kubelet

NS = "default"


def pod(name: str, clique: str = "c", after: str | None = None) -> Pod:
    meta = ObjectMeta(name=name, namespace=NS, labels={L.LABEL_PODCLIQUE: clique})
    if after:
        meta.annotations[ANNOTATION_STARTS_AFTER] = after
    return Pod(metadata=meta, spec=PodSpec(containers=[Container(name="main", image="x")]))


async def node(cluster: MemoryCluster, name: str, ready: bool = True) -> None:
    n = Node(metadata=ObjectMeta(name=name))
    n.status.conditions.append(NodeCondition(type="Ready", status="True" if ready else "False"))
    await cluster.create(n)


async def phase(cluster: MemoryCluster, name: str) -> str:
    return (await cluster.get(Pod, name, NS)).status.phase


def run(scenario, start_delay: float = 0.0) -> None:  # noqa: ANN001
    async def main() -> None:
        cluster = MemoryCluster()
        kubelet = Kubelet(cluster, start_delay=start_delay)
        await kubelet.start()
        try:
            await scenario(cluster, kubelet)
        finally:
            await kubelet.stop()

    run_virtual(main)


def test_bound_pods_run_after_the_start_delay() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        for name in ("bound", "unbound"):
            await cluster.create(pod(name))
        await cluster.bind("bound", NS, "n1")
        await kubelet.wait_idle()
        assert await phase(cluster, "bound") == "Pending"
        await asyncio.sleep(4.9)
        await kubelet.wait_idle()
        assert await phase(cluster, "bound") == "Pending"
        await asyncio.sleep(0.2)
        await kubelet.wait_idle()
        p = await cluster.get(Pod, "bound", NS)
        assert p.status.phase == "Running" and p.is_ready
        assert p.status.start_time is not None
        assert p.status.container_statuses[0]["state"]["running"]
        assert await phase(cluster, "unbound") == "Pending"
        assert kubelet.started == 1
        assert cluster.stats.writes[("update_status", "Pod")] == 1  # one write per start

    run(scenario, start_delay=5.0)


def test_starts_after_waits_for_ready_predecessors() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("leader-0", clique="leader"))
        await cluster.create(pod("leader-1", clique="leader"))
        await cluster.create(pod("worker-0", clique="worker", after="leader:2"))
        await cluster.bind("worker-0", NS, "n1")
        await cluster.bind("leader-0", NS, "n1")
        await asyncio.sleep(20)
        await kubelet.wait_idle()
        w = await cluster.get(Pod, "worker-0", NS)
        assert w.status.phase == "Pending"
        cond = w.get_condition("Initialized")
        assert cond.reason == "WaitingForStartupDependencies"
        assert cond.message == "waiting for 2 Ready pod(s) of leader"
        await cluster.bind("leader-1", NS, "n1")
        await asyncio.sleep(5)  # leader-1 starts; the worker's delay starts only then
        await kubelet.wait_idle()
        assert await phase(cluster, "leader-1") == "Running"
        assert await phase(cluster, "worker-0") == "Pending"
        await asyncio.sleep(5)
        await kubelet.wait_idle()
        w = await cluster.get(Pod, "worker-0", NS)
        assert w.status.phase == "Running"
        leader = await cluster.get(Pod, "leader-1", NS)
        assert (w.status.start_time - leader.status.start_time).total_seconds() == 5.0

    run(scenario, start_delay=5.0)


def test_fail_pod() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p"))
        await cluster.create(pod("never-bound"))
        assert not await kubelet.fail_pod("never-bound")
        assert not await kubelet.fail_pod("missing")
        await cluster.bind("p", NS, "n1")
        await kubelet.wait_idle()
        assert await kubelet.fail_pod("p", exit_code=137, reason="OOMKilled")
        await asyncio.sleep(3600)
        await kubelet.wait_idle()
        p = await cluster.get(Pod, "p", NS)
        assert p.status.phase == "Failed" and not p.is_ready  # never restarted
        state = p.status.container_statuses[0]["state"]["terminated"]
        assert (state["exitCode"], state["reason"]) == (137, "OOMKilled")
        assert not await kubelet.fail_pod("p")  # already over

    run(scenario)


@pytest.mark.parametrize("how", ["delete", "not-ready", "missing"])
def test_pods_on_lost_nodes_fail(how: str) -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await node(cluster, "n2")
        for name, where in (("a", "n1"), ("b", "n1"), ("c", "n2")):
            await cluster.create(pod(name))
            await cluster.bind(name, NS, "ghost" if how == "missing" and name == "a" else where)
        await kubelet.wait_idle()
        if how == "delete":
            await cluster.delete(Node, "n1")
        elif how == "not-ready":
            await cluster.patch(Node, "n1", {"status": {"conditions": [
                {"type": "Ready", "status": "False"}]}}, subresource="status")
        await kubelet.wait_idle()
        lost = ["a"] if how == "missing" else ["a", "b"]
        for name in ("a", "b", "c"):
            p = await cluster.get(Pod, name, NS)
            if name in lost:
                assert (p.status.phase, p.status.reason) == ("Failed", "NodeLost"), name
            else:
                assert p.status.phase == "Running", name

    run(scenario)


def test_negative_start_delay_is_rejected() -> None:
    with pytest.raises(ValueError, match="start_delay"):
        Kubelet(MemoryCluster(), start_delay=-1)


def test_status_writes_are_handed_over_and_store_valid_statuses() -> None:
    """The kubelet hands each status it writes over to the server (built from a private
    copy, changed only by valid assignments); what is stored is what validation would have
    made of it: the same after a round trip through the API's JSON."""
    handed: list[dict] = []

    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        write = cluster.update_status

        async def spy(obj, **kw):
            handed.append(kw)
            return await write(obj, **kw)

        cluster.update_status = spy  # type: ignore[method-assign]
        await node(cluster, "n1")
        for name in ("runs", "fails"):
            await cluster.create(pod(name))
            await cluster.bind(name, NS, "n1")
        await kubelet.wait_idle()
        assert await kubelet.fail_pod("fails", exit_code=1, reason="Error")
        await kubelet.wait_idle()
        for name, want in (("runs", "Running"), ("fails", "Failed")):
            stored = (await cluster.get(Pod, name, NS)).status
            assert stored.phase == want
            again = type(stored).model_validate(stored.model_dump(by_alias=True, mode="json"))
            assert again == stored

    run(scenario)
    assert len(handed) == 3 and all(kw == {"returning": False, "hand_over": True}
                                    for kw in handed)
