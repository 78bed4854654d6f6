"""The floor of a rolling update on a real API server: the pod replacements RollingRecreate
cannot do without, made by a minimal client, in the rule's order.

The floor's pods have the shape of the workload (per replica: the standalone cliques' pods,
and each scaling-group replica's pods) but no PodCliqueSet, PodClique, PodGang, Event or
status write exists: the client creates them, binds them itself (round robin) and the
stand-in kubelet, the same one the operator's pods get, runs them. Measured from the first
delete: one replica at a time; within a replica the standalone pods go one at a time (delete,
create the replacement, bind, wait until it is Ready) while the scaling-group replicas go one
at a time, each replica's pods at once; the next replica starts when both are done. The roll
ends when every replacement is Ready and every old pod is gone.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from phalanx.api.pod import Pod
from phalanx.bench.tracker import PodTracker, is_running
from phalanx.cluster.client import NotFound

from .grovescale.floor import floor_pod


@dataclass(frozen=True)
class ReplicaShape:
    """The pods of one PodCliqueSet replica: standalone pods (replaced one by one) and
    scaling-group replicas (each replaced whole)."""

    standalone: int
    group_replicas: int
    pods_per_group_replica: int

    @property
    def pods(self) -> int:
        return self.standalone + self.group_replicas * self.pods_per_group_replica


def shape_of(doc: dict[str, Any]) -> ReplicaShape:
    """The replica shape of a PodCliqueSet document (every scaling group counted)."""
    tmpl = doc["spec"]["template"]
    sizes = {c["name"]: int(c["spec"].get("replicas", 1)) for c in tmpl["cliques"]}
    groups = tmpl.get("podCliqueScalingGroups") or []
    grouped = {n for g in groups for n in g["cliqueNames"]}
    if len(groups) > 1:
        raise ValueError("podCliqueScalingGroups: the floor models one scaling group")
    g = groups[0] if groups else None
    return ReplicaShape(
        standalone=sum(n for c, n in sizes.items() if c not in grouped),
        group_replicas=int(g.get("replicas", 1)) if g else 0,
        pods_per_group_replica=sum(sizes[c] for c in g["cliqueNames"]) if g else 0)


def _names(replica: int, shape: ReplicaShape, gen: int) -> tuple[list[str], list[list[str]]]:
    standalone = [f"floor-r{replica}-s{j}-v{gen}" for j in range(shape.standalone)]
    groups = [[f"floor-r{replica}-g{k}-{j}-v{gen}" for j in range(shape.pods_per_group_replica)]
              for k in range(shape.group_replicas)]
    return standalone, groups


async def run_rollout_floor(kube: Any, namespace: str, pod_spec: dict[str, Any], replicas: int,
                            shape: ReplicaShape, nodes: list[str], *,
                            timeout: float) -> dict[str, Any]:
    """Create the replicas' pods (not measured), then replace them replica by replica;
    seconds from the first delete until the last replacement is Ready and the old are gone."""
    tracker = PodTracker(kube, namespace)
    await tracker.start()
    counter = iter(range(1 << 30))

    async def create(name: str) -> None:
        await kube.create(floor_pod(name, namespace, pod_spec), returning=False)
        await kube.bind(name, namespace, nodes[next(counter) % len(nodes)])

    async def delete(name: str) -> None:
        try:
            await kube.delete(Pod, name, namespace)
        except NotFound:
            pass

    def ready(names: list[str]) -> bool:
        for n in names:
            pod = tracker.informer.get(f"{namespace}/{n}")
            if pod is None or not is_running(pod):
                return False
        return True

    async def wait_ready(names: list[str]) -> None:
        if not await tracker.wait(lambda _t: ready(names), timeout):
            raise TimeoutError(f"floor: pods {names[:3]}... not Ready after {timeout:g}s")

    async def replace(old: list[str], new: list[str]) -> None:
        await asyncio.gather(*(delete(n) for n in old))
        await asyncio.gather(*(create(n) for n in new))
        await wait_ready(new)

    try:
        every = [_names(i, shape, 1) for i in range(replicas)]
        first = [n for s, gs in every for n in s + [p for g in gs for p in g]]
        gate = asyncio.Semaphore(32)

        async def setup(name: str) -> None:
            async with gate:
                await create(name)

        await asyncio.gather(*(setup(n) for n in first))
        await wait_ready(first)
        t0, t0_wall = time.perf_counter(), time.time()
        for i in range(replicas):
            old_s, old_g = every[i]
            new_s, new_g = _names(i, shape, 2)

            async def standalone(old_s: list[str] = old_s, new_s: list[str] = new_s) -> None:
                for old, new in zip(old_s, new_s, strict=True):
                    await replace([old], [new])

            async def groups(old_g: list[list[str]] = old_g,
                             new_g: list[list[str]] = new_g) -> None:
                for old, new in zip(old_g, new_g, strict=True):
                    await replace(old, new)

            await asyncio.gather(standalone(), groups())
        if not await tracker.wait(lambda t: t.pods == len(first), timeout):
            raise TimeoutError(f"floor: old pods not gone after {timeout:g}s")
        seconds, t1_wall = time.perf_counter() - t0, time.time()
        # Leave nothing behind for the next run.
        await asyncio.gather(*(delete(p.name) for p in tracker.informer.list()))
        await tracker.wait(lambda t: t.pods == 0, timeout)
    finally:
        await tracker.stop()
    return {"pods_replaced": len(first), "seconds": round(seconds, 3),
            "seconds_per_replica": round(seconds / replicas, 3),
            "window": (t0_wall, t1_wall)}  # wall clock, for the audit log
