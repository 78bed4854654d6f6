"""A JSON merge patch applied to a stored object, re-validating only what the patch names.

The embedded API server's patch dumps the whole object, merges, and validates it all back
(`MemoryCluster.patch`). For a gate lift on a Grove pod that is ~90 us, nearly all of it
spent on containers the patch does not touch. `patched` walks the patch along the model
instead:

- a sub-object the patch names is rebuilt: a shallow copy whose named fields are validated
  one by one (`validate_assignment`, which also runs the model's own validators);
- every other sub-object is shared with the stored object. Stored objects are never
  mutated, so sharing is safe, and it makes the old/new comparisons of every watcher cheap:
  equal parts are the same objects.

The result equals the dump-merge-validate one, or is None and the caller takes that path:
for a key that is not a field's wire name, a required field deleted, a value that does not
validate (the full path words the error with the whole field path), and kinds where
dropping a None would change a value (`none_is_always_default`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from phalanx.api.base import KubeModel, none_is_always_default

from .objects import merge_patch

M = TypeVar("M", bound=KubeModel)


class _Fallback(Exception):
    """The patch needs the whole-object path."""


def patched(obj: M, patch: Mapping[str, Any]) -> M | None:
    """`obj` with the merge patch applied, sharing every part the patch leaves alone; None
    where only the whole-object path can say (see the module docstring)."""
    if not none_is_always_default(type(obj)):
        return None
    try:
        return _patch_model(obj, patch)
    except (_Fallback, ValidationError):
        return None


def _patch_model(model: M, patch: Mapping[str, Any]) -> M:
    cls = type(model)
    fields = _fields(cls)
    new = model.model_copy()
    fresh = new.__dict__
    # Values derived from the fields and cached on the instance (e.g. PodSpec.total_requests)
    # were copied with them: the patch may change what they were computed from.
    if len(fresh) > len(fields):
        for derived in [k for k in fresh if k not in fields.names]:
            del fresh[derived]
    validator = cls.__pydantic_validator__
    for key, value in patch.items():
        field = fields.get(key)
        if field is None:
            if value is None:
                continue  # deleting what is not there
            raise _Fallback
        name, nested = field.name, field.nested
        if value is None:  # deleted: back to the default, as validating the dump would do
            value = field.default()
        else:
            current = getattr(model, name)
            if isinstance(value, Mapping):
                if nested is not None and type(current) is nested:
                    value = _patch_model(current, value)
                else:
                    dumped = model.model_dump(by_alias=True, exclude_none=True, mode="json",
                                              include={name})
                    value = merge_patch(dumped.get(key), value)
        validator.validate_assignment(new, name, value)
    return new


class _Field:
    """What `_patch_model` needs of one field, worked out once per class."""

    __slots__ = ("_default", "_factory", "name", "nested")

    def __init__(self, name: str, info: FieldInfo) -> None:
        self.name, self.nested = name, _single_model(info.annotation)
        self._default, self._factory = info.default, info.default_factory
        if info.is_required() or (self._factory is not None
                                  and info.default_factory_takes_validated_data):
            self._default, self._factory = PydanticUndefined, None

    def default(self) -> Any:
        if self._factory is not None:
            return self._factory()  # type: ignore[call-arg]
        if self._default is PydanticUndefined:
            raise _Fallback  # required: deleting it is the whole-object path's error
        return copy.deepcopy(self._default)


class _Fields(dict[str, _Field]):
    """wire name -> field, and the set of field names."""

    names: frozenset[str]


@cache
def _fields(cls: type[KubeModel]) -> _Fields:
    if not cls.__pydantic_complete__:  # built on first use (defer_build): build it here
        cls.model_rebuild()
    out = _Fields()
    for name, info in cls.model_fields.items():
        out[info.serialization_alias or info.alias or name] = _Field(name, info)
    out.names = frozenset(cls.model_fields)
    return out


def _single_model(tp: Any) -> type | None:
    """The model class of a field typed `Model` or `Model | None`; None for anything else
    (unions of several models are merged as JSON, as the whole-object path does)."""
    if isinstance(tp, type) and issubclass(tp, KubeModel):
        return tp
    if get_origin(tp) in (Union, UnionType):
        models = [a for a in get_args(tp) if a is not NoneType]
        if len(models) == 1:
            return _single_model(models[0])
    return None
