"""Object helpers shared by the cluster implementations: copying, merge patches, keys."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from phalanx.api.base import KubeModel, Resource

from .client import Invalid

T = TypeVar("T", bound=Resource)
P = TypeVar("P")


def clone(obj: T) -> T:
    """A private deep copy (`copy_deep`), re-validated on the way: an object a caller
    mutated into an invalid state is refused as `Invalid` naming the field."""
    try:
        return obj.copy_deep()
    except ValidationError as err:
        raise invalid_from(err, type(obj), obj.metadata.name or "") from None


def clone_part(owner: Resource, part: P, field: str) -> P:
    """A private, validated copy of a nested part (e.g. status) of `owner`: a model, or
    plain JSON data for kinds whose part is opaque (a Service's status)."""
    if not isinstance(part, KubeModel):
        return copy.deepcopy(part)
    try:
        return part.copy_deep()  # type: ignore[return-value]
    except ValidationError as err:
        inv = invalid_from(err, type(owner), owner.name)
        inv.field = f"{field}.{inv.field}"
        raise inv from None


def from_dict(cls: type[T], data: Mapping[str, Any], name: str = "") -> T:
    """Validate a camelCase dict into `cls`, turning pydantic errors into `Invalid`."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise invalid_from(err, cls, name) from None


def invalid_from(err: ValidationError, cls: type[Resource], name: str) -> Invalid:
    """`Invalid` naming the first offending field path (camelCase, as users wrote it)."""
    first = err.errors()[0]
    path = ".".join(_camel(str(p)) if isinstance(p, str) else f"[{p}]" for p in first["loc"])
    path = path.replace(".[", "[")
    others = err.error_count() - 1
    more = f" (and {others} more error{'s' if others > 1 else ''})" if others else ""
    return Invalid(
        f'{cls.KIND} "{name}" is invalid: {path}: {first["msg"]}{more}',
        kind=cls.KIND, name=name, field=path,
    )


def _camel(segment: str) -> str:
    head, *rest = segment.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, the rest replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def object_key(namespace: str | None, name: str) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's cache key)."""
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    """The inverse of `object_key`: (namespace or None, name)."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else (None, key)
