"""Run Grove scale scenarios on a real kube-apiserver (stack.py), with the floor beside.

Each phase starts its clock when its action is sent (create, patch, delete) and records a
milestone when the bench's pod watch first sees it hold: pods created, gates lifted, pods
Ready, pods gone; `pcs-available` polls the PodCliqueSet's status every 100 ms, as Grove's
tracker does. Grove's final checks then run on the object graph. Each scenario runs in a
namespace of its own, so several can share one stack (the real-cluster tests do).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from phalanx.api.grove import PodCliqueScalingGroup, PodCliqueSet
from phalanx.api.pod import Pod
from phalanx.bench.kube.apimetrics import by_call, counts_delta, errors, request_counts
from phalanx.bench.rollout_audit import read_writes, writes_by_writer
from phalanx.bench.tracker import PodTracker
from phalanx.envtest import running_kubelet
from phalanx.envtest.ports import http_get
from phalanx.operator import naming

from .checks import object_graph_problems, status_problems
from .floor import run_floor
from .scenarios import SCENARIOS, Scenario, pods_for, workload
from .soak import SoakSampler, run_soak
from .stack import KUBE_SCHEDULER, PHALANX_SCHEDULER, ScaleStack, StackConfig

__all__ = ["KUBE_SCHEDULER", "PHALANX_SCHEDULER", "GroveScaleConfig", "run_grove_scale",
           "run_scenario"]

Progress = Callable[[str], None]


@dataclass
class GroveScaleConfig:
    scenario: str
    factor: float = 1.0            # replica counts x factor (CI and small machines)
    nodes: int | None = None       # default: Grove's worker node count for the scenario
    scheduler: str = KUBE_SCHEDULER
    qps: float = 2000.0            # every client's limits: operator, scheduler, floor
    burst: int = 4000
    write_concurrency: int = 32    # the floor client's calls in flight (the operator's too)
    floor: bool = True
    timeout: float = 900.0         # per milestone
    soak_cycles: int | None = None
    soak_hold: float | None = None
    audit: bool = False            # every write in the audit log: writes by writer and call
    pod_scheduling_gate: bool = True  # False: the scheduler's profile holds pods, no gate

    def resolved(self) -> Scenario:
        try:
            base = SCENARIOS[self.scenario]
        except KeyError:
            raise ValueError(f"scenario: unknown {self.scenario!r}; one of "
                             f"{', '.join(SCENARIOS)}") from None
        sc = base.scaled(self.factor) if self.factor != 1.0 else base
        if sc.kind == "soak":
            sc = replace(sc, soak_cycles=self.soak_cycles or sc.soak_cycles,
                         soak_hold=sc.soak_hold if self.soak_hold is None else self.soak_hold)
        return sc

    def stack(self) -> StackConfig:
        return StackConfig(nodes=self.nodes or self.resolved().worker_nodes,
                           scheduler=self.scheduler, qps=self.qps, burst=self.burst,
                           audit_all_writes=self.audit,
                           pod_scheduling_gate=self.pod_scheduling_gate)


class PodWatch:
    """The bench's one pod watch on the scenario's namespace: counts and gated pods."""

    def __init__(self, kube: Any, namespace: str) -> None:
        self.tracker = PodTracker(kube, namespace)
        self.gated: dict[str, None] = {}
        self.tracker.informer.add_handler(self._seen, lambda _o, n: self._seen(n), self._gone)

    def _seen(self, pod: Pod) -> None:
        if pod.spec.scheduling_gates:
            self.gated[pod.key] = None
        else:
            self.gated.pop(pod.key, None)

    def _gone(self, pod: Pod) -> None:
        self.gated.pop(pod.key, None)

    async def until(self, predicate: Callable[[PodTracker], bool], t0: float,
                    timeout: float) -> float | None:
        ok = await self.tracker.wait(predicate, timeout)
        return round(time.perf_counter() - t0, 3) if ok else None


async def _pcs_available(kube: Any, ns: str, name: str, replicas: int, t0: float,
                         timeout: float) -> float | None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        pcs = await kube.get(PodCliqueSet, name, ns)
        if pcs.status.replicas == replicas and (pcs.status.available_replicas or 0) == replicas:
            return round(time.perf_counter() - t0, 3)
        await asyncio.sleep(0.1)  # Grove's tracker polls at 100 ms
    return None


async def _phase_up(kube: Any, watch: PodWatch, ns: str, name: str, replicas: int,
                    pods: int, action: Callable[[], Any], timeout: float) -> dict[str, Any]:
    """An action that should end with `pods` Ready pods and `replicas` available."""
    t0 = time.perf_counter()
    await action()
    created = await watch.until(lambda t: t.pods >= pods, t0, timeout)
    ungated = await watch.until(lambda t: t.pods >= pods and not watch.gated, t0, timeout)
    ready = await watch.until(lambda t: t.running >= pods and t.pods == pods, t0, timeout)
    available = await _pcs_available(kube, ns, name, replicas, t0, timeout)
    return {"pods": pods, "milestones": {"pods-created": created, "gates-lifted": ungated,
                                         "pods-ready": ready, "pcs-available": available}}


async def _phase_down(watch: PodWatch, pods: int, action: Callable[[], Any],
                      timeout: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    await action()
    gone = await watch.until(lambda t: t.pods <= pods, t0, timeout)
    return {"pods": pods, "milestones": {"pods-at-count": gone}}


async def _scenario(stack: ScaleStack, cfg: GroveScaleConfig, sc: Scenario, ns: str,
                    progress: Progress) -> dict[str, Any]:
    plane = stack.plane
    assert plane is not None and stack.operator is not None
    sampler = SoakSampler(plane, stack.operator)
    doc = workload(sc, scheduler_name=stack.scheduler_name)
    doc["metadata"]["namespace"] = ns
    name = doc["metadata"]["name"]
    pcs = PodCliqueSet.model_validate(doc)
    pod_spec = doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"]
    result: dict[str, Any] = {"workload": name, "phases": []}
    async with stack.client() as kube, running_kubelet(kube):
        if cfg.floor:
            # The replicas the measured step creates or deletes.
            n = sc.initial if sc.kind == "deploy-delete" else abs((sc.target or 0) - sc.initial)
            n_pods = pods_for(sc, max(n, 1))
            progress(f"floor: {n_pods} pods created, bound and deleted by a minimal client ...")
            floor_ns = plane.create_namespace("grove-scale-floor")
            result["floor"] = await run_floor(kube, floor_ns, pod_spec, n_pods, stack.nodes,
                                              concurrency=cfg.write_concurrency,
                                              timeout=cfg.timeout)
        watch = PodWatch(kube, ns)
        await watch.tracker.start()
        before = await asyncio.to_thread(_request_counts, plane)
        audit_offset = (stack.audit_log.stat().st_size if stack.audit_log is not None
                        and stack.audit_log.exists() else 0)
        try:
            await _run_phases(kube, cfg, sc, ns, name, pcs, watch, result, progress, sampler)
        finally:
            await watch.tracker.stop()
        # Every client's requests during the phases (the operator's, the schedulers',
        # kube-controller-manager's, the kubelet's and the bench's own few reads).
        delta = counts_delta(before, await asyncio.to_thread(_request_counts, plane))
        result["api_requests_by_call"] = {k: v for k, v in by_call(delta).items()
                                          if not k.startswith(("GET ", "LIST ", "WATCH "))}
        result["api_writes"] = sum(result["api_requests_by_call"].values())
        result["api_errors"] = errors(delta)
    if stack.audit_log is not None:
        result["writes_by_writer"] = await asyncio.to_thread(
            audit_writes, stack.audit_log, audit_offset, ns, pods_for(sc, sc.initial))
    return result


def audit_writes(log: Any, offset: int, ns: str, pods: int) -> dict[str, Any]:
    """The scenario's writes in its namespace, by writer and call, per pod of its first
    phase; a deploy-delete's split at the bench's delete of the PodCliqueSet."""
    writes = read_writes(log, offset)
    if not writes:
        return {}
    t0 = min(w.received for w in writes)
    cut = min((w.received for w in writes if w.verb == "delete"
               and w.resource == "grove.io/podcliquesets" and w.namespace == ns), default=None)
    if cut is None:
        return {"all": writes_by_writer(writes, ns, pods, t0)}
    return {"deploy": writes_by_writer(writes, ns, pods, t0, cut - 1e-6),
            "delete": writes_by_writer(writes, ns, pods, cut)}


def _request_counts(plane: Any) -> dict[Any, float]:
    status, body = http_get(f"{plane.server}/metrics", token=plane.token, timeout=30)
    return request_counts(body.decode()) if status == 200 else {}


async def _run_phases(kube: Any, cfg: GroveScaleConfig, sc: Scenario, ns: str, name: str,
                      pcs: PodCliqueSet, watch: PodWatch, result: dict[str, Any],
                      progress: Progress, sampler: SoakSampler) -> None:
    phases = result["phases"]
    timeout = cfg.timeout
    initial_pods = pods_for(sc, sc.initial)
    progress(f"deploy: {name} with {sc.initial} replicas ({initial_pods} pods) ...")

    async def create() -> None:
        await kube.create(pcs, returning=False)

    replicas = 1 if sc.kind == "pcsg-scale-up" else sc.initial
    phases.append({"name": "deploy", **await _phase_up(
        kube, watch, ns, name, replicas, initial_pods, create, timeout)})
    if sc.kind == "deploy-delete":
        progress("delete: the PodCliqueSet, until every pod is gone ...")

        async def delete() -> None:
            await kube.delete(PodCliqueSet, name, ns)

        phases.append({"name": "delete", **await _phase_down(watch, 0, delete, timeout)})
        await _final_checks(kube, ns, name, result, replicas=0, pods=0, cliques=0,
                            pcs_gone=True)
        return
    if sc.kind == "soak":
        result["soak"] = await run_soak(kube, sc, ns, name, watch, sampler, progress, timeout)
    else:
        target = sc.target or 0
        target_pods = pods_for(sc, target)
        if sc.kind == "pcsg-scale-up":
            group = naming.scaling_group_name(name, 0, "sg")
            progress(f"scale-up: scaling group {group} {sc.initial} -> {target} replicas ...")

            async def scale() -> None:
                await kube.patch(PodCliqueScalingGroup, group, {"spec": {"replicas": target}}, ns)

            phases.append({"name": "scale-up", **await _phase_up(
                kube, watch, ns, name, 1, target_pods, scale, timeout)})
        else:
            progress(f"scale: {name} {sc.initial} -> {target} replicas ({target_pods} pods) ...")

            async def scale() -> None:
                await kube.patch(PodCliqueSet, name, {"spec": {"replicas": target}}, ns)

            if target >= sc.initial:
                phases.append({"name": "scale-up", **await _phase_up(
                    kube, watch, ns, name, target, target_pods, scale, timeout)})
            else:
                phases.append({"name": "scale-down", **await _phase_down(
                    watch, target_pods, scale, timeout)})
    replicas = 1 if sc.kind == "pcsg-scale-up" else (sc.initial if sc.kind == "soak"
                                                      else sc.target or 0)
    pods = pods_for(sc, sc.target if sc.kind == "pcsg-scale-up" else replicas)
    cliques = sc.target if sc.kind == "pcsg-scale-up" else replicas
    await _final_checks(kube, ns, name, result, replicas=replicas, pods=pods,
                        cliques=cliques or 0)


async def _final_checks(kube: Any, ns: str, name: str, result: dict[str, Any], *,
                        replicas: int, pods: int, cliques: int, pcs_gone: bool = False) -> None:
    """Grove polls status convergence for up to 60 s; the object graph gets the same time
    (a PodGang's backend finalizer goes once its pods are gone), and how long it took is
    recorded. After a delete, everything the PodCliqueSet owned must be gone."""
    t0 = time.perf_counter()
    while True:
        problems = await object_graph_problems(kube, ns, name, replicas=replicas, pods=pods,
                                               cliques=cliques)
        if not pcs_gone:
            problems += await status_problems(kube, ns, name, replicas=replicas)
        if not problems or time.perf_counter() - t0 > 60.0:
            break
        await asyncio.sleep(0.2)
    result["final_check_problems"] = problems
    result["final_check_converged_seconds"] = (None if problems else
                                               round(time.perf_counter() - t0, 3))


def ratios(result: dict[str, Any], kind: str) -> dict[str, float | None]:
    """The measured steps' times over the floor's for the same pod count: the deploy and
    the delete of ScaleTest_1000, else the scale step."""
    floor = result.get("floor") or {}
    measured = ("deploy", "delete") if kind == "deploy-delete" else ("scale-up", "scale-down")
    out: dict[str, float | None] = {}
    for phase in result.get("phases", ()):
        if phase["name"] not in measured:
            continue
        m = phase["milestones"]
        t, f = ((m.get("pods-ready"), floor.get("created_to_ready_seconds"))
                if "pods-ready" in m else
                (m.get("pods-at-count"), floor.get("delete_to_gone_seconds")))
        out[phase["name"]] = round(t / f, 2) if t is not None and f else None
    return out


def run_scenario(stack: ScaleStack, cfg: GroveScaleConfig,
                 progress: Progress = print) -> dict[str, Any]:
    """One scenario on a running stack, in a namespace of its own."""
    sc = cfg.resolved()
    assert stack.plane is not None
    ns = stack.plane.create_namespace(f"grove-scale-{sc.name.lower().replace('_', '-')}")
    cpu0 = stack.cpu_seconds()
    t_start = time.perf_counter()
    scenario = asyncio.run(_scenario(stack, cfg, sc, ns, progress))
    wall = time.perf_counter() - t_start
    cpu = {k: round(v - cpu0.get(k, 0.0), 2) for k, v in stack.cpu_seconds().items()}
    return {
        "benchmark": "grove-scale",
        "scenario": sc.name,
        "config": asdict(cfg),
        "replicas": {"initial": sc.initial, "target": sc.target},
        "nodes": len(stack.nodes),
        **scenario,
        "ratio_to_floor": ratios(scenario, sc.kind),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": cpu,  # each process's CPU during the scenario (floor included)
        "tracebacks": stack.tracebacks()[:3],
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def run_grove_scale(cfg: GroveScaleConfig, progress: Progress = print) -> dict[str, Any]:
    """One scenario on a stack of its own."""
    cfg.resolved()  # a bad scenario name fails before anything starts
    progress(f"starting kube-apiserver, kube-controller-manager and {cfg.scheduler} ...")
    with ScaleStack(cfg.stack()) as stack:
        return run_scenario(stack, cfg, progress)
