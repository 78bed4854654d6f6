"""Write rules the API server applies to every kind: names, labels, preconditions,
server-managed metadata, generation, deletion."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import BaseModel

from phalanx.api.base import Resource

from .client import AlreadyExists, Conflict, Invalid
from .metavalidation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    annotation_key_errors,
    annotations_size,
    labels_errors,
    too_long_annotations,
)
from .selectors import check_labels

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# generateName suffixes use the API server's alphabet (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIXES = 27**5  # = 3**15, so any multiplier not divisible by 3 permutes the suffixes


def generated_name(prefix: str, seq: int) -> str:
    """prefix (at most 58 chars) + 5 chars: a deterministic scramble of a counter that does
    not repeat for 14M names, so runs with the same inputs get the same names."""
    n = (seq * 7_777_777) % _SUFFIXES
    suffix = []
    for _ in range(5):
        n, d = divmod(n, 27)
        suffix.append(_SUFFIX_ALPHABET[d])
    return prefix[:58] + "".join(suffix)


# Annotation keys already found valid (keys repeat on every pod of a clique).
_VALID_ANNOTATION_KEYS: dict[str, None] = {}


def validate_meta(obj: Resource) -> None:
    """Name, namespace, labels and annotations as the API server validates them
    (ValidateObjectMeta: label keys and values, annotation keys, the annotations' total
    size), each refusal in kube-apiserver's words."""
    m, kind = obj.metadata, obj.KIND
    name = m.name or ""
    if obj.PATH_SEGMENT_NAME:
        # RBAC kinds: any name usable as a URL path segment (ValidateRBACName), e.g.
        # `grove.io:pcs:<name>`.
        if not name or name in (".", "..") or "/" in name or "%" in name:
            raise Invalid(f'{kind} "{name}" is invalid: metadata.name: must be a non-empty '
                          "path segment (not '.' or '..', no '/' or '%')",
                          kind=kind, name=name, field="metadata.name")
    elif len(name) > 253 or not _NAME_RE.match(name):
        raise Invalid(f'{kind} "{name}" is invalid: metadata.name: must be a lowercase RFC '
                      "1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)",
                      kind=kind, name=name, field="metadata.name")
    if m.namespace is not None and not _NAME_RE.match(m.namespace):
        raise Invalid(f'{kind} "{name}" is invalid: metadata.namespace: {m.namespace!r} is '
                      "not a valid namespace name", kind=kind, name=name,
                      field="metadata.namespace")
    if m.labels and check_labels(m.labels):
        # The fast check found a problem; kube's words for the first one.
        path, why = labels_errors(m.labels, "metadata.labels")[0]
        raise Invalid(f'{kind} "{name}" is invalid: {path}: {why}', kind=kind, name=name,
                      field=path)
    if m.annotations:
        _check_annotations(kind, name, m.annotations)
    controllers = [r for r in m.owner_references if r.controller]
    if len(controllers) > 1:
        owners = " and ".join(f"{r.kind}/{r.name}" for r in controllers)
        raise Invalid(f'{kind} "{name}" is invalid: metadata.ownerReferences: Only one '
                      f'reference can have Controller set to true. Found "true" in references '
                      f"for {owners}", kind=kind, name=name, field="metadata.ownerReferences")


def _check_annotations(kind: str, name: str, annotations: dict[str, str]) -> None:
    """apivalidation.ValidateAnnotations: each key a qualified name (case aside), and the
    total size (keys and values, in bytes) within the limit."""
    for key in annotations:
        if key in _VALID_ANNOTATION_KEYS:
            continue
        whys = annotation_key_errors(key)
        if whys:
            raise Invalid(f'{kind} "{name}" is invalid: metadata.annotations: Invalid value: '
                          f'"{key}": {whys[0]}', kind=kind, name=name,
                          field="metadata.annotations")
        if len(_VALID_ANNOTATION_KEYS) >= 65_536:
            _VALID_ANNOTATION_KEYS.clear()
        _VALID_ANNOTATION_KEYS[key] = None
    size = annotations_size(annotations)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        raise Invalid(f'{kind} "{name}" is invalid: metadata.annotations: '
                      f"{too_long_annotations()} (the annotations hold {size})",
                      kind=kind, name=name, field="metadata.annotations")


def already_exists(cls: type[Resource], name: str) -> AlreadyExists:
    return AlreadyExists(f'{cls.PLURAL or cls.KIND} "{name}" already exists', kind=cls.KIND,
                         name=name)


