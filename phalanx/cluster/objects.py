"""Object helpers shared by the cluster implementations: copying, merge patches, keys."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from phalanx.api.base import Resource

from .client import Invalid

T = TypeVar("T", bound=Resource)


def clone(obj: T) -> T:
    """A private deep copy that is also re-validated.

    A dump/validate round trip runs in pydantic-core and is 2.5-3.5x faster than
    `model_copy(deep=True)`; it also catches objects a caller mutated into an invalid
    state (models do not validate on assignment).
    """
    return from_dict(type(obj), dump_for_copy(obj), obj.metadata.name or "")


def clone_part(owner: Resource, part: BaseModel, field: str) -> Any:
    """A private, validated copy of a nested model (e.g. status) of `owner`."""
    try:
        return type(part).model_validate(dump_for_copy(part))
    except ValidationError as err:
        inv = invalid_from(err, type(owner), owner.name)
        inv.field = f"{field}.{inv.field}"
        raise inv from None


def dump_for_copy(obj: BaseModel) -> dict[str, Any]:
    """A fresh dict tree (python field names) that validates back into an equal object.

    `round_trip` drops computed fields. Leaving `None`s out makes the dump and the
    validation ~30% cheaper on sparse objects such as pods; that is exact only when no
    field defaults to something else, which is checked once per class.
    """
    return obj.model_dump(round_trip=True, warnings=False,
                          exclude_none=none_is_always_default(type(obj)))


@cache
def none_is_always_default(cls: type[BaseModel]) -> bool:
    """True when no field of `cls` (or of any model nested in it) accepts None but defaults
    to something else, so dropping None-valued fields from a dump loses nothing."""
    seen: set[type] = set()

    def models_in(tp: Any) -> list[type[BaseModel]]:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return [tp]
        return [m for arg in get_args(tp) for m in models_in(arg)]

    def accepts_none(tp: Any) -> bool:
        if tp is None or tp is NoneType or tp is Any:
            return True
        if get_origin(tp) in (Union, UnionType):
            return any(accepts_none(a) for a in get_args(tp))
        return False

    def safe(model: type[BaseModel]) -> bool:
        if model in seen:
            return True
        seen.add(model)
        for info in model.model_fields.values():
            if accepts_none(info.annotation) and (
                    info.default_factory is not None or info.default is not None):
                return False
            if not all(safe(m) for m in models_in(info.annotation)):
                return False
        return True

    return safe(cls)


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
