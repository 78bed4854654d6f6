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


def pod(name: str, clique: str = "c", after: str | None = None, **spec: object) -> Pod:
    meta = ObjectMeta(name=name, namespace=NS, labels={L.LABEL_PODCLIQUE: clique})
    if after:
        meta.annotations[ANNOTATION_STARTS_AFTER] = after
    return Pod(metadata=meta, spec=PodSpec(containers=[Container(name="main", image="x")],
                                           **spec))


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


def test_fail_pod_under_restart_policy_never() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p", restart_policy="Never"))
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


def _container(p: Pod) -> dict:
    return p.status.container_statuses[0]


def test_failed_container_restarts_in_place_with_crash_loop_backoff() -> None:
    """restartPolicy Always (the default): the pod stays Running, not Ready until the
    container runs again; no backoff after the first exit, then 10s, 20s (kubelet.go)."""
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p"))
        await cluster.bind("p", NS, "n1")
        await asyncio.sleep(5)
        await kubelet.wait_idle()
        assert (await cluster.get(Pod, "p", NS)).is_ready
        ready_after = []
        for _ in range(3):
            t0 = cluster.clock.now()
            assert await kubelet.fail_pod("p", exit_code=2)
            await kubelet.wait_idle()
            p = await cluster.get(Pod, "p", NS)
            assert p.status.phase == "Running" and not p.is_ready
            assert p.get_condition("Ready").reason == "ContainersNotReady"
            assert not await kubelet.fail_pod("p")  # not running: nothing to fail
            while not (await cluster.get(Pod, "p", NS)).is_ready:
                await asyncio.sleep(0.5)
                await kubelet.wait_idle()
            ready_after.append(round(cluster.clock.now() - t0))
            await asyncio.sleep(1)
        assert ready_after == [5, 15, 25]
        c = _container(await cluster.get(Pod, "p", NS))
        assert c["restartCount"] == 3 and c["ready"] and "running" in c["state"]
        assert c["lastState"]["terminated"]["exitCode"] == 2
        assert kubelet.restarted == 3

    run(scenario, start_delay=5.0)


def test_crash_loop_backoff_is_shown_while_waiting() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p", restart_policy="OnFailure"))
        await cluster.bind("p", NS, "n1")
        await kubelet.wait_idle()
        await kubelet.fail_pod("p")
        await kubelet.wait_idle()
        await kubelet.fail_pod("p")
        await kubelet.wait_idle()
        c = _container(await cluster.get(Pod, "p", NS))
        assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert c["state"]["waiting"]["message"].startswith("back-off 10s restarting failed")
        assert c["restartCount"] == 1

    run(scenario)


def test_backoff_doubles_caps_and_resets() -> None:
    from phalanx.sim.restarts import CrashLoopBackOff

    b = CrashLoopBackOff()
    t, waits = 0.0, []
    for _ in range(8):
        w = b.wait("p", "c", t, t)
        waits.append(w)
        t += w
        assert b.wait("p", "c", t - w, t) == 0.0 if w else True
        t += 1
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300]
    assert b.wait("p", "c", t + 601, t + 601) == 0.0  # ran > 600s: reset
    assert b.wait("p", "c", t + 602, t + 602) == 10.0


def test_active_deadline_fails_the_pod_from_its_start_time() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p", active_deadline_seconds=60))
        await cluster.create(pod("crashing", active_deadline_seconds=60))
        await cluster.create(pod("free"))
        for name in ("p", "crashing", "free"):
            await cluster.bind(name, NS, "n1")
        await asyncio.sleep(5)
        await kubelet.wait_idle()
        assert (await cluster.get(Pod, "p", NS)).status.start_time is not None
        await asyncio.sleep(30)
        await kubelet.fail_pod("crashing")  # restarting in place: the deadline still holds
        await asyncio.sleep(29.5)
        await kubelet.wait_idle()
        assert await phase(cluster, "p") == "Running"
        await asyncio.sleep(1)
        await kubelet.wait_idle()
        for name in ("p", "crashing"):
            p = await cluster.get(Pod, name, NS)
            assert (p.status.phase, p.status.reason, p.status.message) == (
                "Failed", "DeadlineExceeded",
                "Pod was active on the node longer than the specified deadline"), name
            assert not p.is_ready
        assert await phase(cluster, "free") == "Running"

    run(scenario, start_delay=5.0)