def check_preconditions(old: Resource, rv: str | None, uid: str | None) -> None:
    """Conflict when the write names another resourceVersion or uid than the stored `old`."""
    kind = old.KIND
    if rv and rv != old.metadata.resource_version:
        raise Conflict(
            f'Operation cannot be fulfilled on {old.PLURAL or kind} "{old.name}": the object '
            "has been modified; please apply your changes to the latest version and try again "
            f"(have resourceVersion {rv}, current {old.metadata.resource_version})",
            kind=kind, name=old.name,
        )
    if uid and uid != old.metadata.uid:
        raise Conflict(f'Precondition failed on {kind} "{old.name}": uid {uid} does not match '
                       f"the stored object's uid {old.metadata.uid}", kind=kind, name=old.name)


def keep_server_metadata(new: Resource, old: Resource) -> None:
    """Server-managed metadata is not the client's to change: `new` gets `old`'s."""
    m, om = new.metadata, old.metadata
    m.name, m.namespace, m.uid = om.name, om.namespace, om.uid
    m.creation_timestamp, m.generate_name = om.creation_timestamp, om.generate_name
    m.deletion_timestamp = om.deletion_timestamp
    m.deletion_grace_period_seconds = om.deletion_grace_period_seconds
    m.resource_version, m.generation = om.resource_version, om.generation


@cache
def status_resettable(cls: type[Resource]) -> bool:
    """The kind's status has a default to start from (so a create may drop the given one)."""
    info = cls.model_fields.get("status")
    return info is not None and not info.is_required()


@cache
def status_default(cls: type[Resource]) -> Callable[[], Any]:
    """What makes a fresh default status for a kind whose status is resettable: its default
    factory, looked up once (pydantic's `get_default` inspects the factory's signature on
    every call)."""
    info = cls.model_fields["status"]
    factory = info.default_factory
    if factory is None:
        default = info.default
        return lambda: copy.deepcopy(default)
    if info.default_factory_takes_validated_data:
        raise TypeError(f"{cls.KIND}: a status default that needs the validated data")
    return factory  # type: ignore[return-value]


def spec_field_changes(old: Resource, new: Resource) -> set[str] | None:
    """The spec fields whose values differ between two objects of one kind, compared once
    per update (the pod rules, the generation and the no-op check all need it); None for
    kinds whose spec is not a model (compared whole)."""
    old_spec, new_spec = getattr(old, "spec", None), getattr(new, "spec", None)
    if old_spec is new_spec:
        return set()
    if type(old_spec) is not type(new_spec) or not isinstance(new_spec, BaseModel):
        return None
    return {f for f in type(new_spec).model_fields
            if getattr(old_spec, f) != getattr(new_spec, f)}


def spec_changed(cls: type[Resource], old: Resource, new: Resource,
                 spec_fields: set[str] | None = None) -> bool:
    """Whether an update bumps metadata.generation: a spec change, or for kinds without
    spec any change outside metadata (and status, when that is a subresource).
    `spec_fields`: `spec_field_changes(old, new)`, when already known."""
    if "spec" in cls.model_fields:
        if spec_fields is not None:
            return bool(spec_fields)
        return old.spec != new.spec  # type: ignore[attr-defined]
    skip = {"api_version", "kind", "metadata", "status" if cls.HAS_STATUS else ""}
    return any(getattr(old, f) != getattr(new, f) for f in cls.model_fields if f not in skip)


def unchanged(cls: type[Resource], old: Resource, new: Resource,
              spec_fields: set[str] | None = None) -> bool:
    """`new == old`, with the spec's comparison taken from `spec_fields` when known."""
    if spec_fields is None or "spec" not in cls.model_fields:
        return new == old
    return not spec_fields and all(getattr(old, f) == getattr(new, f)
                                   for f in cls.model_fields if f != "spec")


def check_deleting_update(old: Resource, new: Resource) -> None:
    """An object being deleted takes any update except new finalizers (as kube-apiserver:
    "no new finalizers can be added if the object is being deleted")."""
    added = [f for f in new.metadata.finalizers if f not in old.metadata.finalizers]
    if added:
        raise Invalid(f'{old.KIND} "{old.name}" is invalid: metadata.finalizers: Forbidden: '
                      "no new finalizers can be added if the object is being deleted, found "
                      f"new finalizers {added}", kind=old.KIND, name=old.name,
                      field="metadata.finalizers")