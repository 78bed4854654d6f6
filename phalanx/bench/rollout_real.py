"""`phalanx bench rollout --real`: a RollingRecreate on kube-apiserver 1.36 (issue 23), beside
its floor, on grove-scale's stack (kube-controller-manager, the scheduler, `phalanx operator`,
the stand-in kubelet; grovescale/stack.py) with an audit log of every write.

The workload is Grove's `workload1.yaml` (its rolling-update e2e workload: a standalone clique
of 2 pods and a scaling group of 2 replicas of 1 + 3 pods, 10 pods per replica) at N
replicas. Once every pod is Running and Ready, every clique's image changes; the roll is
measured from that write until every pod runs the new image and is Ready, the PodCliqueSet's
`status.updateProgress.updateEndedAt` is set with all replicas updated, and (side effects
included) nothing has been written to the namespace for `quiet` seconds. From the audit log:
the pods replaced (each exactly once), and the writes per replaced pod by writer. The floor
(rollout_floor.py) runs in the same stack, in the same run, in alternating order.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import yaml

from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import Pod
from phalanx.bench.tracker import PodTracker, is_running
from phalanx.cluster.retry import update_with_retry
from phalanx.envtest import running_kubelet

from .grovescale.stack import KUBE_SCHEDULER, PHALANX_SCHEDULER, ScaleStack, StackConfig
from .grovescale.checks import status_problems
from .rollout_audit import read_writes, replacements, rollout_order, writes_by_writer
from .rollout_floor import ReplicaShape, run_rollout_floor, shape_of

Progress = Callable[[str], None]
NEW_IMAGE = "registry:5001/busybox:rollout-v2"

__all__ = ["KUBE_SCHEDULER", "PHALANX_SCHEDULER", "RealRolloutConfig", "run_real_rollout",
           "summarize_real"]


@dataclass
class RealRolloutConfig:
    replicas: int = 10
    runs: int = 3
    nodes: int = 30
    scheduler: str = KUBE_SCHEDULER
    qps: float = 2000.0
    burst: int = 4000
    floor: bool = True
    timeout: float = 900.0  # per wait
    quiet: float = 2.0      # side effects have ended once the namespace had no write this long


def workload1(replicas: int, scheduler_name: str) -> dict[str, Any]:
    """Grove's workload1 at `replicas`, its pods naming `scheduler_name` (Grove's names
    kai-scheduler)."""
    text = resources.files("phalanx.bench.grovescale").joinpath(
        "yaml", "workload1.yaml").read_text()
    doc = next(d for d in yaml.safe_load_all(text) if d)
    doc["spec"]["replicas"] = replicas
    for clique in doc["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["schedulerName"] = scheduler_name
    return dict(doc)


class RollWatch:
    """The namespace's pods: which run the new image and are Ready, which uids went."""

    def __init__(self, kube: Any, namespace: str) -> None:
        self.tracker = PodTracker(kube, namespace)
        self.new_ready: dict[str, None] = {}
        self.deleted_uids: list[str] = []
        self.tracker.informer.add_handler(self._seen, lambda _o, n: self._seen(n), self._gone)

    def _seen(self, pod: Pod) -> None:
        if is_running(pod) and all(c.image == NEW_IMAGE for c in pod.spec.containers):
            self.new_ready[pod.key] = None
        else:
            self.new_ready.pop(pod.key, None)

    def _gone(self, pod: Pod) -> None:
        self.new_ready.pop(pod.key, None)
        self.deleted_uids.append(pod.metadata.uid or "")

    async def until(self, predicate: Callable[[PodTracker], bool], what: str,
                    timeout: float) -> None:
        if not await self.tracker.wait(predicate, timeout):
            raise TimeoutError(f"{what}: not reached after {timeout:g}s")


