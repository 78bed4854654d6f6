"""kubeconfig files for the harness's clients (kubectl, the components, `phalanx ...`)."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_kubeconfig(path: Path, server: str, token: str, *, namespace: str | None = None,
                     name: str = "envtest") -> Path:
    context: dict[str, str] = {"cluster": name, "user": f"{name}-admin"}
    if namespace:
        context["namespace"] = namespace
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server,
                                                "insecure-skip-tls-verify": True}}],
        "users": [{"name": f"{name}-admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": context}],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path
