"""Where the API server is and how to authenticate: kubeconfig or in-cluster.

kubernetes_asyncio does the hard part (contexts, client certificates, bearer tokens, exec
credential plugins, OIDC refresh, the rotating in-cluster service-account token); we keep
only its `Configuration` and talk HTTP ourselves (see transport.py). Two kubeconfig fields it
does not read are read here, as client-go reads them: the user's impersonation
(`as`, `as-uid`, `as-groups`, `as-user-extra`; impersonation.py) and the cluster's
`disable-compression` (no gzip-compressed responses: on a near API server, compressing a
large list costs its CPU more than the bytes cost the network).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException

from .impersonation import Impersonation, impersonation_from

IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class KubeConfigError(Exception):
    """No usable cluster configuration (shown to users as one line)."""


@dataclass(slots=True)
class ConnectionConfig:
    """A loaded cluster configuration plus what keeps its credentials fresh."""

    configuration: Configuration
    source: str  # "kubeconfig PATH (context X)" or "in-cluster", for log lines
    namespace: str = "default"  # the context's or the pod's namespace
    impersonation: Impersonation | None = None  # the user's `as`, ... (impersonation.py)
    compression: bool = True  # False: the cluster's `disable-compression: true`
    _loader: Any = None
    _refresh: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def server(self) -> str:
        return str(self.configuration.host)

    def start_refresh(self) -> None:
        """Re-run exec/GCP credential plugins in the background before tokens expire."""
        loader = self._loader
        if loader is None or self._refresh is not None:
            return
        user = getattr(loader, "_user", None) or {}
        if "exec" in user or getattr(loader, "provider", None) == "gcp":
            self._refresh = asyncio.get_running_loop().create_task(
                kube_config.refresh_token(loader, self.configuration), name="kube-token-refresh"
            )

    async def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresh
            self._refresh = None


def connection_for(
    server: str,
    *,
    token: str | None = None,
    ca_file: str | None = None,
    insecure: bool = False,
    namespace: str = "default",
    impersonation: Impersonation | None = None,
    compression: bool = True,
) -> ConnectionConfig:
    """A connection to a server URL without a kubeconfig (tests, envtest, proxies)."""
    cfg = Configuration(host=server.rstrip("/"))
    if token:
        cfg.api_key = {"BearerToken": token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.ssl_ca_cert = ca_file
    cfg.verify_ssl = not insecure
    return ConnectionConfig(cfg, source=f"server {server}", namespace=namespace,
                            impersonation=impersonation, compression=compression)


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _in_cluster_connection(cfg: Configuration) -> ConnectionConfig:
    try:
        kube_config.load_incluster_config(client_configuration=cfg)
    except ConfigException as e:
        raise KubeConfigError(f"in-cluster configuration: {e}") from None
    namespace = "default"
    with contextlib.suppress(OSError):
        namespace = IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or "default"
    return ConnectionConfig(cfg, source="in-cluster", namespace=namespace)


def _kubeconfig_env() -> list[str]:
    """The files $KUBECONFIG lists, in order (empty entries dropped)."""
    return [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]


def _first_current_context(paths: list[str]) -> str | None:
    """kubectl's current context of merged files: the first file's that sets one. (The
    loader's merge lets the last file win; every other entry it merges as kubectl does, the
    first file's cluster, user or context of a name winning.)"""
    for path in paths:
        try:
            with open(path) as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError):
            return None  # the loader reports the file
        if isinstance(doc, dict) and doc.get("current-context"):
            return str(doc["current-context"])
    return None


async def load_connection(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> ConnectionConfig:
    """The cluster to talk to, found as controller-runtime's GetConfig finds it: an explicit
    kubeconfig; else the files $KUBECONFIG lists, merged as kubectl merges them (a listed file
    that does not exist is skipped); else, in a pod, its in-cluster service account; else
    ~/.kube/config.
    """
    cfg = Configuration()
    if kubeconfig is not None:
        listed = [str(kubeconfig)]
    else:
        listed = _kubeconfig_env()
        if not listed and _in_cluster():
            return _in_cluster_connection(cfg)
        if not listed:
            home = Path.home() / ".kube" / "config"
            listed = [str(home)] if home.exists() else []
    if not listed:
        raise KubeConfigError(
            "no cluster configuration: pass --kubeconfig PATH, set $KUBECONFIG, "
            "or run inside a pod (in-cluster service account)"
        )
    paths = [p for p in listed if Path(p).is_file()]
    if not paths:
        raise KubeConfigError(f"kubeconfig {os.pathsep.join(listed)} does not exist")
    path = os.pathsep.join(paths)
    if context is None and len(paths) > 1:
        context = _first_current_context(paths)
    try:
        loader = await kube_config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except (ConfigException, KeyError, ValueError, OSError) as e:
        raise KubeConfigError(f"kubeconfig {path}: {e}") from None
    ctx = loader.current_context or {}
    ctx_name = ctx.get("name", "") if hasattr(ctx, "get") else ""
    ctx_body = ctx.get("context", {}) if hasattr(ctx, "get") else {}
    namespace = (ctx_body.get("namespace") if hasattr(ctx_body, "get") else None) or "default"
    source = f"kubeconfig {path}" + (f" (context {ctx_name})" if ctx_name else "")
    user = _node_value(getattr(loader, "_user", None))
    cluster = _node_value(getattr(loader, "_cluster", None))
    try:
        user_name = str(ctx_body.get("user") or "") if hasattr(ctx_body, "get") else ""
        impersonation = impersonation_from(user, user_name)
        compression = not _flag(cluster.get("disable-compression"), "disable-compression")
    except ValueError as e:
        raise KubeConfigError(f"kubeconfig {path}: {e}") from None
    return ConnectionConfig(cfg, source=source, namespace=str(namespace),
                            impersonation=impersonation, compression=compression,
                            _loader=loader)


def _node_value(node: Any) -> dict[str, Any]:
    """The plain mapping of one of kubernetes_asyncio's ConfigNodes (or {})."""
    value = getattr(node, "value", node)
    return value if isinstance(value, dict) else {}


def _flag(value: Any, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"cluster: {name} must be true or false, not {value!r}")
    return value
