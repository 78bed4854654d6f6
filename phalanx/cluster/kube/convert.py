"""Between the API server's JSON and Phalanx's pydantic resources.

A real API server returns more than our models describe: `managedFields`, defaulted pod
fields (`dnsPolicy`, `terminationMessagePath`, ...), fields added by admission plugins. The
models reject unknown fields (`extra="forbid"`), so decoding prunes the server's JSON down to
what each model declares, the way a structural CRD schema prunes on the server.

Pruning is lossy, so writes must never replace a whole object with a pruned copy (that would
drop the service-account volume admission added to a pod, and pods are immutable). Updates are
therefore sent as JSON merge patches: the difference between the object as it was decoded and
the object the caller hands back, plus its resourceVersion as a precondition. Fields the model
does not know are never in that difference and stay as they are on the server.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections import OrderedDict, abc
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from pydantic import BaseModel
from pydantic_core import SchemaValidator
from pydantic_core import core_schema as cs

from phalanx.api.base import ObjectMeta, Resource

T = TypeVar("T", bound=Resource)

# A plan says how to prune one JSON value: None keeps it as it is (a scalar, or a container
# of scalars, which pydantic validates into containers of its own); OPAQUE keeps it too, but
# as a copy: the model would hold it by reference (`Any`, `dict[str, Any]`, ...).
Plan = Union["ModelPlan", "ListPlan", "MapPlan", "_Opaque", None]


@dataclass(slots=True)
class ModelPlan:
    fields: dict[str, Plan]  # by JSON name (the camelCase alias)
    keep_unknown: bool


@dataclass(slots=True)
class ListPlan:
    item: Plan


@dataclass(slots=True)
class MapPlan:
    value: Plan


class _Opaque:
    __slots__ = ()

    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = _Opaque()
_PLANS: dict[type[BaseModel], ModelPlan] = {}
_BARE_CONTAINERS = (dict, list, tuple, set, frozenset, abc.Mapping, abc.Sequence)


def _plan_for_type(tp: Any) -> Plan:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _plan_for_type(typing.get_args(tp)[0])
    if tp is Any or tp is object or tp in _BARE_CONTAINERS:
        return OPAQUE
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        plans = [_plan_for_type(a) for a in options]
        real = [p for p in plans if p is not None]
        # One structured option (X | None): prune as X. Several: ambiguous, keep (a copy).
        if len(real) == 1 and len(options) == 1:
            return real[0]
        return OPAQUE if real else None
    if origin in (list, tuple, set, frozenset, abc.Sequence):
        args = typing.get_args(tp)
        item = _plan_for_type(args[0]) if args else OPAQUE
        if item is OPAQUE:
            return OPAQUE
        return ListPlan(item) if item is not None else None
    if origin in (dict, abc.Mapping):
        args = typing.get_args(tp)
        value = _plan_for_type(args[1]) if len(args) == 2 else OPAQUE
        if value is OPAQUE:
            return OPAQUE
        return MapPlan(value) if value is not None else None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return model_plan(tp)
    return None


def model_plan(cls: type[BaseModel]) -> ModelPlan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    plan = ModelPlan(fields={}, keep_unknown=cls.model_config.get("extra") == "allow")
    _PLANS[cls] = plan  # registered before recursing: models may refer to themselves
    for name, info in cls.model_fields.items():
        plan.fields[info.alias or name] = _plan_for_type(info.annotation)
        if info.alias and name != info.alias:
            # populate_by_name: a snake_case key is accepted too.
            plan.fields.setdefault(name, plan.fields[info.alias])
    return plan


def _prune(value: Any, plan: Plan) -> Any:
    # The hottest code of a real-server informer (every object of every list and watch
    # event): scalar and opaque fields are handled inline, without a call each.
    if plan is None or value is None:
        return value
    if plan is OPAQUE:
        return json_copy(value) if isinstance(value, dict | list) else value
    if type(plan) is ModelPlan:
        if not isinstance(value, dict):
            return value  # let pydantic report the type error
        fields = plan.fields
        out = {}
        for k, v in value.items():
            sub = fields.get(k, _UNKNOWN)
            if sub is None:
                out[k] = v
            elif sub is _UNKNOWN:
                if plan.keep_unknown:
                    out[k] = json_copy(v)
            elif sub is OPAQUE:
                out[k] = json_copy(v) if isinstance(v, dict | list) else v
            else:
                out[k] = _prune(v, sub)
        return out
    if type(plan) is ListPlan:
        return [_prune(v, plan.item) for v in value] if isinstance(value, list) else value
    if isinstance(value, dict):
        return {k: _prune(v, plan.value) for k, v in value.items()}  # type: ignore[union-attr]
    return value


_UNKNOWN: Any = object()


def prune(kind: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the fields `kind` does not declare (recursively), sharing no
    container with `data`."""
    return _prune(data, model_plan(kind))


