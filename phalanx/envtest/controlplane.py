"""`ControlPlane`: etcd + kube-apiserver (+ kube-scheduler, kube-controller-manager on demand).

    with ControlPlane.start(scheduler=True, controller_manager=True) as cp:
        subprocess.run(["kubectl", "--kubeconfig", cp.kubeconfig, "get", "ns"])
        async with cp.client() as kube:          # a KubeCluster
            ...

Everything lives in a fresh work folder (logs, certificates, etcd data), removed on `stop()`
unless `keep=True`. Every process is in its own process group and is stopped by `stop()`,
by `atexit`, or by the kernel when the harness dies (see process.py).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .apiserver import FEATURE_GATES, RUNTIME_CONFIG, APIServer
from .binaries import Binaries, find_binaries
from .components import DEFAULT_CONTROLLERS, Component, kube_controller_manager, kube_scheduler
from .etcd import Etcd
from .kubeconfig import write_kubeconfig
from .ports import http_post_json
from .process import ManagedProcess


@dataclass
class ControlPlaneOptions:
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    runtime_config: dict[str, bool] = field(default_factory=lambda: dict(RUNTIME_CONFIG))
    apiserver_args: list[str] = field(default_factory=list)
    start_timeout: float = 90.0


class ControlPlane:
    def __init__(self, binaries: Binaries | None = None, *, workdir: Path | None = None,
                 options: ControlPlaneOptions | None = None, keep: bool = False) -> None:
        self.binaries = binaries or find_binaries()
        self.options = options or ControlPlaneOptions()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="phalanx-envtest-"))
        self.keep = keep
        self.etcd: Etcd | None = None
        self.apiserver: APIServer | None = None
        self.scheduler: Component | None = None
        self.controller_manager: Component | None = None
        self._extra: list[ManagedProcess] = []
        self.kubeconfig = self.workdir / "kubeconfig"

    @classmethod
    def start(cls, *, scheduler: bool = False, controller_manager: bool = False,
              binaries: Binaries | None = None, options: ControlPlaneOptions | None = None,
              keep: bool = False) -> ControlPlane:
        """A running control plane; stopped again if any part fails to come up."""
        plane = cls(binaries, options=options, keep=keep)
        try:
            plane.start_apiserver()
            if scheduler:
                plane.start_scheduler()
            if controller_manager:
                plane.start_controller_manager()
        except BaseException:
            plane.stop()
            raise
        return plane

    # --- parts ------------------------------------------------------------------------

    def start_apiserver(self) -> None:
        if self.apiserver is not None:
            return
        self.etcd = Etcd(self.binaries.etcd, self.workdir).start()
        self.apiserver = APIServer(
            self.binaries.kube_apiserver, self.workdir, self.etcd.url,
            feature_gates=self.options.feature_gates,
            runtime_config=self.options.runtime_config, extra_args=self.options.apiserver_args)
        self.apiserver.start(self.options.start_timeout)
        write_kubeconfig(self.kubeconfig, self.server, self.token)

    def start_scheduler(self, config: dict[str, Any] | None = None,
                        extra_args: list[str] | None = None) -> Component:
        """kube-scheduler (once; a running one is returned as is)."""
        if self.scheduler is None or not self.scheduler.process.alive:
            self.scheduler = kube_scheduler(
                self.binaries.require("kube-scheduler"), self.workdir, self.kubeconfig,
                feature_gates=self.options.feature_gates, config=config,
                extra_args=extra_args).start()
        return self.scheduler

    def start_controller_manager(self, controllers: Iterable[str] = DEFAULT_CONTROLLERS,
                                 extra_args: list[str] | None = None) -> Component:
        if self.controller_manager is None or not self.controller_manager.process.alive:
            self.controller_manager = kube_controller_manager(
                self.binaries.require("kube-controller-manager"), self.workdir,
                self.kubeconfig, feature_gates=self.options.feature_gates,
                controllers=tuple(controllers), extra_args=extra_args).start()
        return self.controller_manager

    def stop_scheduler(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None

    def stop_controller_manager(self) -> None:
        if self.controller_manager is not None:
            self.controller_manager.stop()
            self.controller_manager = None

    def adopt(self, proc: ManagedProcess) -> ManagedProcess:
        """Stop `proc` with the control plane (and before it)."""
        self._extra.append(proc)
        return proc

    # --- access -----------------------------------------------------------------------

    @property
    def server(self) -> str:
        assert self.apiserver is not None, "the API server is not started"
        return self.apiserver.url

    @property
    def token(self) -> str:
        assert self.apiserver is not None, "the API server is not started"
        return self.apiserver.token

    def connection(self) -> Any:
        from phalanx.cluster.kube import connection_for

        return connection_for(self.server, token=self.token, insecure=True)

    def client(self, *, field_manager: str = "phalanx", namespace: str | None = None,
               qps: float = 500.0, burst: int = 1000) -> Any:
        """A `KubeCluster` (call inside a running event loop; `async with` closes it)."""
        from phalanx.cluster.kube import KubeCluster

        kube = KubeCluster.from_connection(self.connection(), field_manager=field_manager,
                                           qps=qps, burst=burst)
        if namespace:
            kube.default_namespace = namespace
        return kube

    def kubeconfig_for(self, namespace: str) -> Path:
        """A kubeconfig whose context defaults to `namespace`."""
        return write_kubeconfig(self.workdir / f"kubeconfig-{namespace}-{uuid.uuid4().hex[:6]}",
                                self.server, self.token, namespace=namespace)

    def create_namespace(self, prefix: str) -> str:
        """A new namespace named `<prefix>-<random>` (usable with or without an event
        loop); returns its name."""
        base = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:40].strip("-") or "ns"
        name = f"{base}-{uuid.uuid4().hex[:5]}"
        http_post_json(f"{self.server}/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            token=self.token)
        return name

    def compact(self) -> int:
        """Compact etcd at its current revision; returns that revision."""
        assert self.etcd is not None
        return self.etcd.compact()

    def logs(self) -> dict[str, Path]:
        return {p.name: p for p in sorted(self.workdir.glob("*.log"))}

    # --- lifecycle --------------------------------------------------------------------

    def stop(self) -> None:
        for proc in reversed(self._extra):
            proc.stop(grace=5.0)
        self._extra.clear()
        self.stop_scheduler()
        self.stop_controller_manager()
        if self.apiserver is not None:
            self.apiserver.stop()
            self.apiserver = None
        if self.etcd is not None:
            self.etcd.stop()
            self.etcd = None
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
