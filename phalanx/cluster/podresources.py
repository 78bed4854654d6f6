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
"""

from __future__ import annotations

import functools
import re
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


def _quantity(raw: Any) -> float | None:
    try:
        return parse_quantity(raw)
    except ValueError:
        return None


def _page_size(name: str) -> float | None:
    return _quantity(name[len(_HUGEPAGES):])


def _fmt(raw: Any) -> str:
    return str(raw)


def container_resource_errors(resources: Any, path: str) -> FieldErrors:
    """The problems of one container's `resources` (a ResourceRequirements or None)."""
    if resources is None:
        return []
    requests: dict[str, Any] = dict(resources.requests or {})
    limits: dict[str, Any] = dict(resources.limits or {})
    errs: FieldErrors = []
    values: dict[tuple[str, str], float] = {}
    for kind, resource_list in (("limits", limits), ("requests", requests)):
        for name, raw in resource_list.items():
            at = f"{path}.{kind}[{name}]"
            why = _name_error(name)
            if why is not None:
                errs.append((at, f"Invalid value: {why}"))
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
