"""The floor: what the API server allows on this machine, measured in the same run.

A minimal client makes the API calls a scale step cannot do without, and nothing else:
it creates the pods (the operator's template, no gate), binds each to a node round robin
(the scheduler's one write), and waits until the stand-in kubelet, the same one the
operator's pods get, has them Running and Ready; then it deletes them and waits until they
are gone. No PodCliqueSet, PodClique, PodGang, Event or status write is made. The gap
between a scenario's time and this one is what the operator, the scheduler and their
objects cost.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from phalanx.api.pod import Pod
from phalanx.bench.tracker import PodTracker
from phalanx.cluster.client import NotFound

FLOOR_LABEL = "phalanx.dev/bench-floor"


def floor_pod(name: str, namespace: str, pod_spec: dict[str, Any]) -> Pod:
    spec = {k: v for k, v in pod_spec.items() if k != "schedulerName"}
    # No scheduler may take it: the floor client binds it itself.
    spec["schedulerName"] = "phalanx-bench-floor"
    return Pod.model_validate({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {FLOOR_LABEL: "true"}},
        "spec": spec})


async def run_floor(kube: Any, namespace: str, pod_spec: dict[str, Any], pods: int,
                    nodes: list[str], *, concurrency: int, timeout: float) -> dict[str, Any]:
    """Create + bind `pods` pods until all are Running and Ready, then delete them until
    gone; seconds for each, from the first call."""
    tracker = PodTracker(kube, namespace)
    await tracker.start()
    gate = asyncio.Semaphore(concurrency)
    names = [f"floor-{i:05d}" for i in range(pods)]

    async def up(i: int, name: str) -> None:
        async with gate:
            await kube.create(floor_pod(name, namespace, pod_spec), returning=False)
            await kube.bind(name, namespace, nodes[i % len(nodes)])

    async def down(name: str) -> None:
        async with gate:
            try:
                await kube.delete(Pod, name, namespace)
            except NotFound:
                pass

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(up(i, n) for i, n in enumerate(names)))
        t_calls = time.perf_counter() - t0
        ok = await tracker.wait(lambda t: t.running >= pods, timeout)
        t_ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        await asyncio.gather(*(down(n) for n in names))
        gone = await tracker.wait(lambda t: t.pods == 0, timeout)
        t_gone = time.perf_counter() - t1
    finally:
        await tracker.stop()
    return {
        "pods": pods,
        "concurrency": concurrency,
        "create_and_bind_calls_seconds": round(t_calls, 3),
        "created_to_ready_seconds": round(t_ready, 3) if ok else None,
        "delete_to_gone_seconds": round(t_gone, 3) if gone else None,
    }
