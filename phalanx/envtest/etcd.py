"""etcd for the harness: one member on loopback, data in the work folder, no fsync.

`compact()` compacts the key space for real through etcd's v3 JSON gateway, so a test of
"410 Gone after compaction" observes the server's actual behaviour.
"""

from __future__ import annotations

import base64
from pathlib import Path

from .ports import free_port, http_get, http_post_json
from .process import ManagedProcess
from .wait import wait_until


class Etcd:
    def __init__(self, binary: Path, workdir: Path) -> None:
        self.client_port, self.peer_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        self.process = ManagedProcess("etcd", [
            binary, "--name", "envtest", "--data-dir", workdir / "etcd-data",
            "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
            "--listen-peer-urls", f"http://127.0.0.1:{self.peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_port}",
            "--initial-cluster", f"envtest=http://127.0.0.1:{self.peer_port}",
            "--unsafe-no-fsync", "--log-level", "warn",
        ], workdir / "etcd.log")

    def start(self, timeout: float = 30.0) -> Etcd:
        self.process.start()

        def healthy() -> object:
            if not self.process.alive:
                raise RuntimeError(f"etcd exited: {self.process.log_text(2000)}")
            status, body = http_get(f"{self.url}/health", timeout=2)
            return status == 200 and b'"true"' in body

        wait_until(healthy, timeout, what="etcd /health", interval=0.1)
        return self

    def revision(self) -> int:
        """etcd's current revision (the API server's newest resourceVersion)."""
        out = http_post_json(f"{self.url}/v3/kv/range",
                             {"key": base64.b64encode(b"/").decode(), "limit": 1})
        return int(out["header"]["revision"])

    def compact(self, revision: int | None = None) -> int:
        """Compact away every revision before `revision` (default: the current one)."""
        rev = revision or self.revision()
        http_post_json(f"{self.url}/v3/kv/compaction", {"revision": rev, "physical": True})
        return rev

    def stop(self) -> None:
        self.process.stop(grace=2.0)
