"""Service accounts with a token of their own, as a pod's mounted token would be.

A process started with such a kubeconfig acts as `system:serviceaccount:<ns>:<name>`: RBAC
decides what it may do (e.g. the install's least-privilege roles) and the audit log tells
its writes from everyone else's.
"""

from __future__ import annotations

import urllib.error
from pathlib import Path

from .kubeconfig import write_kubeconfig
from .ports import http_post_json


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def create_service_account(server: str, admin_token: str, namespace: str, name: str, *,
                           expiration_seconds: int = 3600) -> str:
    """Create the ServiceAccount (if missing) and return a bound token for it
    (TokenRequest API, signed by the API server's service-account key)."""
    base = f"{server}/api/v1/namespaces/{namespace}/serviceaccounts"
    try:
        http_post_json(base, {"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": name}}, token=admin_token)
    except urllib.error.HTTPError as err:
        if err.code != 409:  # AlreadyExists is fine
            raise
    answer = http_post_json(f"{base}/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": expiration_seconds}}, token=admin_token)
    return str(answer["status"]["token"])


def service_account_kubeconfig(path: Path, server: str, admin_token: str, namespace: str,
                               name: str) -> Path:
    token = create_service_account(server, admin_token, namespace, name)
    return write_kubeconfig(path, server, token, namespace=namespace, name=f"sa-{name}")


def bind_cluster_role(server: str, admin_token: str, namespace: str, name: str, *,
                      role: str = "cluster-admin") -> None:
    """A ClusterRoleBinding `<namespace>-<name>-<role>` of ServiceAccount namespace/name to
    `role` (idempotent): for tests that check what a process wrote (the audit log records
    service accounts' writes), not what RBAC lets it do."""
    try:
        http_post_json(f"{server}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{namespace}-{name}-{role}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
            token=admin_token)
    except urllib.error.HTTPError as err:
        if err.code != 409:
            raise
