"""Scripted pod endings and lost nodes, on the embedded cluster (no kubelet: set by hand)."""

import asyncio
from datetime import datetime

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node, Pod
from phalanx.api.pod import Container, PodSpec
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.clusterspec import build_nodes, default_cluster_spec
from phalanx.sim.lifecycle import UNREACHABLE_TAINT, PodScripts
from phalanx.sim.scenario import ANNOTATION_FAIL_AFTER, ANNOTATION_RUN_FOR, Step
from phalanx.sim.steps import StepError, run_step


async def _running_pod(c: MemoryCluster, name: str, node: str, notes: dict[str, str],
                       restart_policy: str | None = None) -> None:
    await c.create(Pod(metadata=ObjectMeta(name=name, annotations=notes),
                       spec=PodSpec(containers=[Container(name="c", image="x")],
                                    restart_policy=restart_policy)))
    await c.bind(name, "default", node)
    pod = await c.get(Pod, name, "default")
    pod.status.phase = "Running"
    pod.set_condition("Ready", True, "Started")
    await c.update_status(pod)


def test_pods_end_on_their_scripted_schedule() -> None:
    async def go() -> dict[str, tuple[str, float]]:
        c = MemoryCluster()
        for n in build_nodes(default_cluster_spec())[:2]:
            await c.create(n)
        scripts = PodScripts(c)
        await scripts.start()
        t0 = c.clock.now()
        await _running_pod(c, "ok", "node-000", {ANNOTATION_RUN_FOR: "10m"})
        await _running_pod(c, "bad", "node-001", {ANNOTATION_FAIL_AFTER: "90s",
                                                   "sim.phalanx.dev/exit-code": "137"},
                           restart_policy="Never")
        await _running_pod(c, "forever", "node-001", {})
        await asyncio.sleep(1)
        assert scripts.pending == 2
        ended: dict[str, tuple[str, float]] = {}
        async def both_ended() -> bool:
            pods = [await c.get(Pod, name, "default") for name in ("ok", "bad")]
            return all(p.is_terminal for p in pods)

        assert await wait_for_condition(both_ended, timeout=3600)
        for name in ("ok", "bad"):
            p = await c.get(Pod, name, "default")
            finished = p.status.container_statuses[0]["state"]["terminated"]["finishedAt"]
            at = datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
            ended[name] = (p.status.phase, round(at - t0))
        bad = await c.get(Pod, "bad", "default")
        assert bad.status.container_statuses[0]["state"]["terminated"]["exitCode"] == 137
        assert (await c.get(Pod, "forever", "default")).status.phase == "Running"
        assert await wait_for_condition(lambda: scripts.pending == 0, timeout=5)
        await scripts.stop()
        return ended

    assert run_virtual(go()) == {"bad": ("Failed", 90), "ok": ("Succeeded", 600)}


def test_fail_after_and_fail_step_restart_under_always_and_on_failure() -> None:
    """A failure under Always / OnFailure leaves the pod Running with its container exited
    (the kubelet restarts it); Never, and OnFailure exiting 0, end the pod."""
    async def go() -> dict[str, tuple[str, object]]:
        c = MemoryCluster()
        for n in build_nodes(default_cluster_spec())[:1]:
            await c.create(n)
        scripts = PodScripts(c)
        await scripts.start()
        await _running_pod(c, "script", "node-000", {ANNOTATION_FAIL_AFTER: "1m"})
        for policy in ("Always", "OnFailure", "Never"):
            await _running_pod(c, policy.lower(), "node-000", {}, restart_policy=policy)
        await _running_pod(c, "onfail0", "node-000", {}, restart_policy="OnFailure")
        for name in ("always", "onfailure", "never"):
            await run_step(c, Step.model_validate({"at": "0s", "fail": {"pod": name}}))
        await run_step(c, Step.model_validate({"at": "0s", "finish": {"pod": "onfail0"}}))
        await asyncio.sleep(61)
        out = {}
        for p in (await c.list(Pod)).items:
            cs = p.status.container_statuses[0]
            out[p.name] = (p.status.phase, p.is_ready,
                           cs["state"]["terminated"]["exitCode"])
        await scripts.stop()
        # A pod whose container exited is not running: a step cannot fail it again.
        with pytest.raises(StepError, match="no running pod matches"):
            await run_step(c, Step.model_validate({"at": "0s", "fail": {"pod": "always"}}))
        return out

    assert run_virtual(go()) == {
        "script": ("Running", False, 1), "always": ("Running", False, 1),
        "onfailure": ("Running", False, 1), "never": ("Failed", False, 1),
        "onfail0": ("Succeeded", False, 0)}


