"""One kubediff run from start to end: a control plane, kube-scheduler, the cases, a report.

    report = run_kubediff(KubeDiffConfig(cases=200, seed=0))

Starts etcd + kube-apiserver 1.36 and kube-scheduler (binaries: KUBEBUILDER_ASSETS or
../shared/kube, as every real-tier test), runs phalanx-scheduler in this process, runs the
cases one after the other, and stops everything it started, also on an error or Ctrl-C.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import features as F
from .generate import generate_case
from .report import build_report
from .run import CaseRun, DiffRunner


@dataclass
class KubeDiffConfig:
    cases: int = 100
    seed: int = 0
    features: tuple[str, ...] = F.BASE_FEATURES
    timeout: float = 20.0  # seconds a scheduler may take to place one pod
    keep: bool = False  # keep the control plane's work folder (logs)

    def validate(self) -> None:
        if self.cases < 1:
            raise ValueError(f"--cases: must be at least 1, got {self.cases}")
        if self.timeout <= 0:
            raise ValueError(f"--timeout: must be positive, got {self.timeout:g}")
        unknown = [f for f in self.features if f not in F.ALL_FEATURES]
        if unknown:
            raise ValueError(f"--features: unknown {', '.join(unknown)}")


async def run_cases(kube: Any, namespace: str, seeds: range, features: tuple[str, ...], *,
                    timeout: float = 20.0,
                    on_case: Callable[[CaseRun], None] | None = None) -> list[CaseRun]:
    """Run the cases of `seeds` with a phalanx-scheduler started on `kube` (a KubeCluster);
    kube-scheduler must already run against the same server. Names get a fresh prefix per
    call, so runs never collide with leftovers of another."""
    nonce = uuid.uuid4().hex[:4]
    runner = DiffRunner(kube, namespace, timeout=timeout)
    await runner.start()
    runs: list[CaseRun] = []
    try:
        for seed in seeds:
            run = await runner.run_case(generate_case(seed, features, f"kd{nonce}-{seed}"))
            runs.append(run)
            if on_case is not None:
                on_case(run)
    finally:
        await runner.stop()
    return runs


def run_kubediff(cfg: KubeDiffConfig,
                 on_case: Callable[[CaseRun], None] | None = None) -> dict[str, Any]:
    """Start a control plane and kube-scheduler, run the cases, stop everything; the report."""
    from phalanx.bench.kube.runner import machine
    from phalanx.bench.kube.schedulers import binary_version
    from phalanx.envtest import ControlPlane, find_binaries

    cfg.validate()
    binaries = find_binaries()
    binaries.require("kube-scheduler")
    started = time.perf_counter()
    plane = ControlPlane.start(binaries=binaries, scheduler=True, keep=cfg.keep)
    try:
        namespace = plane.create_namespace("kubediff")

        async def main() -> list[CaseRun]:
            async with plane.client() as kube:
                return await run_cases(kube, namespace, range(cfg.seed, cfg.seed + cfg.cases),
                                       cfg.features, timeout=cfg.timeout, on_case=on_case)

        runs = asyncio.run(main())
    finally:
        plane.stop()
    versions = {"kube-scheduler": binary_version(binaries.kube_scheduler),
                "kube-apiserver": binary_version(binaries.kube_apiserver)}
    return build_report(runs, seed=cfg.seed, features=cfg.features,
                        seconds=time.perf_counter() - started, versions=versions,
                        machine=machine())
