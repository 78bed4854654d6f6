"""Phalanx on a real Kubernetes API server.

    cluster = await KubeCluster.connect("~/.kube/config")   # or connect() in a pod
    pcs = await cluster.get(PodCliqueSet, "demo", "default")

`KubeCluster` implements `phalanx.cluster.client.Client`, so the operator, the backends and
the scheduler run on it unchanged. See docs/real-cluster.md.
"""

from .cluster import KubeCluster
from .config import ConnectionConfig, KubeConfigError, connection_for, load_connection
from ..retry import update_with_retry

__all__ = [
    "ConnectionConfig",
    "KubeCluster",
    "KubeConfigError",
    "connection_for",
    "load_connection",
    "update_with_retry",
]
