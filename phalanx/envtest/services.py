"""`phalanx operator` and `phalanx scheduler` as subprocesses against the control plane.

    op = start_operator(plane)                      # phalanx-scheduler enabled, no webhook
    sched = start_phalanx_scheduler(plane)
    ...
    assert not op.tracebacks(), op.log_text()

Each runs `python -m phalanx.cli.main ... --kubeconfig <plane's>` with free probe and
metrics ports, logs to a file in the plane's work folder, is stopped with the plane (or by
`stop()`, or `kill()` for a crash), and is ready when its /readyz answers 200.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from .controlplane import ControlPlane
from .logs import find_tracebacks
from .ports import free_port, http_get
from .process import ManagedProcess
from .wait import Pending, wait_until

PHALANX = [sys.executable, "-m", "phalanx.cli.main"]


class PhalanxService:
    def __init__(self, name: str, process: ManagedProcess, probe_port: int,
                 metrics_port: int) -> None:
        self.name = name
        self.process = process
        self.probe_port = probe_port
        self.metrics_port = metrics_port

    def __repr__(self) -> str:
        return f"<PhalanxService {self.name} {self.process!r}>"

    def probe(self, path: str = "/readyz") -> tuple[int, bytes]:
        return http_get(f"http://127.0.0.1:{self.probe_port}{path}", timeout=2)

    def metrics(self) -> str:
        status, body = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5)
        if status != 200:
            raise RuntimeError(f"{self.name} /metrics answered {status}")
        return body.decode()

    def metric(self, name: str, /, **labels: str) -> float | None:
        """The value of the sample `name{labels...}` on /metrics (None when absent); a
        sample matches when it has every label given (a label may be called `name`)."""
        from prometheus_client.parser import text_string_to_metric_families

        for family in text_string_to_metric_families(self.metrics()):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v
                                               for k, v in labels.items()):
                    return float(sample.value)
        return None

    def wait_ready(self, timeout: float = 60.0) -> PhalanxService:
        def ready() -> object:
            if not self.process.alive:
                raise RuntimeError(f"{self.name} exited {self.process.returncode}: "
                                   f"{self.process.log_text(3000)}")
            try:
                status, body = self.probe()
            except OSError as err:
                return Pending(f"not listening yet ({err})")
            return status == 200 or Pending(f"/readyz {status} {body[:300]!r}")

        wait_until(ready, timeout, what=f"{self.name} /readyz", interval=0.2)
        return self

    def log_text(self, tail: int | None = None) -> str:
        return self.process.log_text(tail)

    def tracebacks(self) -> list[str]:
        return find_tracebacks(self.process.log_text())

    def stop(self, grace: float = 10.0) -> int | None:
        return self.process.stop(grace=grace)

    def kill(self) -> None:
        self.process.kill()


def operator_config(*, profiles: tuple[str, ...] = ("default-scheduler", "phalanx-scheduler"),
                    default_profile: str = "phalanx-scheduler", probe_port: int,
                    metrics_port: int, webhook_port: int, leader_election: bool = False,
                    lease_namespace: str = "default", log_format: str = "text",
                    profile_configs: dict[str, dict[str, Any]] | None = None,
                    **extra: Any) -> dict[str, Any]:
    """An OperatorConfiguration for one operator on this host (its own ports);
    `profile_configs` gives profiles their `config` (e.g. default-scheduler's
    `{"gangScheduling": True}`)."""
    configs = profile_configs or {}
    cfg: dict[str, Any] = {
        "apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
        "scheduler": {"profiles": [{"name": p, **({"config": configs[p]} if p in configs else {})}
                                   for p in profiles],
                      "defaultProfileName": default_profile},
        "leaderElection": {"enabled": leader_election, "resourceNamespace": lease_namespace},
        "server": {"healthProbes": {"port": probe_port}, "metrics": {"port": metrics_port},
                   "webhooks": {"port": webhook_port}},
        "logFormat": log_format,
    }
    for key, value in extra.items():
        cfg[key] = value
    return cfg


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.pop("KUBECONFIG", None)  # only --kubeconfig counts
    env.update(extra or {})
    return env


def start_operator(plane: ControlPlane, *, config: dict[str, Any] | None = None,
                   webhook: bool = False, namespace: str = "default",
                   extra_args: list[str] | None = None, name: str | None = None,
                   kubeconfig: Path | None = None, env: dict[str, str] | None = None,
                   wait: bool = True, timeout: float = 60.0) -> PhalanxService:
    """`phalanx operator --kubeconfig ...`; `config` replaces the generated
    OperatorConfiguration (whose ports are then the caller's business); `kubeconfig`
    replaces the admin's (e.g. `plane.service_account_kubeconfig(...)`); `env` is added to
    the process's environment (e.g. POD_NAME, the prefix of its leader-election identity)."""
    name = name or f"phalanx-operator-{uuid.uuid4().hex[:6]}"
    probe, metrics, hook = free_port(), free_port(), free_port()
    cfg = config or operator_config(probe_port=probe, metrics_port=metrics, webhook_port=hook,
                                    lease_namespace=namespace)
    server = cfg.get("server") or {}
    probe = int((server.get("healthProbes") or {}).get("port", probe))
    metrics = int((server.get("metrics") or {}).get("port", metrics))
    hook = int((server.get("webhooks") or {}).get("port", hook))
    path = plane.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    # The flags win over the configuration's server ports: a configuration that sets none
    # (e.g. examples/operator-config.yaml) still gets this host's free ports.
    argv = [*PHALANX, "operator", "--kubeconfig", kubeconfig or plane.kubeconfig,
            "--config", path,
            "--namespace", namespace, "--webhook" if webhook else "--no-webhook",
            "--probe-port", probe, "--metrics-port", metrics, "--webhook-port", hook,
            *(extra_args or [])]
    proc = plane.adopt(ManagedProcess(name, argv, plane.workdir / f"{name}.log",
                                      env=_env(env)))
    service = PhalanxService(name, proc.start(), probe, metrics)
    return service.wait_ready(timeout) if wait else service


def start_phalanx_scheduler(plane: ControlPlane, *,
                            scheduler_names: tuple[str, ...] = ("phalanx-scheduler",),
                            leader_elect: bool = False, lease_namespace: str = "default",
                            lease_timing: tuple[str, str, str] | None = None,
                            extra_args: list[str] | None = None, name: str | None = None,
                            kubeconfig: Path | None = None, env: dict[str, str] | None = None,
                            wait: bool = True, timeout: float = 60.0) -> PhalanxService:
    """`phalanx scheduler --kubeconfig ...` on free probe and metrics ports; `lease_timing`
    is (lease duration, renew deadline, retry period) as Go durations."""
    name = name or f"phalanx-scheduler-{uuid.uuid4().hex[:6]}"
    probe, metrics = free_port(), free_port()
    timing = [] if lease_timing is None else [
        f"--leader-elect-{flag}={value}" for flag, value in
        zip(("lease-duration", "renew-deadline", "retry-period"), lease_timing, strict=True)]
    argv = [*PHALANX, "scheduler", "--kubeconfig", kubeconfig or plane.kubeconfig, *timing,
            "--probe-port", probe, "--metrics-port", metrics,
            "--leader-elect" if leader_elect else "--no-leader-elect",
            "--lease-namespace", lease_namespace,
            *[a for n in scheduler_names for a in ("--scheduler-name", n)],
            *(extra_args or [])]
    proc = plane.adopt(ManagedProcess(name, argv, plane.workdir / f"{name}.log",
                                      env=_env(env)))
    service = PhalanxService(name, proc.start(), probe, metrics)
    return service.wait_ready(timeout) if wait else service


def log_path(service: PhalanxService) -> Path:
    return service.process.log_path