async def _update_ended(kube: Any, ns: str, name: str, replicas: int, timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        pcs = await kube.get(PodCliqueSet, name, ns)
        up = pcs.status.update_progress
        if up is not None and up.update_ended_at is not None and \
                pcs.status.updated_replicas == replicas:
            return
        await asyncio.sleep(0.1)  # Grove's tracker polls at 100 ms
    raise TimeoutError(f"PodCliqueSet {ns}/{name}: updateEndedAt not set after {timeout:g}s")


async def _status_converged(kube: Any, ns: str, name: str, replicas: int,
                            timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if not await status_problems(kube, ns, name, replicas=replicas):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"PodCliqueSet {ns}/{name}: status not available after {timeout:g}s")


async def _quiet(stack: ScaleStack, ns: str, offset: int, quiet: float, timeout: float) -> None:
    """Until the namespace has had no write for `quiet` seconds (by the audit log)."""
    assert stack.audit_log is not None
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        last = max((w.done for w in read_writes(stack.audit_log, offset) if w.namespace == ns),
                   default=0.0)
        if time.time() - last >= quiet:
            return
        await asyncio.sleep(0.25)
    raise TimeoutError(f"writes to {ns} still going after {timeout:g}s")


def _log_size(stack: ScaleStack) -> int:
    assert stack.audit_log is not None
    try:
        return stack.audit_log.stat().st_size
    except FileNotFoundError:
        return 0


async def _roll(stack: ScaleStack, kube: Any, cfg: RealRolloutConfig, ns: str,
                progress: Progress) -> dict[str, Any]:
    doc = workload1(cfg.replicas, stack.scheduler_name)
    doc["metadata"]["namespace"] = ns
    name = doc["metadata"]["name"]
    total = cfg.replicas * shape_of(doc).pods
    watch = RollWatch(kube, ns)
    await watch.tracker.start()
    try:
        await kube.create(PodCliqueSet.model_validate(doc), returning=False)
        await watch.until(lambda t: t.running == t.pods == total,
                          f"{total} pods Running and Ready", cfg.timeout)
        # As a user would: the PodCliqueSet reports every replica available first (a
        # scaling-group replica whose PodClique status still says "not Ready" is replaced
        # at once, by Grove's rule, not one at a time).
        await _status_converged(kube, ns, name, cfg.replicas, cfg.timeout)
        original = {p.name for p in watch.tracker.informer.list()}
        original_uids = {p.metadata.uid for p in watch.tracker.informer.list()}
        progress(f"  roll: {total} pods Running; changing the image ...")
        offset, cpu0 = _log_size(stack), stack.cpu_seconds()
        t0_wall, t0 = time.time(), time.perf_counter()

        def new_image(pcs: PodCliqueSet) -> None:
            for c in pcs.spec.template.cliques:
                for container in c.spec.pod_spec.containers:
                    container.image = NEW_IMAGE

        await update_with_retry(kube, PodCliqueSet, name, ns, new_image)
        await watch.until(lambda t: t.pods == total and len(watch.new_ready) == total,
                          "every pod on the new image and Ready", cfg.timeout)
        t_pods = time.perf_counter() - t0
        await _update_ended(kube, ns, name, cfg.replicas, cfg.timeout)
        t_end = time.perf_counter() - t0
        await _quiet(stack, ns, offset, cfg.quiet, cfg.timeout)
        cpu = {k: round(v - cpu0.get(k, 0.0), 2) for k, v in stack.cpu_seconds().items()}
        assert stack.audit_log is not None
        writes = read_writes(stack.audit_log, offset)
        deleted = watch.deleted_uids
        result = {
            "pods": total,
            "wall_seconds": round(t_end, 3),
            "pods_updated_seconds": round(t_pods, 3),
            "seconds_per_replica": round(t_end / cfg.replicas, 3),
            **replacements(writes, ns, original),
            **rollout_order(writes, ns, name, [g["name"] for g in doc["spec"]["template"].get(
                "podCliqueScalingGroups") or ()]),
            "watch_original_uids_deleted": sum(u in original_uids for u in deleted),
            "watch_other_uids_deleted": sum(u not in original_uids for u in deleted),
            **writes_by_writer(writes, ns, total, t0_wall),
            "cpu_seconds": cpu,
        }
        # Leave the stack as found for the next run.
        await kube.delete(PodCliqueSet, name, ns)
        await watch.until(lambda t: t.pods == 0, "the PodCliqueSet's pods gone", cfg.timeout)
    finally:
        await watch.tracker.stop()
    return result


async def _one_run(stack: ScaleStack, cfg: RealRolloutConfig, index: int,
                   progress: Progress) -> dict[str, Any]:
    plane = stack.plane
    assert plane is not None
    ns = plane.create_namespace(f"rollout-{index}")
    floor_ns = plane.create_namespace(f"rollout-floor-{index}")
    doc = workload1(cfg.replicas, stack.scheduler_name)
    shape: ReplicaShape = shape_of(doc)
    pod_spec = doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"]
    out: dict[str, Any] = {"run": index}
    async with plane.client(field_manager="phalanx-bench", qps=cfg.qps, burst=cfg.burst) as kube, \
            plane.client(field_manager="bench-kubelet", qps=cfg.qps, burst=cfg.burst) as kc, \
            plane.client(field_manager="bench-floor", qps=cfg.qps, burst=cfg.burst) as fc, \
            running_kubelet(kc):
        async def floor() -> None:
            progress(f"  floor: {cfg.replicas} replicas of {shape.pods} pods, minimal client ...")
            offset = _log_size(stack)
            f = await run_rollout_floor(fc, floor_ns, pod_spec, cfg.replicas, shape,
                                        stack.nodes, timeout=cfg.timeout)
            t0_wall, t1_wall = f.pop("window")
            out["floor"] = f
            assert stack.audit_log is not None
            # The roll's writes only: not the setup's creates nor the cleanup's deletes.
            w = writes_by_writer(read_writes(stack.audit_log, offset), floor_ns,
                                 f["pods_replaced"], t0_wall, t1_wall)
            out["floor"].update(api_writes_per_pod=w["api_writes_per_pod"],
                                by_writer={k: v["per_pod"] for k, v in w["by_writer"].items()})

        order = ("floor", "roll") if index % 2 == 0 else ("roll", "floor")
        out["order"] = list(order) if cfg.floor else ["roll"]
        for step in out["order"]:
            if step == "floor":
                await floor()
            else:
                out.update(await _roll(stack, kube, cfg, ns, progress))
    if cfg.floor:
        out["ratio_to_floor"] = round(out["wall_seconds"] / out["floor"]["seconds"], 2)
    return out


def summarize_real(cfg: RealRolloutConfig, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs, and the median and spread (min-max) of each timing, count and ratio."""
    def spread(values: list[float]) -> dict[str, float]:
        v = sorted(values)
        return {"median": round(statistics.median(v), 3), "min": v[0], "max": v[-1]}

    def col(fn: Callable[[dict[str, Any]], float]) -> dict[str, float]:
        return spread([fn(r) for r in runs])

    out: dict[str, Any] = {
        "benchmark": "rollout-real", "config": asdict(cfg), "replicas": cfg.replicas,
        "pods": runs[0]["pods"], "runs_count": len(runs),
        "wall_seconds": col(lambda r: r["wall_seconds"]),
        "seconds_per_replica": col(lambda r: r["seconds_per_replica"]),
        "settled_seconds": col(lambda r: r["last_write_seconds"]),
        "pods_replaced": col(lambda r: r["pods_replaced"]),
        "pods_recreated_twice": sum(len(r["pods_recreated_twice"]) for r in runs),
        "replacements_deleted": sum(len(r["replacements_deleted"]) for r in runs),
        "pcs_replicas_overlapping": sum(r["pcs_replicas_overlapping"] for r in runs),
        "group_replicas_overlapping": sum(r["group_replicas_overlapping"] for r in runs),
        "api_writes_per_pod": col(lambda r: r["api_writes_per_pod"]),
        "api_writes_per_pod_by_writer": {
            w: col(lambda r, w=w: r["by_writer"].get(w, {}).get("per_pod", 0.0))
            for w in sorted({w for r in runs for w in r["by_writer"]})},
        "operator_cpu_seconds": col(lambda r: r["cpu_seconds"].get("phalanx-operator", 0.0)),
    }
    if all("floor" in r for r in runs):
        out["floor_seconds"] = col(lambda r: r["floor"]["seconds"])
        out["floor_api_writes_per_pod"] = col(lambda r: r["floor"]["api_writes_per_pod"])
        out["ratio_to_floor"] = col(lambda r: r["ratio_to_floor"])
    out["runs"] = runs
    return out


def run_real_rollout(cfg: RealRolloutConfig, progress: Progress = print) -> dict[str, Any]:
    """`cfg.runs` rolls (each beside its floor) on one stack started for them."""
    progress(f"starting kube-apiserver, kube-controller-manager and {cfg.scheduler} ...")
    stack_cfg = StackConfig(nodes=cfg.nodes, scheduler=cfg.scheduler, qps=cfg.qps,
                            burst=cfg.burst, audit_all_writes=True)
    runs = []
    with ScaleStack(stack_cfg) as stack:
        for i in range(cfg.runs):
            progress(f"run {i + 1}/{cfg.runs}: {cfg.replicas} replicas ...")
            r = asyncio.run(_one_run(stack, cfg, i, progress))
            r["tracebacks"] = stack.tracebacks()[:3]
            runs.append(r)
            progress(f"  roll {r['wall_seconds']}s ({r['seconds_per_replica']}s a replica), "
                     f"{r['pods_replaced']} pods replaced, {len(r['pods_recreated_twice'])} "
                     f"twice, {r['api_writes_per_pod']} writes/pod"
                     + (f"; floor {r['floor']['seconds']}s, ratio {r['ratio_to_floor']}"
                        if "floor" in r else ""))
    result = summarize_real(cfg, runs)
    result.update(cpus=os.cpu_count(), load_average_1m=round(os.getloadavg()[0], 2))
    return result
