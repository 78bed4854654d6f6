"""Every kind Phalanx knows, by (apiVersion, kind), by kind, and by the names kubectl users
type (plural, singular, short name, optionally qualified by group: `podgroups.scheduling.run.ai`).

Built-in kinds are registered when this module is imported; another module adds a kind with
`register(cls)` (e.g. a newer Workload version).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .base import Resource
from .config import OperatorConfiguration
from .core import ConfigMap, Event, Lease, Namespace, Node, Pod, PriorityClass, Service
from .errors import ManifestError, suggest
from .grove import (
    ClusterTopology,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
    PodGang,
)
from .scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup, Workload


class UnknownKind(ManifestError, LookupError):
    """No registered kind matches (or several do); the message lists the candidates."""


_BY_GVK: dict[tuple[str, str], type[Resource]] = {}
_ORDER: list[type[Resource]] = []
_PREFERRED: set[type[Resource]] = set()


def _group(cls: type[Resource]) -> str:
    return cls.API_VERSION.rpartition("/")[0]


def register(cls: type[Resource], *, preferred: bool = False) -> type[Resource]:
    """Add a kind. `preferred` picks it among versions of the same group and kind."""
    if not cls.API_VERSION or not cls.KIND:
        raise ValueError(f"{cls.__name__} sets no API_VERSION/KIND")
    existing = _BY_GVK.get(cls.gvk())
    if existing is not None and existing is not cls:
        raise ValueError(
            f"{cls.API_VERSION}/{cls.KIND} is already registered as {existing.__name__}"
        )
    if existing is None:
        _BY_GVK[cls.gvk()] = cls
        _ORDER.append(cls)
    if preferred:
        for other in _ORDER:
            if other.KIND == cls.KIND and _group(other) == _group(cls):
                _PREFERRED.discard(other)
        _PREFERRED.add(cls)
    return cls


def kinds(*, served_only: bool = False) -> list[type[Resource]]:
    """Registered kinds in registration order (`served_only`: skip file-only kinds)."""
    return [c for c in _ORDER if not served_only or is_served(c)]


def is_served(cls: type[Resource]) -> bool:
    """False for kinds that exist only as files (OperatorConfiguration)."""
    return bool(getattr(cls, "SERVED", True))


def known_kinds() -> list[str]:
    """["Pod (v1)", "PodCliqueSet (grove.io/v1alpha1)", ...] for messages."""
    return [f"{c.KIND} ({c.API_VERSION})" for c in _ORDER]


def get(api_version: str, kind: str) -> type[Resource]:
    """The class for apiVersion/kind; UnknownKind says what is known instead."""
    cls = _BY_GVK.get((api_version, kind))
    if cls is not None:
        return cls
    same_kind = [c for c in _ORDER if c.KIND == kind]
    if same_kind:
        versions = ", ".join(c.API_VERSION for c in same_kind)
        raise UnknownKind(
            f"kind {kind} is not served at apiVersion {api_version!r}; use apiVersion {versions}"
        )
    hint = suggest(kind, sorted({c.KIND for c in _ORDER}))
    raise UnknownKind(
        f"unknown kind {kind!r} (apiVersion {api_version!r})"
        + (f"; did you mean {hint!r}?" if hint else ".")
        + f" Known kinds: {', '.join(known_kinds())}"
    )


def by_kind(kind: str) -> type[Resource]:
    """The class for a kind name; several groups with that kind are an error."""
    return _pick(kind, [c for c in _ORDER if c.KIND == kind])


def resolve(name: str) -> type[Resource]:
    """What a CLI user typed: `pcs`, `podgang`, `PodCliqueSet`, `pods`, `pg`,
    `podgroups.scheduling.run.ai`, `workloads.v1alpha1.scheduling.k8s.io` (case-insensitive)."""
    wanted = name.strip().lower()
    matches = [c for c in _ORDER if is_served(c) and wanted in _names(c)]
    if not matches:
        all_names = sorted({n for c in _ORDER if is_served(c) for n in _names(c) if "." not in n})
        hint = suggest(wanted, all_names)
        raise UnknownKind(
            f"unknown resource type {name!r}"
            + (f"; did you mean {hint!r}?" if hint else ".")
            + f" Known: {', '.join(sorted({c.PLURAL for c in _ORDER if c.PLURAL}))}"
        )
    return _pick(name, matches)


def _names(cls: type[Resource]) -> set[str]:
    base = {cls.KIND.lower(), *(s.lower() for s in cls.SHORT_NAMES)}
    if cls.PLURAL:
        base.add(cls.PLURAL)
    version = cls.API_VERSION.rpartition("/")[2]
    group = _group(cls)
    qualified = set()
    for n in (cls.PLURAL, cls.KIND.lower()):
        if n and group:
            qualified |= {f"{n}.{group}", f"{n}.{version}.{group}"}
    return base | qualified


def _pick(name: str, matches: list[type[Resource]]) -> type[Resource]:
    if not matches:
        raise UnknownKind(f"unknown kind {name!r}. Known kinds: {', '.join(known_kinds())}")
    groups = {_group(c) for c in matches}
    if len(groups) > 1:
        options = ", ".join(
            dict.fromkeys(f"{c.PLURAL or c.KIND.lower()}.{_group(c) or 'core'}" for c in matches)
        )
        raise UnknownKind(f"{name!r} is ambiguous; say which: {options}")
    preferred = [c for c in matches if c in _PREFERRED]
    return preferred[0] if preferred else matches[0]


def from_dict(data: dict[str, Any], *, lenient: bool = False) -> Resource:
    """A typed object from its camelCase dict.

    `lenient=True` ignores unknown fields (for objects read from a real API server, which may
    be newer than these models); otherwise unknown fields are errors, as for user input.
    Raises ManifestError (or UnknownKind) with readable field paths. Like `model_validate`,
    the object may share nested values of opaque fields with `data`: hand over a dict you
    will not mutate afterwards (or `copy_deep()` the result).
    """
    if not isinstance(data, dict):
        raise ManifestError(
            f"expected a Kubernetes object (a mapping with apiVersion and kind), got "
            f"{type(data).__name__}"
        )
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not api_version or not kind:
        missing = " and ".join(k for k, v in (("apiVersion", api_version), ("kind", kind)) if not v)
        raise UnknownKind(f"missing {missing}. Known kinds: {', '.join(known_kinds())}")
    cls = get(str(api_version), str(kind))
    try:
        return cls.model_validate(data, extra="ignore") if lenient else cls.model_validate(data)
    except ValidationError as e:
        from .loader import validation_error  # lazy: the loader imports this module

        raise validation_error(e, cls, data) from None


for _cls in (
    Pod,
    Node,
    Event,
    Namespace,
    ConfigMap,
    Service,
    Lease,
    PriorityClass,
    PodCliqueSet,
    PodClique,
    PodCliqueScalingGroup,
    ClusterTopologyBinding,
    ClusterTopology,
    PodGang,
    Workload,
    KaiPodGroup,
    VolcanoPodGroup,
    CoschedulingPodGroup,
    OperatorConfiguration,
):
    register(_cls)

# Kinds defined by the backends' API modules (Workload v1alpha2/v1beta1 and the standalone
# PodGroup; KAI's Topology) register themselves on import; importing them here (last, as they
# import this module) makes every lookup see them.
from . import kai_topology as _kai_topology  # noqa: E402,F401
from . import koordinator_topology as _koordinator_topology  # noqa: E402,F401
from . import schedulerplugins as _schedulerplugins  # noqa: E402,F401
from . import volcano_topology as _volcano_topology  # noqa: E402,F401
from . import storage as _storage  # noqa: E402,F401  (PV, PVC, StorageClass)
from . import runtimeclass as _runtimeclass  # noqa: E402,F401  (node.k8s.io)
from . import storage_csi as _storage_csi  # noqa: E402,F401  (CSINode, CSIDriver, VA)
from . import resource as _resource  # noqa: E402,F401  (resource.k8s.io DRA)
from . import workloads as _workloads  # noqa: E402,F401
from . import queue as _queue  # noqa: E402,F401  (KAI's scheduling.run.ai/v2 Queue)
