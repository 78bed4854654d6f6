"""The stack a scale scenario runs on, started once for one or several scenarios.

kube-apiserver 1.36; Phalanx's CRDs; `nodes` kwok-like Nodes as Grove's scale tests expect
(label `type=kwok`, taint `node_role.e2e.grove.nvidia.com=agent:NoSchedule`);
kube-controller-manager, started after the CRDs (its garbage collector maps a PodClique
owner only once discovery lists the kind, which it refreshes every 30 s; a real cluster has
its CRDs first); the scheduler; `phalanx operator` as a process. Every client (operator,
schedulers, kube-controller-manager, the floor) gets the same QPS and burst.

`audit_all_writes`: the API server's audit log records every write by every client (the
harness's policy records service accounts only), so a bench can tell writers apart by user
agent (`phalanx/<field manager>`, `kube-scheduler/...`, `kube-controller-manager/...`).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.core import Taint
from phalanx.api.crds import crds
from phalanx.bench.kube.procstat import cpu_seconds
from phalanx.envtest import (
    ControlPlane,
    ControlPlaneOptions,
    PhalanxService,
    create_nodes,
    gpu_cluster_spec,
    install_crds,
    operator_config,
    start_operator,
    start_phalanx_scheduler,
)
from phalanx.envtest.audit import WRITE_VERBS
from phalanx.envtest.ports import free_port

from .scenarios import NODE_LABELS, NODE_TAINT

KUBE_SCHEDULER, PHALANX_SCHEDULER = "kube-scheduler", "phalanx-scheduler"


@dataclass(frozen=True)
class StackConfig:
    nodes: int = 30
    scheduler: str = KUBE_SCHEDULER
    qps: float = 2000.0
    burst: int = 4000
    audit_all_writes: bool = False
    # False: the scheduler's profile gets `podSchedulingGate: false` (pods created ungated).
    pod_scheduling_gate: bool = True


# Every write by anyone, at Metadata level (user agent, verb, object reference, code).
ALL_WRITES_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "verbs": list(WRITE_VERBS)}, {"level": "None"}],
}


class ScaleStack:
    """`with ScaleStack(cfg) as stack:` everything running; stopped on exit, also on error."""

    def __init__(self, cfg: StackConfig) -> None:
        if cfg.scheduler not in (KUBE_SCHEDULER, PHALANX_SCHEDULER):
            raise ValueError(f"scheduler: {cfg.scheduler!r} is not {KUBE_SCHEDULER} or "
                             f"{PHALANX_SCHEDULER}")
        self.cfg = cfg
        self.plane: ControlPlane | None = None
        self.operator: PhalanxService | None = None
        self.phalanx_scheduler: PhalanxService | None = None
        self.nodes: list[str] = []
        self.audit_log: Path | None = None  # with audit_all_writes
        self._audit_dir: Path | None = None

    @property
    def scheduler_name(self) -> str:
        """The schedulerName the workload's pods get."""
        return "default-scheduler" if self.cfg.scheduler == KUBE_SCHEDULER else PHALANX_SCHEDULER

    def __enter__(self) -> ScaleStack:
        cfg = self.cfg
        try:
            self.plane = plane = ControlPlane.start(options=self._plane_options())
            system_ns = plane.create_namespace("grove-scale-system")
            asyncio.run(self._setup(plane))
            plane.start_controller_manager(extra_args=[f"--kube-api-qps={cfg.qps:g}",
                                                       f"--kube-api-burst={cfg.burst}"])
            if cfg.scheduler == KUBE_SCHEDULER:
                plane.start_scheduler(config={"clientConnection": {"qps": cfg.qps,
                                                                   "burst": cfg.burst}})
            config = operator_config(
                probe_port=free_port(), metrics_port=free_port(), webhook_port=free_port(),
                lease_namespace=system_ns,
                profile_configs=self.operator_profile_configs(),
                runtimeClientConnection={"qps": cfg.qps, "burst": cfg.burst})
            self.operator = start_operator(plane, config=config, namespace=system_ns)
            if cfg.scheduler == PHALANX_SCHEDULER:
                self.phalanx_scheduler = start_phalanx_scheduler(
                    plane, extra_args=["--qps", f"{cfg.qps:g}", "--burst", str(cfg.burst)])
        except BaseException:
            self.__exit__()
            raise
        return self

    def operator_profile_configs(self) -> dict[str, dict[str, Any]]:
        configs: dict[str, dict[str, Any]] = {"default-scheduler": {"gangScheduling": True}}
        if not self.cfg.pod_scheduling_gate:
            profile = "default-scheduler" if self.cfg.scheduler == KUBE_SCHEDULER \
                else PHALANX_SCHEDULER
            configs.setdefault(profile, {})["podSchedulingGate"] = False
        return configs

    def _plane_options(self) -> ControlPlaneOptions | None:
        if not self.cfg.audit_all_writes:
            return None
        self._audit_dir = Path(tempfile.mkdtemp(prefix="phalanx-bench-audit-"))
        policy, self.audit_log = (self._audit_dir / "policy.yaml",
                                  self._audit_dir / "audit.log")
        policy.write_text(yaml.safe_dump(ALL_WRITES_POLICY, sort_keys=False))
        return ControlPlaneOptions(audit=False, apiserver_args=[
            f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json", "--audit-log-maxbackup=0"])

    async def _setup(self, plane: ControlPlane) -> None:
        async with plane.client() as kube:
            await install_crds(kube, crds())
            spec = gpu_cluster_spec(self.cfg.nodes, name_prefix="kwok")
            pool = spec.spec.node_pools[0]
            pool.labels.update(NODE_LABELS)
            pool.taints = [Taint.model_validate(NODE_TAINT)]
            self.nodes = [n.name for n in await create_nodes(kube, spec)]

    def __exit__(self, *exc: object) -> None:
        for service in (self.phalanx_scheduler, self.operator):
            if service is not None:
                service.stop()
        if self.plane is not None:
            self.plane.stop()
        if self._audit_dir is not None:
            shutil.rmtree(self._audit_dir, ignore_errors=True)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds of each process so far."""
        assert self.plane is not None and self.operator is not None
        out = {"phalanx-operator": cpu_seconds(self.operator.process.pid)}
        for name, comp in (("kube-scheduler", self.plane.scheduler),
                           ("kube-controller-manager", self.plane.controller_manager)):
            if comp is not None:
                out[name] = cpu_seconds(comp.process.pid)
        if self.phalanx_scheduler is not None:
            out["phalanx-scheduler"] = cpu_seconds(self.phalanx_scheduler.process.pid)
        return out

    def tracebacks(self) -> list[str]:
        return [tb for s in (self.operator, self.phalanx_scheduler) if s is not None
                for tb in s.tracebacks()]

    def client(self) -> Any:
        assert self.plane is not None
        return self.plane.client(qps=self.cfg.qps, burst=self.cfg.burst)
