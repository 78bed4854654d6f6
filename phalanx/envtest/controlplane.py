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
import subprocess
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .accounts import service_account_kubeconfig, service_account_user
from .apiserver import FEATURE_GATES, RUNTIME_CONFIG, APIServer
from .audit import AuditEvent, audit_args, read_audit_log
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
    # Record service accounts' writes in an audit log (audit.py); the admin's are not.
    audit: bool = True


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
        self.audit_log: Path | None = None

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
        extra = list(self.options.apiserver_args)
        if self.options.audit:
            flags, self.audit_log = audit_args(self.workdir)
            extra += flags
        self.apiserver = APIServer(
            self.binaries.kube_apiserver, self.workdir, self.etcd.url,
            feature_gates=self.options.feature_gates,
            runtime_config=self.options.runtime_config, extra_args=extra)
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

    def service_account_kubeconfig(self, namespace: str, name: str) -> Path:
        """A kubeconfig acting as ServiceAccount `namespace/name` (created if missing), with
        a token of its own; what it may do is up to RBAC."""
        return service_account_kubeconfig(
            self.workdir / f"kubeconfig-sa-{namespace}-{name}", self.server, self.token,
            namespace, name)

    @staticmethod
    def service_account_user(namespace: str, name: str) -> str:
        return service_account_user(namespace, name)

    def audit_events(self, user: str | None = None) -> list[AuditEvent]:
        """The writes service accounts made so far (audit.py), oldest first."""
        if self.audit_log is None:
            raise RuntimeError("the control plane was started without an audit log")
        return read_audit_log(self.audit_log, user=user)

    def kubectl(self, *args: str, namespace: str | None = None, timeout: float = 30.0,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the harness's kubectl with the admin kubeconfig; raises (with kubectl's
        stderr) on a non-zero exit when `check`."""
        argv = [str(self.binaries.require("kubectl")), "--kubeconfig", str(self.kubeconfig),
                f"--cache-dir={self.workdir / 'kubectl-cache'}",
                *(["--namespace", namespace] if namespace else []), *args]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                             check=False)
        if check and out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} exited {out.returncode}: "
                               f"{out.stderr.strip()[-2000:]}")
        return out

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