def decode(kind: type[T], data: dict[str, Any]) -> T:
    return kind.model_validate(prune(kind, data))


_LIST_VALIDATORS: dict[type[BaseModel], SchemaValidator] = {}
_LENIENT: dict[type[BaseModel], bool] = {}


def lenient_decodable(kind: type[BaseModel]) -> bool:
    """Whether validating with unknown fields ignored gives what prune + validate gives:
    true unless some model in `kind`'s tree keeps unknown fields (extra="allow"), which
    ignoring would drop."""
    ok = _LENIENT.get(kind)
    if ok is None:
        seen: set[int] = set()

        def keeps_none(plan: Plan) -> bool:
            if isinstance(plan, ModelPlan):
                if id(plan) in seen:
                    return True
                seen.add(id(plan))
                return not plan.keep_unknown and all(keeps_none(p) for p in plan.fields.values())
            if isinstance(plan, ListPlan):
                return keeps_none(plan.item)
            if isinstance(plan, MapPlan):
                return keeps_none(plan.value)
            return True

        ok = _LENIENT[kind] = keeps_none(model_plan(kind))
    return ok


def decode_lenient(kind: type[T], data: dict[str, Any]) -> T:
    """`decode` without the pruned copy: validated with unknown fields ignored (pydantic's
    per-call `extra`), for kinds where that is the same (`lenient_decodable`). The model may
    hold containers of `data` (opaque fields) by reference: the caller must not keep or
    change `data`."""
    if not lenient_decodable(kind):
        return decode(kind, data)
    kind.model_rebuild()  # models are built on first use (defer_build)
    return kind.__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
        data, extra="ignore")


def list_validator(kind: type[BaseModel]) -> SchemaValidator:
    """Validates a whole list response (raw JSON) into `kind` models in one call."""
    validator = _LIST_VALIDATORS.get(kind)
    if validator is None:
        kind.model_rebuild()
        validator = SchemaValidator(cs.typed_dict_schema({
            "metadata": cs.typed_dict_field(cs.dict_schema(), required=False),
            "items": cs.typed_dict_field(
                cs.nullable_schema(cs.list_schema(kind.__pydantic_core_schema__)),
                required=False),
        }, extra_behavior="ignore"))
        _LIST_VALIDATORS[kind] = validator
    return validator


_EVENT_VALIDATORS: dict[type[BaseModel], SchemaValidator] = {}


def event_validator(kind: type[BaseModel]) -> SchemaValidator:
    """Validates one watch event line (raw JSON) into {"type": str, "object": a `kind`
    model} in one call, unknown fields ignored. Only for `lenient_decodable` kinds; an
    ERROR event (its object a Status) fails validation: parse that one as JSON."""
    validator = _EVENT_VALIDATORS.get(kind)
    if validator is None:
        kind.model_rebuild()
        validator = SchemaValidator(cs.typed_dict_schema({
            "type": cs.typed_dict_field(cs.str_schema()),
            "object": cs.typed_dict_field(kind.__pydantic_core_schema__),
        }, extra_behavior="ignore"))
        _EVENT_VALIDATORS[kind] = validator
    return validator


def decode_list(kind: type[T], raw: bytes) -> tuple[list[T], dict[str, Any]]:
    """The items and the list metadata of a list response, from its raw JSON.

    The same models `decode` gives item by item, at about half the CPU: the JSON is parsed
    and validated in one pass inside pydantic-core, unknown fields ignored (the per-call
    `extra`, which reaches every nested model). No server form is kept (the caller gets no
    merge-patch base for these objects; an update of one reads it first). Kinds that are
    not `lenient_decodable` go the long way."""
    if not lenient_decodable(kind):
        data = json.loads(raw)
        return ([decode(kind, item) for item in data.get("items") or ()],
                data.get("metadata") or {})
    page = list_validator(kind).validate_json(raw, extra="ignore")
    return page.get("items") or [], page.get("metadata") or {}


def decode_metadata_list(raw: bytes) -> tuple[list[ObjectMeta], dict[str, Any]]:
    """The items' metadata and the list metadata of a PartialObjectMetadataList (or of a
    whole list, whose items' metadata is read alike), unknown fields ignored."""
    page = _metadata_list_validator().validate_json(raw, extra="ignore")
    return [item.get("metadata") or ObjectMeta() for item in page.get("items") or ()], \
        page.get("metadata") or {}


