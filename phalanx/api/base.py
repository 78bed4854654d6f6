"""Base models shared by every Kubernetes-style resource.

Every resource is `apiVersion/kind/metadata/spec/status`, loads from the camelCase YAML
kubectl users write, rejects unknown fields, and dumps back to the same shape.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, model_validator
from pydantic.alias_generators import to_camel


def _is_empty(value: Any) -> bool:
    """`exclude_if` for collections that default to empty (Go's omitempty)."""
    return not value


def micro_time(value: datetime) -> str:
    """metav1.MicroTime's wire form: UTC, exactly six fractional digits."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# metav1.MicroTime (Event eventTime, EventSeries lastObservedTime, Lease acquire/renewTime):
# the API server parses these with exactly six fractional digits and rejects
# "2025-01-01T00:00:00Z", which is how a datetime without microseconds dumps by default.
MicroTime = Annotated[datetime, PlainSerializer(micro_time, return_type=str, when_used="json")]


class KubeModel(BaseModel):
    """Base for every nested object: camelCase aliases, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
        ser_json_timedelta="float",
        # Validators are built on a model's first use, not at import: a process uses a few
        # of the ~300 kinds and nested models (the scheduler's start-up was mostly imports).
        defer_build=True,
    )

    def to_dict(self, *, warnings: bool = True) -> dict[str, Any]:
        """The object as kubectl users write it (camelCase, no empty optionals).

        `warnings=False`: no serializer warning for a value a caller assigned with the wrong
        type (models do not validate on assignment), for callers whose receiver validates
        and names the field anyway (an API server)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json",
                               warnings=warnings)

    def copy_deep(self) -> Self:
        """A private deep copy. Objects shared by caches and watches are read-only.

        Serialise + re-validate (`copy_data`), both in pydantic-core: about 3.5x faster
        than `model_copy(deep=True)` (which deep-copies through Python) on a typical Pod,
        and opaque dict fields come out as fresh containers too. Cached derived values
        (e.g. PodSpec.total_requests) are recomputed on the copy when first asked for.
        Raises pydantic's ValidationError if the object was mutated into an invalid state
        (models do not validate on assignment).
        """
        return type(self).__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
            copy_data(self))


def copy_data(model: BaseModel) -> dict[str, Any]:
    """A fresh dict tree (python field names) that validates back into an equal object.

    The one deep-copy path: `KubeModel.copy_deep` and the embedded API server's private
    copies use it. `round_trip` leaves computed fields out. Leaving `None`s out makes the
    dump and the validation ~30% cheaper on sparse objects such as pods; that is exact
    only when no field defaults to something else, which is checked once per class.
    """
    cls = type(model)
    return cls.__pydantic_serializer__.to_python(  # type: ignore[no-any-return]
        model, round_trip=True, warnings=False, exclude_none=none_is_always_default(cls))


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


class OwnerReference(KubeModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    # Empty collections are left out of dumps, as Kubernetes' omitempty does.
    labels: dict[str, str] = Field(default_factory=dict, exclude_if=_is_empty)
    annotations: dict[str, str] = Field(default_factory=dict, exclude_if=_is_empty)
    owner_references: list[OwnerReference] = Field(default_factory=list, exclude_if=_is_empty)
    finalizers: list[str] = Field(default_factory=list, exclude_if=_is_empty)

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


class Condition(KubeModel):
    """metav1.Condition. Reasons are CamelCase."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None
    observed_generation: int | None = None


