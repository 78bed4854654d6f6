"""Which kubeconfig a client loads, and how several merge (cluster/kube/config.py).

Peers: controller-runtime's GetConfig for the order (--kubeconfig, then $KUBECONFIG, then
the in-cluster service account, then ~/.kube/config), and kubectl (client-go's
ClientConfigLoadingRules) for the merge of the files $KUBECONFIG lists: a missing file is
skipped, the first file to name a cluster, user or context wins it, and the current context
is the first file's that sets one. kubectl itself is the oracle where the harness has it:
`kubectl config view --minify` shows the context and server it picked."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cluster.kube import KubeConfigError, load_connection


def _file(path: Path, *, current: str | None, contexts: dict[str, str],
          clusters: dict[str, str]) -> Path:
    """A kubeconfig with contexts (name -> cluster name) and clusters (name -> server)."""
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s, "insecure-skip-tls-verify": True}}
                     for n, s in clusters.items()],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": n, "context": {"cluster": c, "user": "u"}}
                     for n, c in contexts.items()],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    a = _file(tmp_path / "a", current="ctx-b", contexts={"ctx-a": "shared"},
              clusters={"shared": "https://a.example:6443"})
    b = _file(tmp_path / "b", current="ctx-a", contexts={"ctx-b": "only-b"},
              clusters={"shared": "https://b.example:6443",
                        "only-b": "https://only-b.example:6443"})
    return a, b


def _load(monkeypatch: pytest.MonkeyPatch, env: dict[str, str | None], **kwargs: Any) -> Any:
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    return asyncio.run(load_connection(**kwargs))


def test_the_first_file_sets_the_current_context_and_another_may_define_it(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path]) -> None:
    a, b = two_files
    conn = _load(monkeypatch, {"KUBECONFIG": f"{a}{os.pathsep}{b}"})
    assert conn.server == "https://only-b.example:6443"  # a says ctx-b; only b defines it
    assert "(context ctx-b)" in conn.source


def test_the_first_file_to_name_a_cluster_wins_it(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path]) -> None:
    a, b = two_files
    conn = _load(monkeypatch, {"KUBECONFIG": f"{b}{os.pathsep}{a}"})  # b's current: ctx-a
    assert conn.server == "https://b.example:6443"  # "shared" as b, the first file, says


def test_a_missing_file_in_the_list_is_skipped(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path], tmp_path: Path) -> None:
    _, b = two_files
    conn = _load(monkeypatch, {"KUBECONFIG": f"{tmp_path / 'nope'}{os.pathsep}{b}"},
                 context="ctx-b")
    assert conn.server == "https://only-b.example:6443"
    with pytest.raises(KubeConfigError, match="does not exist"):
        _load(monkeypatch, {"KUBECONFIG": f"{tmp_path / 'nope'}{os.pathsep}{tmp_path / 'x'}"})


def test_kubeconfig_comes_before_the_in_cluster_account_in_a_pod(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two_files
    in_pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    conn = _load(monkeypatch, {**in_pod, "KUBECONFIG": str(a)}, context="ctx-a")
    assert conn.server == "https://a.example:6443"
    # Without $KUBECONFIG a pod uses its service account (none here: said in one line).
    with pytest.raises(KubeConfigError, match="in-cluster configuration"):
        _load(monkeypatch, {**in_pod, "KUBECONFIG": None, "HOME": str(tmp_path)})


def test_an_explicit_kubeconfig_wins_over_the_environment(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path]) -> None:
    a, b = two_files
    conn = _load(monkeypatch, {"KUBECONFIG": str(a)}, kubeconfig=b, context="ctx-b")
    assert conn.server == "https://only-b.example:6443"


def _kubectl(env_kubeconfig: str) -> tuple[str, str]:
    from phalanx.envtest import BinariesNotFound, find_binaries

    try:
        kubectl = find_binaries().kubectl
    except BinariesNotFound as err:
        pytest.skip(str(err))
    if kubectl is None:
        pytest.skip("no kubectl")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    out = subprocess.run([str(kubectl), "config", "view", "--minify", "-o", "json"],
                         env={**env, "KUBECONFIG": env_kubeconfig}, capture_output=True,
                         text=True, timeout=30, check=True)
    view = json.loads(out.stdout)
    return view["current-context"], view["clusters"][0]["cluster"]["server"]


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_the_same_context_and_server_as_kubectl_picks(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path], order: str) -> None:
    a, b = two_files
    listed = os.pathsep.join(str(p) for p in ((a, b) if order == "ab" else (b, a)))
    context, server = _kubectl(listed)
    conn = _load(monkeypatch, {"KUBECONFIG": listed})
    assert (f"(context {context})" in conn.source, conn.server) == (True, server)
