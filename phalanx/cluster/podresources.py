"""The API server's validation of container resources (pkg/apis/core/validation,
`validateResourceRequirements`), so that a pod the embedded cluster accepts is one a real
kube-apiserver accepts too.

Rules, per container and init container (`spec.containers[i].resources`):
- a resource name is cpu, memory, ephemeral-storage or hugepages-<size>, a name in the
  kubernetes.io domain, or an extended resource (a qualified name in another domain, such as
  nvidia.com/gpu);
- quantities are not negative; extended resources are whole numbers;
- extended resources and hugepages cannot be overcommitted: a request needs a limit, and
  both must be equal (a limit alone is fine: the request defaults to it);
- any other request is at most its limit;
- hugepages are a whole multiple of the page size, and need a cpu or memory request or limit.

`resource_errors(spec, path)` returns every problem as (field, message), field in the API
server's form (`spec.containers[0].resources.limits`), message as it words it plus the
resource name and what to write instead.

The same rules check `spec.overhead` (as limits) and pod-level `spec.resources` (KEP-2837:
cpu, memory and hugepages only; after the API server's defaulting of pod-level requests, the
containers' summed requests and each container's limits must fit them).
`podvalidation` calls these in the API server's order with the rest of the pod.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from phalanx.api.quantity import is_native_resource as is_native
from phalanx.api.quantity import overcommit_allowed, parse_quantity

FieldErrors = list[tuple[str, str]]

_STANDARD = ("cpu", "memory", "ephemeral-storage")
_HUGEPAGES = "hugepages-"
_QOS = ("cpu", "memory")
# A qualified name: an optional DNS subdomain prefix, then a name of at most 63 characters.
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@functools.lru_cache(maxsize=4096)  # pure, and a cluster names few resources: every pod checks them
def is_extended(name: str) -> bool:
    """A resource in another domain (nvidia.com/gpu), qualified as quota names must be."""
    if is_native(name) or name.startswith("requests."):
        return False
    return _is_qualified(f"requests.{name}")


def _is_qualified(name: str) -> bool:
    prefix, _, local = name.rpartition("/")
    if "/" in prefix:
        return False
    if prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return 0 < len(local) <= 63 and bool(_NAME.match(local))


@functools.lru_cache(maxsize=4096)
def _name_error(name: str) -> str | None:
    if "/" not in name:
        if name in _STANDARD or name.startswith(_HUGEPAGES):
            return None
        return (f"{name!r} must be a standard resource for containers (cpu, memory, "
                "ephemeral-storage, hugepages-<size>) or an extended resource such as "
                "nvidia.com/gpu")
    if is_native(name):
        return None if _is_qualified(name) else f"{name!r} is not a valid resource name"
    if not is_extended(name):
        return f"{name!r} doesn't follow extended resource name standard"
    return None


def container_resource_name_error(name: str) -> str | None:
    """Why `name` is no container resource name (kube's ValidateContainerResourceName)."""
    return _name_error(name)


def _quantity(raw: Any) -> float | None:
    try:
        return parse_quantity(raw)
    except ValueError:
        return None


def _page_size(name: str) -> float | None:
    return _quantity(name[len(_HUGEPAGES):])


def _fmt(raw: Any) -> str:
    return str(raw)


def container_resource_errors(resources: Any, path: str,
                              name_error: Callable[[str], str | None] | None = None
                              ) -> FieldErrors:
    """The problems of one container's `resources` (a ResourceRequirements or None).
    `name_error` judges resource names (default: the names a container may use)."""
    if resources is None:
        return []
    memo = None
    if name_error is None:  # pods repeat a few resource sets: each is judged once
        memo = (tuple((resources.requests or {}).items()),
                tuple((resources.limits or {}).items()))
        if memo in _VALID_SETS:
            return []
    errs = _requirement_errors(resources, path, name_error)
    if not errs and memo is not None:
        if len(_VALID_SETS) >= 4096:
            _VALID_SETS.clear()
        _VALID_SETS[memo] = None
    return errs


_VALID_SETS: dict[tuple[tuple[tuple[str, Any], ...], ...], None] = {}


def _requirement_errors(resources: Any, path: str,
                        name_error: Callable[[str], str | None] | None) -> FieldErrors:
    requests: dict[str, Any] = dict(resources.requests or {})
    limits: dict[str, Any] = dict(resources.limits or {})
    errs: FieldErrors = []
    values: dict[tuple[str, str], float] = {}
    for kind, resource_list in (("limits", limits), ("requests", requests)):
        for name, raw in resource_list.items():
            at = f"{path}.{kind}[{name}]"
            why = (name_error or _name_error)(name)
            if why is not None:
                errs.append((at, why if why.startswith("Unsupported") else
                             f"Invalid value: {why}"))
                continue
            value = _quantity(raw)
            if value is None:
                errs.append((at, f"Invalid value: {_fmt(raw)!r}: quantities must be a number "
                                 "with an optional suffix (e.g. 500m, 2, 16Gi)"))
                continue
            if value < 0:
                errs.append((at, f"Invalid value: {_fmt(raw)}: must be greater than or equal "
                                 "to 0"))
            elif is_extended(name) and round(value * 1000) % 1000:
                errs.append((at, f"Invalid value: {_fmt(raw)}: must be an integer"))
            elif name.startswith(_HUGEPAGES):
                page = _page_size(name)
                if page is None or page <= 0 or value % page:
                    errs.append((at, f"Invalid value: {_fmt(raw)} is not positive integer "
                                     f"multiple of {name}"))
            values[(kind, name)] = value
    for name, raw in requests.items():
        req = values.get(("requests", name))
        if req is None:
            continue
        if name not in limits:
            if not overcommit_allowed(name):
                errs.append((f"{path}.limits", "Required value: Limit must be set for non "
                             f"overcommitable resources ({name} is requested without a "
                             f"limit; set limits: {{{name}: {_fmt(raw)}}})"))
            continue
        lim = values.get(("limits", name))
        if lim is None:
            continue
        if req != lim and not overcommit_allowed(name):
            errs.append((f"{path}.requests", f"Invalid value: {_fmt(raw)}: must be equal to "
                                             f"{name} limit of {_fmt(limits[name])}"))
        elif req > lim:
            errs.append((f"{path}.requests", f"Invalid value: {_fmt(raw)}: must be less than "
                                             f"or equal to {name} limit of "
                                             f"{_fmt(limits[name])}"))
    names = set(requests) | set(limits)
    if any(n.startswith(_HUGEPAGES) for n in names) and not any(n in _QOS for n in names):
        errs.append((path, "Forbidden: HugePages require cpu or memory"))
    return errs


def resource_errors(spec: Any, path: str = "spec") -> FieldErrors:
    """Every resource problem of a pod spec's containers and init containers."""
    errs: FieldErrors = []
    for group, containers in (("containers", spec.containers),
                              ("initContainers", spec.init_containers or ())):
        for i, c in enumerate(containers):
            errs += container_resource_errors(c.resources, f"{path}.{group}[{i}].resources")
    return errs


# ------------------------------------------------------ pod overhead and pod-level resources

_POD_LEVEL = ("cpu", "memory")
_STANDARD_UNPREFIXED = ("cpu", "memory", "ephemeral-storage", "storage", "pods")


def overhead_errors(overhead: Any, path: str = "spec.overhead") -> FieldErrors:
    """spec.overhead, checked as the limits of a container (names, quantities, hugepages)."""
    if not overhead:
        return []
    return container_resource_errors(_Limits(overhead), path)


class _Limits:
    __slots__ = ("limits", "requests")

    def __init__(self, limits: Any) -> None:
        self.limits, self.requests = limits, None


@functools.lru_cache(maxsize=256)
def _pod_level_name_error(name: str) -> str | None:
    """Pod-level resources (KEP-2837) take cpu, memory and hugepages only."""
    if not _is_qualified(name):
        return f"{name!r} is not a valid resource name"
    if "/" not in name and name not in _STANDARD_UNPREFIXED and \
            not name.startswith(_HUGEPAGES):
        return f"{name!r}: must be a standard resource type or fully qualified"
    if name in _POD_LEVEL or name.startswith(_HUGEPAGES):
        return None
    return (f'Unsupported value: "{name}": supported values: "cpu", "hugepages-", "memory" '
            "(pod-level resources take cpu, memory and hugepages only)")


def pod_level_resource_errors(spec: Any, path: str = "spec") -> FieldErrors:
    """spec.resources (pod-level requests and limits): names, quantities, requests within
    limits, and room for what the containers ask (their summed requests and each one's
    limits must fit the pod's), after the API server's defaulting of pod-level requests."""
    res = spec.resources
    if res is None:
        return []
    at = f"{path}.resources"
    os_name = (spec.os or {}).get("name") if isinstance(spec.os, dict) else None
    if os_name == "windows":
        return [(at, "Forbidden: may not be set for a windows pod")]
    errs: FieldErrors = []
    if res.claims is not None:
        errs.append((f"{at}.claims",
                     "Forbidden: claims may not be set for Resources at pod-level"))
    if not (res.requests or res.limits):
        return errs
    requests, limits = _pod_level_defaults(spec)
    errs += container_resource_errors(_Both(requests, limits), at, _pod_level_name_error)
    return errs + pod_level_consistency_errors(spec, requests, limits, at)


def pod_level_consistency_errors(spec: Any, requests: dict[str, Any], limits: dict[str, Any],
                                 path: str) -> FieldErrors:
    """Pod-level `requests` / `limits` (at `path`) against the containers: their summed
    requests and hugepages limits must fit, and so must each container's limits."""
    errs: FieldErrors = []
    needed = _aggregate(spec, _requests_of)
    for name, raw in requests.items():
        need, have = needed.get(name), _quantity(raw)
        if need is not None and have is not None and need > have:
            errs.append((f"{path}.requests[{name}]",
                         f"Invalid value: {_fmt(raw)}: must be greater than or equal to "
                         f"aggregate container requests of {_fmt_number(need)}"))
    for name, need in _aggregate(spec, _limits_of).items():
        have = _quantity(limits[name]) if name.startswith(_HUGEPAGES) and name in limits \
            else None
        if have is not None and need > have:
            errs.append((f"{path}.limits[{name}]",
                         f"Invalid value: {_fmt(limits[name])}: must be greater than or equal "
                         f"to aggregate container limits of {_fmt_number(need)}"))
    for i, c in enumerate(spec.containers):
        for name, raw in ((c.resources.limits or {}) if c.resources else {}).items():
            if name in limits:
                mine, pod = _quantity(raw), _quantity(limits[name])
                if mine is not None and pod is not None and mine > pod:
                    errs.append((f"{path}.containers[{i}][{name}].limits",
                                 f"Invalid value: {_fmt(raw)}: must be less than or equal to "
                                 f"pod limits of {_fmt(limits[name])}"))
    return errs


class _Both:
    __slots__ = ("limits", "requests")

    def __init__(self, requests: Any, limits: Any) -> None:
        self.requests, self.limits = requests, limits


def _pod_level_defaults(spec: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pod-level (requests, limits) as the API server defaults them: hugepages limits from
    the containers', cpu / memory requests from the containers' sum, other requests from
    the pod's limits."""
    res = spec.resources
    requests, limits = dict(res.requests or {}), dict(res.limits or {})
    if not limits:
        return requests, limits
    for name, value in _aggregate(spec, _limits_of).items():
        if name.startswith(_HUGEPAGES) and name not in requests and name not in limits:
            limits[name] = value
    for name, value in _aggregate(spec, _requests_of).items():
        if name in _POD_LEVEL and name not in requests:
            requests[name] = value
    for name, value in limits.items():
        if name not in requests and (name in _POD_LEVEL or name.startswith(_HUGEPAGES)):
            requests[name] = value
    return requests, limits


def _requests_of(c: Any) -> dict[str, float]:
    try:
        return c.effective_requests()
    except ValueError:
        return {}


def _limits_of(c: Any) -> dict[str, float]:
    limits = (c.resources.limits or {}) if c.resources is not None else {}
    return {k: v for k, v in ((k, _quantity(raw)) for k, raw in limits.items())
            if v is not None}


def _aggregate(spec: Any, amounts: Callable[[Any], dict[str, float]]) -> dict[str, float]:
    """What the containers need together: app containers and sidecars add up; each plain
    init container runs alone (beside the sidecars started before it)."""
    total: dict[str, float] = {}
    for c in spec.containers:
        for k, v in amounts(c).items():
            total[k] = total.get(k, 0.0) + v
    sidecars: dict[str, float] = {}
    peak: dict[str, float] = {}
    for c in spec.init_containers or ():
        mine = amounts(c)
        if c.restart_policy == "Always":
            for k, v in mine.items():
                total[k] = total.get(k, 0.0) + v
                sidecars[k] = sidecars.get(k, 0.0) + v
            now = sidecars
        else:
            now = {**sidecars}
            for k, v in mine.items():
                now[k] = now.get(k, 0.0) + v
        for k, v in now.items():
            peak[k] = max(peak.get(k, 0.0), v)
    for k, v in peak.items():
        total[k] = max(total.get(k, 0.0), v)
    return total


def _fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
