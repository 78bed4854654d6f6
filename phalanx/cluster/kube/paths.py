"""REST paths of Phalanx resources, from their API_VERSION / PLURAL / NAMESPACED, and the
request shapes that go with them (patch content types, selector queries)."""

from __future__ import annotations

from urllib.parse import quote

from phalanx.api.base import Resource
from phalanx.cluster.client import Invalid, Selector
from phalanx.cluster.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

DEFAULT_NAMESPACE = "default"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"  # JSON is valid YAML


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


def selector_queries(
    kind: type[Resource], label_selector: Selector, field_selector: Selector
) -> list[tuple[str, str]]:
    """`labelSelector` / `fieldSelector` query parameters for a list or watch.

    Takes every shape MemoryCluster takes (a string, a dict of equalities, a
    metav1.LabelSelector with matchLabels/matchExpressions), parsed by the same code, so a
    bad selector is `Invalid` before any request, and a dict is sent in kubectl's syntax.
    """
    try:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
    except SelectorError as err:
        raise Invalid(str(err), kind=kind.KIND, field="selector") from None
    query: list[tuple[str, str]] = []
    if not labels.empty:
        query.append(("labelSelector", str(labels)))
    if not fields.empty:
        query.append(("fieldSelector", str(fields)))
    return query
