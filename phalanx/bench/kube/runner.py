"""`phalanx bench kube`: kube-scheduler and `phalanx scheduler` on one real API server.

    result = run_kube_bench(KubeBenchConfig(nodes=1000), progress)

One control plane (etcd + kube-apiserver 1.36, the Workload API on) for the whole bench;
the fake nodes are created once; then, `pairs` times, for each workload (plain pods, gangs),
each scheduler runs in turn on the same nodes with the same pods (phase.py), the order
alternating from pair to pair (kube-scheduler first, then phalanx first). The ratio
phalanx / kube-scheduler is taken within each pair; the result gives each pair's and their
median, min and max. The plane and every process it started are stopped at the end, on an
error, and on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from phalanx.api.crds import crds
from phalanx.envtest import ControlPlane, create_nodes, gpu_cluster_spec, install_crds

from . import apimetrics
from .config import KUBE_SCHEDULER, PHALANX_SCHEDULER, KubeBenchConfig
from .phase import Progress, run_phase, scrape
from .schedulers import binary_version, precompile_phalanx

# The headline first: pods/s from t0 until every pod is bound and the scheduler's writes are
# finished; then binds only (first to last bind), from t0 to the last bind, and the costs.
RATIO_FIELDS = ("pods_per_second_to_done", "pods_per_second", "pods_per_second_from_start",
                "cpu_ms_per_pod", "api_requests_per_pod", "apiserver_cpu_ms_per_pod",
                "run_cpu_ms_per_pod")


def _memory_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return 0.0


def _phalanx_version() -> str:
    try:
        return package_version("phalanx")
    except PackageNotFoundError:
        return ""


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": sys.version.split()[0], "memory_gb": _memory_gb()}


def ratios(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """phalanx / kube-scheduler, per workload, for the headline numbers."""
    out: dict[str, dict[str, float | None]] = {}
    for workload in dict.fromkeys(r["workload"] for r in runs):
        by = {r["scheduler"]: r for r in runs if r["workload"] == workload}
        if KUBE_SCHEDULER not in by or PHALANX_SCHEDULER not in by:
            continue
        kube, ours = by[KUBE_SCHEDULER], by[PHALANX_SCHEDULER]
        row: dict[str, float | None] = {}
        fields = list(RATIO_FIELDS)
        if "gang_time_to_bound_seconds" in kube:
            fields += ["gang_p50", "gang_p99"]
        for name in fields:
            if name.startswith("gang_"):
                q = name.removeprefix("gang_")
                a = ours["gang_time_to_bound_seconds"][q]
                b = kube["gang_time_to_bound_seconds"][q]
            else:
                a, b = ours.get(name), kube.get(name)
                if a is None or b is None:
                    continue
            row[name] = round(a / b, 3) if b else None
        out[workload] = row
    return out


def ratio_summary(by_pair: list[dict[str, dict[str, float | None]]]
                  ) -> dict[str, dict[str, dict[str, Any]]]:
    """Per workload and field: the median, min and max of the pairs' ratios, and each."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for pair in by_pair:
        for workload, row in pair.items():
            for name, value in row.items():
                if value is not None:
                    out.setdefault(workload, {}).setdefault(name, {"pairs": []})[
                        "pairs"].append(value)
    for fields in out.values():
        for entry in fields.values():
            values = sorted(entry["pairs"])
            entry["median"] = round(statistics.median(values), 3)
            entry["min"], entry["max"] = values[0], values[-1]
    return out


async def _main(plane: ControlPlane, cfg: KubeBenchConfig, progress: Progress,
                profile_dir: Path | None,
                on_pair: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"bench": "kube", "config": cfg.as_json(), "machine": machine(),
                              "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    async with plane.client(field_manager="phalanx-bench", qps=0, burst=1) as kube:
        version = await kube.server_version()
        result["versions"] = {
            "kube-apiserver": version.get("gitVersion", ""),
            "kube-scheduler": binary_version(plane.binaries.kube_scheduler),
            "etcd": binary_version(plane.binaries.etcd),
            "phalanx": _phalanx_version(), "python": sys.version.split()[0]}
        await install_crds(kube, crds())
        result["phalanx_precompiled"] = precompile_phalanx()
        progress.phase(f"creating {cfg.nodes} nodes", cfg.nodes)
        started = time.monotonic()
        await create_nodes(kube, gpu_cluster_spec(cfg.nodes), concurrency=cfg.create_concurrency)
        progress.advance(cfg.nodes)
        result["nodes_create_seconds"] = round(time.monotonic() - started, 2)
        # The API server's own requests (leases, its controllers) with nothing else running.
        progress.phase("measuring the API server's background requests", 1)
        before = await scrape(plane)
        t = time.monotonic()
        await asyncio.sleep(cfg.background_seconds)  # a measuring interval
        background = apimetrics.total(apimetrics.counts_delta(before, await scrape(plane)))
        rps = background / (time.monotonic() - t)
        result["background_requests_per_second"] = round(rps, 2)
        progress.advance(1)
        runs: list[dict[str, Any]] = []
        by_pair = []
        for pair in range(cfg.pairs):
            order = cfg.order(pair)
            pair_runs = []
            for workload in cfg.workloads:
                for position, scheduler in enumerate(order, start=1):
                    prof = None
                    if profile_dir is not None and scheduler == PHALANX_SCHEDULER:
                        prof = profile_dir / f"phalanx-scheduler-{workload}-{pair}.pstats"
                    run = await run_phase(plane, kube, cfg, scheduler, workload, progress,
                                          profile=prof, background_rps=rps)
                    run.update(pair=pair + 1, position=position)
                    pair_runs.append(run)
            runs += pair_runs
            by_pair.append({"pair": pair + 1, "first": order[0], "ratio": ratios(pair_runs)})
            if on_pair is not None and pair + 1 < cfg.pairs:  # the pairs so far, kept
                on_pair(_finish(dict(result), runs, by_pair))
    return _finish(result, runs, by_pair)


def _finish(result: dict[str, Any], runs: list[dict[str, Any]],
            by_pair: list[dict[str, Any]]) -> dict[str, Any]:
    result["runs"] = list(runs)
    result["pairs_done"] = len(by_pair)
    result["ratio_phalanx_over_kube_by_pair"] = list(by_pair)
    result["ratio_phalanx_over_kube"] = ratio_summary([p["ratio"] for p in by_pair])
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return result


def run_kube_bench(cfg: KubeBenchConfig, progress: Progress | None = None, *,
                   profile_dir: Path | None = None, keep: bool = False,
                   on_pair: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The whole bench; `on_pair` gets the result so far after each pair but the last (the
    CLI writes it, so an interrupted long run keeps its finished pairs)."""
    cfg.validate()
    progress = progress or Progress()
    progress.phase("starting etcd and kube-apiserver", 1)
    plane = ControlPlane.start(keep=keep)
    try:
        progress.advance(1)
        result = asyncio.run(_main(plane, cfg, progress, profile_dir, on_pair))
        result["workdir"] = str(plane.workdir) if keep else ""
        return result
    finally:
        plane.stop()
