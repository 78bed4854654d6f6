"""`phalanx bench rollout`: a RollingRecreate of a many-replica PodCliqueSet on the embedded
stack (issue 23): wall time and API writes per pod of the roll.

The PodCliqueSet is `leader_workers_podcliqueset` (a router clique plus a scaling group of
2 x (leader + 2 workers): 7 pods per replica). Once every pod runs, every clique's image
changes and the run lasts until the update has ended and the stack is idle. Measured from the
image change: wall seconds, virtual seconds (pod termination grace periods, in virtual time),
API writes in total, per pod and by (verb, kind), and the pods deleted (each exactly once).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import Pod
from phalanx.cluster.clock import run_virtual

from .stack import EmbeddedStack
from .workload import NAMESPACE, gpu_cluster, leader_workers_podcliqueset

PODS_PER_REPLICA = 1 + 2 * (1 + 2)


@dataclass
class RolloutConfig:
    replicas: int = 100
    nodes: int = 0  # 0: one 8-GPU node per replica (6 GPUs a replica, room for the roll)


async def _rollout(cfg: RolloutConfig) -> dict[str, Any]:
    nodes = cfg.nodes or max(cfg.replicas, 2)
    stack = EmbeddedStack(gpu_cluster(nodes), record_events=False)
    await stack.start()
    try:
        cluster = stack.cluster
        await cluster.create(leader_workers_podcliqueset("roll", replicas=cfg.replicas))
        await stack.settle()
        pods = [p for p in (await cluster.list(Pod, NAMESPACE)).items]
        total = cfg.replicas * PODS_PER_REPLICA
        running = sum(p.status.phase == "Running" for p in pods)
        if running != total:
            raise RuntimeError(f"only {running}/{total} pods running before the update")
        before = {p.metadata.uid for p in pods}
        writes0 = dict(cluster.stats.writes)
        clock = cluster.clock
        v0, t0, c0 = clock.monotonic(), time.perf_counter(), time.process_time()
        pcs = await cluster.get(PodCliqueSet, "roll", NAMESPACE)
        for c in pcs.spec.template.cliques:
            c.spec.pod_spec.containers[0].image = "example.com/model:v2"
        await cluster.update(pcs, returning=False)
        await stack.settle()
        wall, virtual = time.perf_counter() - t0, clock.monotonic() - v0
        cpu = time.process_time() - c0
        pcs = await cluster.get(PodCliqueSet, "roll", NAMESPACE)
        up = pcs.status.update_progress
        after = (await cluster.list(Pod, NAMESPACE)).items
        if up is None or up.update_ended_at is None or pcs.status.updated_replicas != \
                cfg.replicas:
            raise RuntimeError(f"the update did not finish: {pcs.status.updated_replicas}/"
                               f"{cfg.replicas} replicas updated")
        survivors = before & {p.metadata.uid for p in after}
        writes = {k: n - writes0.get(k, 0) for k, n in cluster.stats.writes.items()
                  if n - writes0.get(k, 0)}
        n_writes = sum(writes.values())
        return {
            "benchmark": "rollout", "replicas": cfg.replicas, "nodes": nodes, "pods": total,
            "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "virtual_seconds": round(virtual, 3),
            "pods_replaced": len(before) - len(survivors), "pods_after": len(after),
            "api_writes": n_writes, "api_writes_per_pod": round(n_writes / total, 2),
            "api_writes_by_kind": {f"{verb} {kind}": n for (verb, kind), n in
                                   sorted(writes.items(), key=lambda kv: -kv[1])},
        }
    finally:
        await stack.stop()


def run_rollout_bench(cfg: RolloutConfig) -> dict[str, Any]:
    return run_virtual(_rollout(cfg))


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs, and the median and spread (min-max) of their timings."""
    out: dict[str, Any] = {k: v for k, v in runs[0].items()
                           if k not in ("wall_seconds", "cpu_seconds", "api_writes_by_kind")}
    for key in ("wall_seconds", "cpu_seconds"):
        values = sorted(r[key] for r in runs)
        out[key] = {"median": statistics.median(values), "min": values[0], "max": values[-1]}
    out["api_writes_by_kind"] = runs[0]["api_writes_by_kind"]
    out["runs"] = [{k: r[k] for k in ("wall_seconds", "cpu_seconds", "api_writes")}
                   for r in runs]
    return out
