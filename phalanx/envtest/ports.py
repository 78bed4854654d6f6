"""Free loopback ports and plain HTTP(S) probes for the harness (standard library only, so
readiness checks work before any client is set up)."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any

_taken: set[int] = set()


def free_port() -> int:
    """A port nobody listens on now, never handed out twice by this process (two
    components asking at once must not get the same one)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _taken:
            _taken.add(port)
            return port


def _insecure_tls() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # loopback, the components' own self-signed certificates
    return ctx


def http_get(url: str, *, token: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, body) of a GET; HTTP errors are returned, connection errors raise OSError."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, context=_insecure_tls(), timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def http_post_json(url: str, body: dict[str, Any], *, token: str | None = None,
                   timeout: float = 10.0) -> dict[str, Any]:
    """POST JSON, return the JSON answer; HTTP errors raise urllib.error.HTTPError."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, context=_insecure_tls(), timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")