@functools.cache
def _metadata_list_validator() -> SchemaValidator:
    ObjectMeta.model_rebuild()
    return SchemaValidator(cs.typed_dict_schema({
        "metadata": cs.typed_dict_field(cs.dict_schema(), required=False),
        "items": cs.typed_dict_field(cs.nullable_schema(cs.list_schema(
            cs.typed_dict_schema({
                "metadata": cs.typed_dict_field(
                    ObjectMeta.__pydantic_core_schema__, required=False),
            }, extra_behavior="ignore"))), required=False),
    }, extra_behavior="ignore"))


_STATUS_MODELS: dict[type[BaseModel], type[BaseModel] | None] = {}


def status_model(kind: type[BaseModel]) -> type[BaseModel] | None:
    """The model of `kind`'s `status` field (optional or not); None when it has no status
    or the status is not one model."""
    if kind in _STATUS_MODELS:
        return _STATUS_MODELS[kind]
    info = kind.model_fields.get("status")
    found: type[BaseModel] | None = None
    if info is not None:
        args = [a for a in (typing.get_args(info.annotation) or (info.annotation,))
                if a is not type(None)]
        if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            found = args[0]
    _STATUS_MODELS[kind] = found
    return found


def normalized(kind: type[Resource], data: dict[str, Any], *, status_only: bool = False) -> dict[str, Any]:
    """The server's form of an object as `to_dict` would give it after decoding: the two
    sides of a merge patch are compared in one form. `status_only`: {"status": ...} alone,
    for a status write, without decoding the spec (a PodClique's holds a whole pod template)."""
    model = status_model(kind) if status_only else None
    if model is None:
        return kind.model_validate(prune(kind, data)).to_dict()
    raw = data.get("status")
    if raw is None:
        return {"status": {}}
    return {"status": model.model_validate(prune(model, raw)).model_dump(
        by_alias=True, exclude_none=True, mode="json")}


def dumped(obj: Resource, *, status_only: bool = False) -> dict[str, Any]:
    """`obj.to_dict()` (no serializer warnings: the server names a bad field), or
    {"status": ...} alone (see `normalized`)."""
    if not status_only or status_model(type(obj)) is None:
        return obj.to_dict(warnings=False)
    status = getattr(obj, "status", None)
    return {"status": {} if status is None else status.model_dump(
        by_alias=True, exclude_none=True, mode="json", warnings=False)}


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars); faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: json_copy(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) if isinstance(v, dict | list) else v for v in value]
    return value


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 JSON merge patch that turns `old` into `new` (lists are replaced)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key, old_value in old.items():
        if key not in new:
            patch[key] = None
    for key, new_value in new.items():
        if key not in old:
            patch[key] = new_value
            continue
        old_value = old[key]
        if old_value == new_value:
            continue
        if isinstance(old_value, dict) and isinstance(new_value, dict):
            sub = merge_patch(old_value, new_value)
            if sub:
                patch[key] = sub
        else:
            patch[key] = new_value
    return patch


class BaseCache:
    """The server form (less managedFields) of recently decoded objects, newest version per
    uid; pruned again when used.

    `update` diffs against it to build its merge patch; on a miss (another version, or
    evicted) it reads the object once. One version per object, because an update from an
    older version is a Conflict anyway: keeping every version (as an earlier (uid,
    resourceVersion) key did) held up to `capacity` copies of a few hot objects and grew the
    operator by ~10 MB per scale cycle in Grove's soak test. Deleted objects are dropped.
    Bounded (LRU) so a large informer does not keep a second copy of everything."""

    def __init__(self, capacity: int = 8192) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()

    def put(self, data: dict[str, Any]) -> None:
        meta = data.get("metadata") or {}
        uid, rv = meta.get("uid"), meta.get("resourceVersion")
        if not uid or not rv:
            return
        self._items[uid] = (rv, data)
        self._items.move_to_end(uid)
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def get(self, uid: str | None, rv: str | None) -> dict[str, Any] | None:
        if not uid or not rv:
            return None
        found = self._items.get(uid)
        if found is None or found[0] != rv:
            return None
        self._items.move_to_end(uid)
        return found[1]

    def discard(self, uid: str | None) -> None:
        if uid:
            self._items.pop(uid, None)

    def __len__(self) -> int:
        return len(self._items)