def test_pods_the_kubelet_must_still_act_on_are_pending() -> None:
    """A run is not settled while an activeDeadlineSeconds or a container restart is due."""
    async def go() -> list[int]:
        c = MemoryCluster()
        for n in build_nodes(default_cluster_spec())[:1]:
            await c.create(n)
        scripts = PodScripts(c)
        await scripts.start()
        await _running_pod(c, "plain", "node-000", {})
        await asyncio.sleep(0.1)
        seen = [scripts.pending]
        await _running_pod(c, "restarts", "node-000", {})
        await run_step(c, Step.model_validate({"at": "0s", "fail": {"pod": "restarts"}}))
        await asyncio.sleep(0.1)
        seen.append(scripts.pending)
        pod = await c.get(Pod, "plain", "default")
        pod.status.start_time = c.clock.now_dt()
        await c.update_status(pod)
        await asyncio.sleep(0.1)
        assert scripts.pending == 1  # a start time alone: nothing due
        pod = await c.get(Pod, "plain", "default")
        pod.spec.active_deadline_seconds = 60
        await c.update(pod)
        await asyncio.sleep(0.1)
        seen.append(scripts.pending)
        await c.delete(Pod, "restarts", "default")
        await asyncio.sleep(0.1)
        seen.append(scripts.pending)
        await scripts.stop()
        return seen

    assert run_virtual(go()) == [0, 1, 2, 1]


def test_node_down_taints_the_node_and_loses_its_pods_and_up_restores_it() -> None:
    async def go() -> None:
        c = MemoryCluster()
        for n in build_nodes(default_cluster_spec())[:2]:
            await c.create(n)
        await _running_pod(c, "a", "node-000", {})
        await _running_pod(c, "b", "node-001", {})
        done = await run_step(c, Step.model_validate({"at": "0s", "nodeDown": {"node": "node-000"}}))
        assert done == "took down node-000; 1 pod(s) lost"
        node = await c.get(Node, "node-000")
        assert not node.is_ready
        assert {(t.key, t.effect) for t in node.spec.taints} == {
            (UNREACHABLE_TAINT, "NoSchedule"), (UNREACHABLE_TAINT, "NoExecute")}
        assert [p.name for p in (await c.list(Pod)).items] == ["b"]
        await run_step(c, Step.model_validate({"at": "0s", "nodeUp": {"node": "node-000"}}))
        node = await c.get(Node, "node-000")
        assert node.is_ready and not node.spec.taints

    run_virtual(go())


def test_finish_step_ends_matching_pods() -> None:
    async def go() -> str:
        c = MemoryCluster()
        for n in build_nodes(default_cluster_spec())[:1]:
            await c.create(n)
        for i in range(3):
            await _running_pod(c, f"w-{i}", "node-000", {})
        done = await run_step(c, Step.model_validate(
            {"at": "0s", "finish": {"pod": "w-1"}}))
        phases = {p.name: p.status.phase for p in (await c.list(Pod)).items}
        assert phases == {"w-0": "Running", "w-1": "Succeeded", "w-2": "Running"}
        return done

    assert run_virtual(go()) == "finished 1 pod(s): w-1"


def test_apply_step_creates_then_replaces_like_kubectl_apply() -> None:
    from phalanx.api.grove import ClusterTopology

    def ct(*domains: str) -> dict:
        return {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopology",
                "metadata": {"name": "t"},
                "spec": {"levels": [{"domain": d, "key": f"example.com/{d}"} for d in domains]}}

    async def go() -> tuple[str, str, list[str]]:
        c = MemoryCluster()
        first = await run_step(c, Step.model_validate({"at": "0s", "apply": ct("zone", "host")}))
        second = await run_step(c, Step.model_validate(
            {"at": "1m", "apply": ct("zone", "rack", "host")}))
        got = await c.get(ClusterTopology, "t")
        return first, second, [lv.domain for lv in got.spec.levels]

    assert run_virtual(go()) == ("created ClusterTopology t", "configured ClusterTopology t",
                                 ["zone", "rack", "host"])