def test_ready_waits_for_startup_and_readiness_probes() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        both = pod("both")
        both.spec.containers[0].startup_probe = {"exec": {"command": ["true"]},
                                                 "initialDelaySeconds": 60}
        both.spec.containers[0].readiness_probe = {"exec": {"command": ["true"]},
                                                   "initialDelaySeconds": 120}
        startup = pod("startup")
        startup.spec.containers[0].startup_probe = {"exec": {"command": ["true"]},
                                                   "initialDelaySeconds": 60}
        startup.spec.containers[0].readiness_probe = {"exec": {"command": ["true"]},
                                                     "initialDelaySeconds": 10}
        plain = pod("plain")
        for p in (both, startup, plain):
            await cluster.create(p)
            await cluster.bind(p.name, NS, "n1")
        seen: dict[str, dict[str, float]] = {"both": {}, "startup": {}, "plain": {}}
        t0 = cluster.clock.now()
        while cluster.clock.now() - t0 < 200:
            await kubelet.wait_idle()
            for name, got in seen.items():
                p = await cluster.get(Pod, name, NS)
                cs = (p.status.container_statuses or [{}])[0]
                if cs.get("started") and "started" not in got:
                    got["started"] = round(cluster.clock.now() - t0)
                if p.is_ready and "ready" not in got:
                    got["ready"] = round(cluster.clock.now() - t0)
                    assert p.get_condition("ContainersReady").status == "True"
                if p.status.phase == "Running" and not p.is_ready:
                    assert p.get_condition("Ready").reason == "ContainersNotReady"
            await asyncio.sleep(1)
        assert seen == {"both": {"started": 65, "ready": 125},
                        "startup": {"started": 65, "ready": 65},
                        "plain": {"started": 5, "ready": 5}}

    run(scenario, start_delay=5.0)


def test_ready_waits_for_readiness_gates() -> None:
    async def scenario(cluster: MemoryCluster, kubelet: Kubelet) -> None:
        await node(cluster, "n1")
        await cluster.create(pod("p", readiness_gates=[{"conditionType": "example.com/lb"}]))
        await cluster.bind("p", NS, "n1")
        await kubelet.wait_idle()
        p = await cluster.get(Pod, "p", NS)
        assert p.status.phase == "Running" and not p.is_ready
        assert p.get_condition("ContainersReady").status == "True"
        ready = p.get_condition("Ready")
        assert (ready.reason, ready.message) == (
            "ReadinessGatesNotReady",
            'corresponding condition of pod readiness gate "example.com/lb" does not exist.')
        for status in ("False", "True"):
            p.set_condition("example.com/lb", status, "LB")
            await cluster.update_status(p)
            await kubelet.wait_idle()
            p = await cluster.get(Pod, "p", NS)
            assert p.is_ready == (status == "True")
        assert not p.get_condition("Ready").message

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
        for name, policy in (("runs", None), ("fails", "Never"), ("restarts", "Always")):
            await cluster.create(pod(name, restart_policy=policy))
            await cluster.bind(name, NS, "n1")
        await kubelet.wait_idle()
        assert await kubelet.fail_pod("fails", exit_code=1, reason="Error")
        assert await kubelet.fail_pod("restarts", exit_code=1, reason="Error")
        await kubelet.wait_idle()
        for name, want in (("runs", "Running"), ("fails", "Failed"), ("restarts", "Running")):
            stored = (await cluster.get(Pod, name, NS)).status
            assert stored.phase == want
            again = type(stored).model_validate(stored.model_dump(by_alias=True, mode="json"))
            assert again == stored

    run(scenario)
    # 3 starts, a failure, an exit and its restart.
    assert len(handed) == 6 and all(kw == {"returning": False, "hand_over": True}
                                    for kw in handed)
