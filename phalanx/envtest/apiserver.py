"""kube-apiserver for the harness, with the Workload API (gang scheduling) served.

Authentication is a static bearer token of a `system:masters` user (tokens.csv); the
serving certificate is the API server's own self-signed one (clients skip verification on
loopback). Ready means: /readyz answers 200, /openapi/v2 answers 200 (kubectl's client-side
validation reads it, and a fresh server answers 503 for a while) and the `default`
namespace exists (created by the server's bootstrap controller).
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .ports import free_port, http_get
from .process import ManagedProcess
from .wait import Pending, wait_until

ADMIN_TOKEN = "phalanx-envtest-admin"
# The Workload API (scheduling.k8s.io/v1alpha2) and gang scheduling, as in 1.36.
FEATURE_GATES = {"GenericWorkload": True, "GangScheduling": True}
RUNTIME_CONFIG = {"scheduling.k8s.io/v1alpha2": True}


def gates_flag(gates: dict[str, bool]) -> str:
    return "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())


def _write_keys(workdir: Path) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = workdir / "sa.key", workdir / "sa.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


class APIServer:
    def __init__(self, binary: Path, workdir: Path, etcd_url: str, *,
                 feature_gates: dict[str, bool], runtime_config: dict[str, bool],
                 extra_args: list[str]) -> None:
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.token = ADMIN_TOKEN
        self.sa_key, sa_pub = _write_keys(workdir)
        tokens = workdir / "tokens.csv"
        tokens.write_text(f'{self.token},envtest-admin,envtest-admin-uid,"system:masters"\n')
        runtime = ",".join(f"{k}={str(v).lower()}" for k, v in runtime_config.items())
        self.process = ManagedProcess("kube-apiserver", [
            binary, f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}", f"--cert-dir={workdir / 'apiserver-certs'}",
            f"--token-auth-file={tokens}", "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--service-account-issuer=https://localhost",
            f"--service-account-key-file={sa_pub}",
            f"--service-account-signing-key-file={self.sa_key}",
            # No controller-manager creates default service accounts unless asked for.
            "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
            gates_flag(feature_gates), *([f"--runtime-config={runtime}"] if runtime else []),
            *extra_args,
        ], workdir / "kube-apiserver.log")

    def start(self, timeout: float = 90.0) -> APIServer:
        self.process.start()
        wait_until(self.readiness, timeout, what="kube-apiserver ready (/readyz, "
                   "/openapi/v2, namespace default)", interval=0.2)
        return self

    def readiness(self) -> object:
        if not self.process.alive:
            raise RuntimeError(f"kube-apiserver exited: {self.process.log_text(3000)}")
        for path in ("/readyz", "/openapi/v2", "/api/v1/namespaces/default"):
            status, body = http_get(self.url + path, token=self.token, timeout=10)
            if status != 200:
                return Pending(f"{path}: {status} {body[:200]!r}")
        return True

    def stop(self) -> None:
        # Graceful shutdown drains for many seconds; nothing here needs it.
        self.process.stop(grace=2.0)
