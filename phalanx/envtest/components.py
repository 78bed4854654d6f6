"""kube-scheduler and kube-controller-manager, started on demand next to the API server.

Both use the admin kubeconfig, serve HTTPS on a free loopback port, do no leader election
and get the same feature gates as the API server (the Workload API needs GenericWorkload and
GangScheduling on kube-scheduler too).

The controller-manager runs only the controllers asked for (default: the garbage collector
and the namespace controller). Its node lifecycle controller stays off on purpose: the
harness's fake nodes have no kubelet renewing a Lease, so after node-monitor-grace-period
that controller would mark them Unknown, taint them unreachable and evict their pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .apiserver import gates_flag
from .ports import free_port, http_get
from .process import ManagedProcess
from .wait import Pending, wait_until

DEFAULT_CONTROLLERS = ("garbagecollector", "namespace")


class Component:
    """A control-plane component with an HTTPS /healthz on `port`."""

    def __init__(self, name: str, argv: list[Any], workdir: Path, port: int) -> None:
        self.name = name
        self.port = port
        self.process = ManagedProcess(name, argv, workdir / f"{name}.log")

    def start(self, timeout: float = 60.0) -> Component:
        self.process.start()
        wait_until(self._healthy, timeout, what=f"{self.name} /healthz", interval=0.2)
        return self

    def _healthy(self) -> object:
        if not self.process.alive:
            raise RuntimeError(f"{self.name} exited: {self.process.log_text(3000)}")
        try:
            status, body = http_get(f"https://127.0.0.1:{self.port}/healthz", timeout=2)
        except OSError as err:
            return Pending(f"not listening yet ({err})")
        return status == 200 or Pending(f"{status} {body[:200]!r}")

    def stop(self) -> None:
        self.process.stop(grace=2.0)


def kube_scheduler(binary: Path, workdir: Path, kubeconfig: Path, *,
                   feature_gates: dict[str, bool], config: dict[str, Any] | None = None,
                   extra_args: list[str] | None = None) -> Component:
    """`config` is merged into the KubeSchedulerConfiguration (e.g. `profiles`, or
    `clientConnection: {qps: 500, burst: 1000}` for benchmarks)."""
    port = free_port()
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
    }
    for key, value in (config or {}).items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    path = workdir / "kube-scheduler-config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return Component("kube-scheduler", [
        binary, f"--config={path}", "--bind-address=127.0.0.1", f"--secure-port={port}",
        f"--cert-dir={workdir / 'kube-scheduler-certs'}", gates_flag(feature_gates),
        *(extra_args or []),
    ], workdir, port)


def kube_controller_manager(binary: Path, workdir: Path, kubeconfig: Path, *,
                            feature_gates: dict[str, bool],
                            controllers: tuple[str, ...] = DEFAULT_CONTROLLERS,
                            extra_args: list[str] | None = None) -> Component:
    if any(c in ("*", "nodelifecycle") for c in controllers):
        raise ValueError("the node lifecycle controller would taint the fake nodes unreachable "
                         "(they send no heartbeats); list the controllers wanted instead")
    port = free_port()
    return Component("kube-controller-manager", [
        binary, f"--kubeconfig={kubeconfig}", f"--controllers={','.join(controllers)}",
        "--leader-elect=false", "--use-service-account-credentials=false",
        "--bind-address=127.0.0.1", f"--secure-port={port}",
        f"--cert-dir={workdir / 'kube-controller-manager-certs'}", gates_flag(feature_gates),
        *(extra_args or []),
    ], workdir, port)
