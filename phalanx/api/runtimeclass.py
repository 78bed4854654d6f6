"""node.k8s.io/v1 RuntimeClass: a container runtime configuration pods select by name.

A pod's `spec.runtimeClassName` never reaches a scheduler as such: the API server's
RuntimeClass admission plugin (phalanx.cluster.runtimeclass on the embedded cluster) refuses
a pod naming no RuntimeClass, merges the class's `scheduling.nodeSelector` and
`scheduling.tolerations` into the pod, and sets `spec.overhead` from `overhead.podFixed`.
Schedulers then see only ordinary nodeSelector, tolerations and overhead.
"""

from __future__ import annotations

from . import registry as _registry
from .base import KubeModel, Resource
from .pod import ResourceList, Toleration


class Overhead(KubeModel):
    pod_fixed: ResourceList | None = None


class Scheduling(KubeModel):
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None


class RuntimeClass(Resource):
    """Cluster-scoped; top-level fields, no spec (as the Kubernetes type)."""

    API_VERSION = "node.k8s.io/v1"
    KIND = "RuntimeClass"
    PLURAL = "runtimeclasses"
    NAMESPACED = False

    handler: str = ""
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None


_registry.register(RuntimeClass)

__all__ = ["Overhead", "RuntimeClass", "Scheduling"]
