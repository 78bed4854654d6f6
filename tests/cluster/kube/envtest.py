"""A real etcd + kube-apiserver on 127.0.0.1, the controller-runtime envtest way.

`KUBEBUILDER_ASSETS` names a folder holding `etcd` and `kube-apiserver` (what
`setup-envtest use -p path` prints). Authentication is a static bearer token of a
system:masters user; the API server's serving certificate is its own self-signed one.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

TOKEN = "phalanx-envtest-admin"


def assets() -> Path | None:
    folder = os.environ.get("KUBEBUILDER_ASSETS")
    if not folder:
        return None
    path = Path(folder)
    if all((path / b).is_file() for b in ("etcd", "kube-apiserver")):
        return path
    return None


SKIP_REASON = ("needs a real API server: set KUBEBUILDER_ASSETS to a folder with etcd and "
               "kube-apiserver (see docs/real-cluster.md)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Envtest:
    server: str
    token: str
    workdir: Path
    procs: list[subprocess.Popen[bytes]]

    def kubeconfig(self) -> Path:
        path = self.workdir / "kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: envtest\n"
            f"clusters:\n- name: envtest\n  cluster:\n    server: {self.server}\n"
            "    insecure-skip-tls-verify: true\n"
            f"users:\n- name: admin\n  user:\n    token: {self.token}\n"
            "contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: admin\n"
        )
        return path

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _wait_ready(server: str, token: str, proc: subprocess.Popen[bytes], log: Path,
                timeout: float = 60.0) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kube-apiserver exited: {log.read_text()[-2000:]}")
        req = urllib.request.Request(f"{server}/readyz",
                                     headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"kube-apiserver not ready after {timeout}s: {log.read_text()[-2000:]}")


def start(bin_dir: Path) -> Envtest:
    work = Path(tempfile.mkdtemp(prefix="phalanx-envtest-"))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (work / "sa.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (work / "sa.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (work / "tokens.csv").write_text(f'{TOKEN},admin,admin-uid,"system:masters"\n')
    etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    etcd_log = (work / "etcd.log").open("wb")
    procs.append(subprocess.Popen([
        str(bin_dir / "etcd"), "--data-dir", str(work / "etcd"),
        "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
        "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
        "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
        "--unsafe-no-fsync",
    ], stdout=etcd_log, stderr=subprocess.STDOUT))
    api_log = work / "apiserver.log"
    api = subprocess.Popen([
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}", f"--cert-dir={work / 'certs'}",
        f"--token-auth-file={work / 'tokens.csv'}",
        "--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
        "--service-account-issuer=https://localhost",
        f"--service-account-key-file={work / 'sa.pub'}",
        f"--service-account-signing-key-file={work / 'sa.key'}",
        "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
    ], stdout=api_log.open("wb"), stderr=subprocess.STDOUT)
    procs.append(api)
    env = Envtest(f"https://127.0.0.1:{api_port}", TOKEN, work, procs)
    try:
        _wait_ready(env.server, TOKEN, api, api_log)
    except BaseException:
        env.stop()
        raise
    return env
