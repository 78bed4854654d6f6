"""A kubeconfig's impersonation on kube-apiserver 1.36, with kubectl as the oracle: the same
kubeconfig, asked "who am I" (a SelfSubjectReview) by kubectl and by Phalanx's client, gives
the same user, uid, groups and extra; and the API server then authorizes as that user."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.core import ConfigMap
from phalanx.cluster.client import Forbidden
from phalanx.cluster.kube import KubeCluster

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
USER = {"as": "alice", "as-uid": "uid-7",
        "as-groups": ["team-a", "system:authenticated"],
        "as-user-extra": {"example.com/scopes": ["read", "write"], "reason": ["test"]}}


def _kubeconfig(plane: Any, path: Path, user: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": plane.server,
                                               "insecure-skip-tls-verify": True,
                                               "disable-compression": True}}],
        "users": [{"name": "admin-as-alice", "user": {"token": plane.token, **user}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "admin-as-alice"}}]}))
    return path


def _kubectl_whoami(plane: Any, kubeconfig: Path) -> dict[str, Any]:
    out = subprocess.run(
        [str(plane.binaries.require("kubectl")), "--kubeconfig", str(kubeconfig),
         f"--cache-dir={kubeconfig.parent / 'cache'}", "auth", "whoami", "-o", "json"],
        capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)["status"]["userInfo"]


async def _our_whoami(kubeconfig: Path) -> dict[str, Any]:
    kube = await KubeCluster.connect(str(kubeconfig))
    try:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        answer = await asyncio.wait_for(kube.transport.request("POST", REVIEW, body=body), 30)
        return answer["status"]["userInfo"]
    finally:
        await kube.close()


def test_the_api_server_sees_the_same_user_as_kubectl_shows(control_plane, tmp_path):
    path = _kubeconfig(control_plane, tmp_path / "kubeconfig", USER)
    theirs = _kubectl_whoami(control_plane, path)
    ours = asyncio.run(_our_whoami(path))
    assert ours == theirs
    assert ours["username"] == "alice" and ours["uid"] == "uid-7"
    assert ours["extra"]["example.com/scopes"] == ["read", "write"]


def test_an_impersonated_user_is_authorized_as_itself(control_plane, kube_namespace, tmp_path):
    """The admin may read ConfigMaps; alice, whom it impersonates, may not."""
    path = _kubeconfig(control_plane, tmp_path / "kubeconfig", {"as": "alice"})

    async def main() -> None:
        kube = await KubeCluster.connect(str(path))
        try:
            with pytest.raises(Forbidden, match="alice"):
                await asyncio.wait_for(kube.list(ConfigMap, kube_namespace), 30)
        finally:
            await kube.close()

    asyncio.run(main())
