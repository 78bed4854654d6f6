"""The two schedulers under test, started the way a user runs them, against the bench's plane.

- kube-scheduler 1.36: the real binary, KubeSchedulerConfiguration with the client limits
  under `clientConnection` (left out with `own_defaults`, so the shipped defaults apply),
  GenericWorkload + GangScheduling gates on (the harness's), no leader election; delegated
  authentication so the bench can read the effective configuration from /configz;
- `phalanx scheduler --kubeconfig ... --qps Q --burst B` as a subprocess, no leader
  election (optionally under cProfile, in CPU time: profiled.py).

Each acts as a service account of its own (`identity`, bound to cluster-admin), so the API
server's audit log records its writes apart from the bench's (writes.py).

Each is started without waiting for readiness (the bench's clock starts at the process
start and the binds tell when it works) and stopped with SIGTERM once the bench is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from phalanx.envtest import ControlPlane, ManagedProcess, bind_cluster_role
from phalanx.envtest.components import kube_scheduler
from phalanx.envtest.ports import free_port, http_get
from phalanx.envtest.services import PHALANX, _env

from .config import KUBE_SCHEDULER, KubeBenchConfig


class Running:
    """One started scheduler process."""

    def __init__(self, name: str, process: ManagedProcess, *, port: int, scheme: str,
                 token: str | None = None, profile: Path | None = None) -> None:
        self.name = name
        self.process = process
        self.port = port
        self.scheme = scheme
        self.token = token
        self.profile = profile

    @property
    def pid(self) -> int:
        return self.process.pid

    def check_alive(self) -> None:
        if not self.process.alive:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}: "
                               f"{self.process.log_text(2000)}")

    def configz(self) -> dict[str, Any] | None:
        """kube-scheduler's effective configuration (/configz), else None."""
        if self.scheme != "https":
            return None
        try:
            status, body = http_get(f"https://127.0.0.1:{self.port}/configz", token=self.token,
                                    timeout=5)
        except OSError:
            return None
        return json.loads(body) if status == 200 else None

    def stop(self) -> int | None:
        return self.process.stop(grace=15.0)


SERVICE_ACCOUNT_NAMESPACE = "default"


def identity(plane: ControlPlane, scheduler: str) -> tuple[Path, str]:
    """A kubeconfig acting as ServiceAccount default/bench-<scheduler> (cluster-admin, a fresh
    token), and the user name the audit log records for it."""
    name = f"bench-{scheduler}"
    kubeconfig = plane.service_account_kubeconfig(SERVICE_ACCOUNT_NAMESPACE, name)
    bind_cluster_role(plane.server, plane.token, SERVICE_ACCOUNT_NAMESPACE, name)
    return kubeconfig, plane.service_account_user(SERVICE_ACCOUNT_NAMESPACE, name)


def precompile_phalanx() -> bool:
    """Byte-compile the phalanx package once, as installing it from a wheel does: with an
    editable install under PYTHONDONTWRITEBYTECODE every `phalanx scheduler` start would
    compile its ~150 modules from source (~0.2 s of CPU) before its first bind."""
    import compileall

    import phalanx

    return bool(compileall.compile_dir(str(Path(phalanx.__file__).parent), quiet=1))


def start_kube_scheduler(plane: ControlPlane, cfg: KubeBenchConfig,
                         kubeconfig: Path | None = None) -> Running:
    qps, burst = cfg.limits_for(KUBE_SCHEDULER)
    config: dict[str, Any] = {}
    if not cfg.own_defaults:
        config["clientConnection"] = {"qps": qps, "burst": burst}
    comp = kube_scheduler(
        plane.binaries.require("kube-scheduler"), plane.workdir, kubeconfig or plane.kubeconfig,
        feature_gates=plane.options.feature_gates, config=config,
        extra_args=[f"--authentication-kubeconfig={plane.kubeconfig}",
                    f"--authorization-kubeconfig={plane.kubeconfig}"])
    plane.adopt(comp.process).start()
    return Running(KUBE_SCHEDULER, comp.process, port=comp.port, scheme="https",
                   token=plane.token)


def start_phalanx_scheduler(plane: ControlPlane, cfg: KubeBenchConfig, *,
                            profile: Path | None = None,
                            kubeconfig: Path | None = None) -> Running:
    qps, burst = cfg.limits_for("phalanx-scheduler")
    probe, metrics = free_port(), free_port()
    head = list(PHALANX)
    if profile is not None:
        head = [sys.executable, "-m", "phalanx.bench.kube.profiled", str(profile)]
    argv = [*head, "scheduler", "--kubeconfig", kubeconfig or plane.kubeconfig,
            "--probe-port", probe, "--metrics-port", metrics, "--no-leader-elect",
            "--scheduler-name", "phalanx-scheduler", "--qps", f"{qps:g}", "--burst", str(burst),
            *cfg.phalanx_args]
    name = "phalanx-scheduler"
    proc = plane.adopt(ManagedProcess(name, argv, plane.workdir / f"bench-{name}.log", env=_env()))
    proc.start()
    return Running(name, proc, port=probe, scheme="http", profile=profile)


def start(plane: ControlPlane, cfg: KubeBenchConfig, scheduler: str, *,
          profile: Path | None = None, kubeconfig: Path | None = None) -> Running:
    if scheduler == KUBE_SCHEDULER:
        return start_kube_scheduler(plane, cfg, kubeconfig)
    return start_phalanx_scheduler(plane, cfg, profile=profile, kubeconfig=kubeconfig)


def binary_version(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                             timeout=30, check=False)
    except OSError:
        return ""
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else ""
