"""The `/scale` subresource (autoscaling/v1 Scale), as the API server serves it for custom
resources (apiextensions-apiserver's ScaleREST).

A kind has one when its CRD declares `subresources.scale` (our classes' `SCALE`: the
specReplicasPath, statusReplicasPath and labelSelectorPath). Reading gives spec.replicas,
status.replicas (0 when the status path is unset) and status.selector ("" when unset);
writing sets the spec path on the object, with the Scale's resourceVersion, when given, as a
precondition. A kind without one is NotFound; negative replicas are Invalid naming the
spec path (`.spec.replicas`, as kube-apiserver names it). `MemoryCluster` serves it with these helpers; `KubeCluster` sends the
Scale to the real endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from phalanx.api.base import Resource

from .client import Invalid, NotFound

SCALE_API_VERSION = "autoscaling/v1"
INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class Scale:
    """autoscaling/v1 Scale: `replicas` is spec.replicas (the writable part)."""

    name: str
    namespace: str | None
    replicas: int
    status_replicas: int = 0
    selector: str = ""
    resource_version: str = ""
    uid: str = ""

    def to_dict(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name}
        if self.namespace:
            meta["namespace"] = self.namespace
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version
        if self.uid:
            meta["uid"] = self.uid
        status: dict[str, Any] = {"replicas": self.status_replicas}
        if self.selector:
            status["selector"] = self.selector
        return {"apiVersion": SCALE_API_VERSION, "kind": "Scale", "metadata": meta,
                "spec": {"replicas": self.replicas}, "status": status}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scale:
        meta = data.get("metadata") or {}
        status = data.get("status") or {}
        return cls(name=meta.get("name", ""), namespace=meta.get("namespace"),
                   replicas=int((data.get("spec") or {}).get("replicas") or 0),
                   status_replicas=int(status.get("replicas") or 0),
                   selector=status.get("selector") or "",
                   resource_version=meta.get("resourceVersion", ""), uid=meta.get("uid", ""))


def scale_paths(kind: type[Resource], name: str = "") -> dict[str, str]:
    """The kind's scale paths; NotFound (as the API server: no such resource) without one."""
    paths = getattr(kind, "SCALE", None)
    if not paths:
        raise NotFound(f"the server could not find the requested resource: {kind.KIND} has "
                       "no scale subresource", kind=kind.KIND, name=name)
    return paths


def _read(data: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def scale_of(obj: Resource) -> Scale:
    """The Scale view of `obj`, read through its kind's paths."""
    paths = scale_paths(type(obj), obj.name)
    data = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    selector = _read(data, paths.get("labelSelectorPath", "")) if \
        paths.get("labelSelectorPath") else None
    return Scale(name=obj.name, namespace=obj.metadata.namespace,
                 replicas=int(_read(data, paths["specReplicasPath"]) or 0),
                 status_replicas=int(_read(data, paths.get("statusReplicasPath", "")) or 0),
                 selector=selector if isinstance(selector, str) else "",
                 resource_version=obj.metadata.resource_version or "",
                 uid=obj.metadata.uid or "")


def check_replicas(kind: type[Resource], scale: Scale) -> None:
    """The API server's check of a Scale write (kube-apiserver 1.36 words it so, naming the
    CRD's specReplicasPath as the field)."""
    path = scale_paths(kind, scale.name)["specReplicasPath"]
    if not 0 <= scale.replicas <= INT32_MAX:
        why = "should be a non-negative integer" if scale.replicas < 0 else \
            f"must be less than or equal to {INT32_MAX}"
        group = kind.API_VERSION.split("/")[0] if "/" in kind.API_VERSION else ""
        raise Invalid(f'{kind.KIND}{"." + group if group else ""} "{scale.name}" is invalid: '
                      f"{path}: Invalid value: {scale.replicas}: {why}", kind=kind.KIND,
                      name=scale.name, field=path)


def replicas_patch(kind: type[Resource], scale: Scale) -> dict[str, Any]:
    """The merge patch that writes `scale` to its object: the spec path, and the Scale's
    resourceVersion as a precondition when it has one (ScaleREST's conversion)."""
    paths = scale_paths(kind, scale.name)
    check_replicas(kind, scale)
    patch: dict[str, Any] = {}
    node = patch
    parts = paths["specReplicasPath"].strip(".").split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = scale.replicas
    if scale.resource_version:
        patch["metadata"] = {"resourceVersion": scale.resource_version}
    return patch
