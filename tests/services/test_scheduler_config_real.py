"""`phalanx scheduler --config FILE` on the real kube-apiserver: the profiles of a
KubeSchedulerConfiguration are the schedulerNames served, each with its own plugin args.

Two profiles in one file: `packed` (the defaults: NodeResourcesFit MostAllocated packs GPUs)
and `spread` (LeastAllocated, as kube-scheduler's default). Three pods of one GPU and a
quarter of a node's cpu for each (large enough that either strategy decides, rather than a
tie with NodeResourcesBalancedAllocation, as in kube-scheduler for small pods), held
to three empty nodes of their own (a label only those carry): the packed pods share one node,
the spread pods take one node each, and a pod naming neither profile is left alone.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.pod import Pod
from phalanx.envtest import (
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    start_phalanx_scheduler,
    wait_until_async,
)
from phalanx.sim.clusterspec import build_nodes

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(180)]

READY_TIMEOUT = 60.0  # the scheduler's start-up: imports, informer sync
BIND_TIMEOUT = 60.0  # six pods on six empty nodes, one cycle each


def _pod(name: str, ns: str, scheduler: str, group: str) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"schedulerName": scheduler, "nodeSelector": {"test.phalanx.dev/group": group},
                 "containers": [{"name": "c", "image": "busybox", "resources": {
                     "requests": {"cpu": "32", "nvidia.com/gpu": "1"},
                     "limits": {"nvidia.com/gpu": "1"}}}]}})


def test_the_profiles_of_the_config_file_are_served_with_their_args(
        control_plane: Any, kube_namespace: str, tmp_path: Path) -> None:
    group = uuid.uuid4().hex[:8]
    config = tmp_path / "scheduler.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": f"packed-{group}"},
            {"schedulerName": f"spread-{group}", "pluginConfig": [
                {"name": "NodeResourcesFit",
                 "args": {"scoringStrategy": {"type": "LeastAllocated"}}}]}]}))
    ns = kube_namespace
    pods = [_pod(f"{kind}-{i}", ns, f"{kind}-{group}", f"{kind}-{group}")
            for kind in ("packed", "spread") for i in range(3)]
    stray = _pod("stray", ns, f"absent-{group}", f"spread-{group}")
    nodes = []
    for kind in ("packed", "spread"):
        for node in build_nodes(gpu_cluster_spec(3, name_prefix=f"{kind}-{group}")):
            node.metadata.labels["test.phalanx.dev/group"] = f"{kind}-{group}"
            nodes.append(node)

    async def setup() -> list[str]:
        async with control_plane.client() as kube:
            nodes_made = await create_nodes(kube, nodes)
            for pod in [*pods, stray]:
                await kube.create(pod)
            return [n.name for n in nodes_made]

    node_names = asyncio.run(setup())
    scheduler = start_phalanx_scheduler(control_plane, scheduler_names=(),
                                        extra_args=["--config", str(config)],
                                        wait=True, timeout=READY_TIMEOUT)
    try:
        async def placed() -> dict[str, str]:
            async with control_plane.client() as kube:
                async def all_bound() -> dict[str, str] | None:
                    got = {p.name: (await kube.get(Pod, p.name, ns)).spec.node_name or ""
                           for p in pods}
                    return got if all(got.values()) else None

                return await wait_until_async(all_bound, BIND_TIMEOUT,
                                              what=f"six pods of {ns} bound")

        bound = asyncio.run(placed())
        assert len({bound[f"packed-{i}"] for i in range(3)}) == 1, bound
        assert len({bound[f"spread-{i}"] for i in range(3)}) == 3, bound

        async def stray_node() -> str:
            async with control_plane.client() as kube:
                return (await kube.get(Pod, "stray", ns)).spec.node_name or ""

        assert asyncio.run(stray_node()) == ""  # no profile serves its schedulerName
        assert "Traceback" not in scheduler.log_text()
    finally:
        scheduler.stop()

        async def cleanup() -> None:
            async with control_plane.client() as kube:
                for pod in [*pods, stray]:
                    await kube.delete(Pod, pod.name, ns)
                await delete_nodes(kube, node_names)

        asyncio.run(cleanup())
