"""REST paths of Phalanx resources, from their API_VERSION / PLURAL / NAMESPACED."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from phalanx.api.base import Resource
from phalanx.cluster.client import Invalid, Selector

DEFAULT_NAMESPACE = "default"


def group_prefix(api_version: str) -> str:
    """`v1` lives under /api/v1 (the legacy core group); everything else under /apis."""
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def collection_path(kind: type[Resource], namespace: str | None) -> str:
    """The list/create/watch path; `namespace=None` lists across all namespaces."""
    if not kind.PLURAL or not kind.API_VERSION:
        raise TypeError(f"{kind.__name__} has no API_VERSION/PLURAL; it cannot be served")
    prefix = group_prefix(kind.API_VERSION)
    if kind.NAMESPACED and namespace:
        return f"{prefix}/namespaces/{quote(namespace, safe='')}/{kind.PLURAL}"
    return f"{prefix}/{kind.PLURAL}"


def object_path(
    kind: type[Resource], name: str, namespace: str | None, subresource: str | None = None
) -> str:
    if not name:
        raise Invalid(f"{kind.KIND} name is required", kind=kind.KIND, field="metadata.name")
    ns = (namespace or DEFAULT_NAMESPACE) if kind.NAMESPACED else None
    path = f"{collection_path(kind, ns)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path


def selector_string(selector: Selector) -> str | None:
    """Dict selectors become `k=v,k2=v2` (sorted: stable URLs); strings pass through."""
    if selector is None:
        return None
    if isinstance(selector, Mapping):
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or None
    return selector or None