class Resource(KubeModel):
    """A top-level API object.

    Subclasses set API_VERSION, KIND, PLURAL and NAMESPACED. `apiVersion` and `kind`
    default from them and must match them when given.
    """

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    PLURAL: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True
    # Objects whose status is written only through the status subresource.
    HAS_STATUS: ClassVar[bool] = False
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    # Names that need only be a URL path segment (RBAC kinds), not an RFC 1123 subdomain.
    PATH_SEGMENT_NAME: ClassVar[bool] = False

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @model_validator(mode="after")
    def _type_meta(self) -> Self:
        cls = type(self)
        if not self.api_version:
            self.api_version = cls.API_VERSION
        elif cls.API_VERSION and self.api_version != cls.API_VERSION:
            raise ValueError(
                f"apiVersion {self.api_version!r} does not match {cls.KIND} ({cls.API_VERSION})"
            )
        if not self.kind:
            self.kind = cls.KIND
        elif cls.KIND and self.kind != cls.KIND:
            raise ValueError(f"kind {self.kind!r} does not match {cls.KIND}")
        return self

    def to_dict(self, *, warnings: bool = True) -> dict[str, Any]:
        """The object as kubectl shows it; an empty status is left out."""
        data = self.model_dump(by_alias=True, exclude_none=True, mode="json", warnings=warnings)
        if "status" in data and not data["status"]:
            del data["status"]
        return data

    # Convenience accessors used everywhere.
    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        """`namespace/name` (or `name` for cluster-scoped objects), as in client-go."""
        ns = self.metadata.namespace
        return f"{ns}/{self.metadata.name}" if ns else (self.metadata.name or "")

    @property
    def group(self) -> str:
        return self.API_VERSION.rpartition("/")[0]

    @classmethod
    def gvk(cls) -> tuple[str, str]:
        return cls.API_VERSION, cls.KIND

    def owner_reference(self, *, controller: bool = True, block: bool = True) -> OwnerReference:
        """An ownerReference pointing at this object (it must have a uid)."""
        if not self.metadata.uid:
            raise ValueError(f"{self.KIND} {self.key} has no uid yet; create it first")
        return OwnerReference(
            api_version=self.api_version,
            kind=self.kind,
            name=self.name,
            uid=self.metadata.uid,
            controller=controller or None,
            block_owner_deletion=block or None,
        )


def get_condition(conditions: list[Condition], type_: str) -> Condition | None:
    for c in conditions:
        if c.type == type_:
            return c
    return None


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool | str,
    reason: str,
    message: str = "",
    now: datetime | None = None,
    observed_generation: int | None = None,
    *,
    cls: type[Condition] | None = None,
) -> bool:
    """Set a condition in place; lastTransitionTime changes only when status changes.

    Returns True when anything changed, so callers can skip no-op status writes.
    `cls` is the list's element type when it is a Condition subclass (PodCondition,
    a scheduler's PodGroup condition); by default the type of the existing entries.
    """
    status_s = status if isinstance(status, str) else ("True" if status else "False")
    existing = get_condition(conditions, type_)
    if existing is None:
        # A subclass-typed list must get the subclass, or dumping it warns.
        factory = cls or (type(conditions[0]) if conditions else Condition)
        conditions.append(
            factory(
                type=type_,
                status=status_s,
                reason=reason,
                message=message,
                last_transition_time=now,
                observed_generation=observed_generation,
            )
        )
        return True
    changed = False
    if existing.status != status_s:
        existing.status = status_s
        existing.last_transition_time = now
        changed = True
    if existing.reason != reason or existing.message != message:
        existing.reason, existing.message = reason, message
        changed = True
    if observed_generation is not None and existing.observed_generation != observed_generation:
        existing.observed_generation = observed_generation
        changed = True
    return changed


def set_status_condition(
    obj: Resource,
    type_: str,
    status: bool | str,
    reason: str,
    message: str = "",
    now: datetime | None = None,
    observed_generation: int | None = None,
) -> bool:
    """`set_condition` on `obj.status.conditions`, whatever condition type that list holds.

    For code that handles several kinds alike (the gang status controller writes the same
    condition on a PodGang, a Workload or any scheduler's PodGroup).
    """
    status_obj = obj.status  # type: ignore[attr-defined]
    return set_condition(
        status_obj.conditions,
        type_,
        status,
        reason,
        message,
        now,
        observed_generation,
        cls=_condition_class(type(status_obj)),
    )


_CONDITION_CLASSES: dict[type, type[Condition]] = {}


def _condition_class(status_cls: type) -> type[Condition]:
    """The element type of `status_cls.conditions` (list[X] -> X), memoised per class."""
    found = _CONDITION_CLASSES.get(status_cls)
    if found is None:
        found = Condition
        field = getattr(status_cls, "model_fields", {}).get("conditions")
        for arg in getattr(field.annotation, "__args__", ()) if field else ():
            if isinstance(arg, type) and issubclass(arg, Condition):
                found = arg
        _CONDITION_CLASSES[status_cls] = found
    return found
