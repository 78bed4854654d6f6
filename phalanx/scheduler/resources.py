"""Resource amounts as the scheduler counts them (kube-scheduler's resourcehelper.PodRequests).

The API layer parses quantities to floats (cpu in cores). The scheduler keeps cpu in
millicores so fit checks on sums of "100m" requests are exact (0.1 + 0.2 != 0.3 in floats,
100 + 200 == 300); memory and storage are bytes, everything else (pods, `nvidia.com/gpu`, any
extended resource) a plain count. Like resource.Quantity's MilliValue()/Value(), fractions
round up, so every amount is a whole number and the integer scorers stay exact.

What a pod asks for, as kube-scheduler computes it: the app containers add up; each init
container runs alone next to the sidecars started before it (init containers with
`restartPolicy: Always`), which also run for the pod's whole life; pod-level requests
(cpu, memory, hugepages) replace the container sum for what they name; overhead adds on top.
Only cpu, memory, ephemeral-storage and "scalar" resources (extended, hugepages,
`*kubernetes.io/*`, attachable volumes) are counted: kube ignores any other name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from phalanx.api.quantity import parse_quantity

if TYPE_CHECKING:
    from phalanx.api.core import Node, Pod
    from phalanx.api.pod import Container, PodSpec

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
GPU = "nvidia.com/gpu"
HUGEPAGES_PREFIX = "hugepages-"

# Requests kube-scheduler assumes for scoring per container that asks for none (so
# best-effort pods still spread): 100m cpu, 200Mi memory.
DEFAULT_MILLI_CPU_REQUEST = 100.0
DEFAULT_MEMORY_REQUEST = 200.0 * 1024 * 1024
_NON_MISSING = {CPU: DEFAULT_MILLI_CPU_REQUEST / 1000.0, MEMORY: DEFAULT_MEMORY_REQUEST}

_BINARY = (
    ("Ei", 2.0**60),
    ("Pi", 2.0**50),
    ("Ti", 2.0**40),
    ("Gi", 2.0**30),
    ("Mi", 2.0**20),
    ("Ki", 2.0**10),
)


# --- resource names (k8s.io/kubernetes/pkg/apis/core/v1/helper) ----------------------------


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_native(name: str) -> bool:
    return "/" not in name or is_prefixed_native(name)


def is_extended(name: str) -> bool:
    """Extended resources (`example.com/foo`): a domain outside kubernetes.io."""
    return not is_native(name) and not name.startswith("requests.")


def is_scalar(name: str) -> bool:
    """Counted as a plain number by kube-scheduler (everything but cpu/memory/storage)."""
    return (
        is_extended(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native(name)
        or name.startswith("attachable-volumes-")
    )


def is_counted(name: str) -> bool:
    """Whether kube-scheduler counts a requested resource at all (fit and scoring)."""
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(name)


def _pod_level_supported(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


# --- units -------------------------------------------------------------------------------


def _whole(v: float) -> float:
    # Round away float noise first (0.1 * 1000 = 100.00000000000001), then up like Quantity.
    return float(math.ceil(round(v, 6)))


def to_scheduler_units(amounts: Mapping[str, float]) -> dict[str, float]:
    """API floats -> scheduler units (cpu cores -> millicores), rounded up as
    resource.Quantity's MilliValue()/Value() do. Zero amounts are dropped."""
    out: dict[str, float] = {}
    for name, v in amounts.items():
        v = _whole(v * 1000.0 if name == CPU else v)
        if v:
            out[name] = v
    return out


# --- what a pod asks for -----------------------------------------------------------------


def _add(into: dict[str, float], amounts: Mapping[str, float]) -> None:
    for k, v in amounts.items():
        into[k] = into.get(k, 0.0) + v


def _keep_max(into: dict[str, float], amounts: Mapping[str, float]) -> None:
    for k, v in amounts.items():
        if k not in into or v > into[k]:
            into[k] = v


def _with_defaults(
    requests: dict[str, float], non_missing: Mapping[str, float]
) -> dict[str, float]:
    """A container's requests, with `non_missing` for the resources it does not name at all
    (a request explicitly set to 0 stays 0)."""
    if all(k in requests for k in non_missing):
        return requests
    out = dict(requests)
    for k, v in non_missing.items():
        if k not in out:
            out[k] = v
    return out


def _containers(
    containers: Iterable[Container], init: Iterable[Container], non_missing: Mapping[str, float]
) -> dict[str, float]:
    """kube's AggregateContainerRequests (KEP-753 sidecar formula)."""
    reqs: dict[str, float] = {}
    for c in containers:
        _add(reqs, _with_defaults(c.effective_requests(), non_missing))
    sidecars: dict[str, float] = {}
    init_max: dict[str, float] = {}
    for c in init:
        creq = _with_defaults(c.effective_requests(), non_missing)
        if c.restart_policy == "Always":
            _add(reqs, creq)
            _add(sidecars, creq)
            peak = dict(sidecars)
        else:
            peak = dict(creq)
            _add(peak, sidecars)
        _keep_max(init_max, peak)
    _keep_max(reqs, init_max)
    return reqs


def _pod_level_requests(spec: PodSpec) -> dict[str, float]:
    """spec.resources.requests of supported resources, as the API server defaults them
    (from the container sum, then from pod-level limits, when only limits are given)."""
    res = spec.resources
    if res is None:
        return {}
    reqs = {k: parse_quantity(v) for k, v in (res.requests or {}).items()}
    if res.limits:
        aggregate = _containers(spec.containers, spec.init_containers or (), {})
        for k in (CPU, MEMORY):
            if k not in reqs and k in aggregate:
                reqs[k] = aggregate[k]
        for k, v in res.limits.items():
            if k not in reqs and _pod_level_supported(k):
                reqs[k] = parse_quantity(v)
    return {k: v for k, v in reqs.items() if _pod_level_supported(k)}


def _requests(spec: PodSpec, non_missing: Mapping[str, float]) -> dict[str, float]:
    reqs = _containers(spec.containers, spec.init_containers or (), non_missing)
    pod_level = _pod_level_requests(spec)
    reqs.update(pod_level)
    if spec.overhead:
        _add(reqs, {k: parse_quantity(v) for k, v in spec.overhead.items()})
    return {k: v for k, v in to_scheduler_units(reqs).items() if is_counted(k)}


def pod_requests(pod: Pod) -> dict[str, float]:
    """What a pod asks a node for (kube's PodRequests), in scheduler units, without `pods`."""
    spec = pod.spec
    if not spec.init_containers and spec.resources is None and not spec.overhead:
        # The common shape: a sum over app containers (total_requests is cached on the spec).
        return {k: v for k, v in to_scheduler_units(spec.total_requests).items() if is_counted(k)}
    return _requests(spec, {})


def non_zero_requests(requests: Mapping[str, float], pod: Pod | None = None) -> dict[str, float]:
    """Requests as scoring counts them (kube's NonZeroRequested): every container that names
    no cpu (memory) request counts 100m (200Mi). With pod-level requests set, only resources
    named neither at pod nor at container level get the defaults. Without `pod`, the
    defaults apply once, to a pod-wide zero."""
    out = dict(requests)
    if pod is None:
        if not out.get(CPU):
            out[CPU] = DEFAULT_MILLI_CPU_REQUEST
        if not out.get(MEMORY):
            out[MEMORY] = DEFAULT_MEMORY_REQUEST
        return out
    spec = pod.spec
    if (
        not spec.init_containers
        and spec.resources is None
        and all(_names_cpu_and_memory(c) for c in spec.containers)
    ):
        return out  # the common shape: nothing to default
    non_missing: Mapping[str, float] = _NON_MISSING
    pod_level = _pod_level_requests(spec)
    if pod_level:
        named = set(pod_level) | set(spec.overhead or ())
        for c in list(spec.containers) + list(spec.init_containers or ()):
            named.update(c.effective_requests())
        non_missing = {k: v for k, v in _NON_MISSING.items() if k not in named}
        if not non_missing:
            return out
    with_defaults = _requests(spec, non_missing)
    for k in (CPU, MEMORY):
        v = with_defaults.get(k, 0.0)
        if v:
            out[k] = v
        else:
            out.pop(k, None)
    return out


def _names_cpu_and_memory(c: Container) -> bool:
    res = c.resources
    if res is None:
        return False
    named = (res.requests or {}).keys() | (res.limits or {}).keys()
    return CPU in named and MEMORY in named


def node_allocatable(node: Node) -> dict[str, float]:
    """status.allocatable (capacity when unset) in scheduler units."""
    return to_scheduler_units(node.allocatable_resources())


def format_amount(value: float, resource: str) -> str:
    """Scheduler units back to what a user reads in an Event ("1500m", "16Gi", "8")."""
    if resource == CPU:
        return f"{value / 1000:g}" if value % 1000 == 0 else f"{value:g}m"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX):
        for suffix, unit in _BINARY:
            if value >= unit and value % unit == 0:
                return f"{value / unit:g}{suffix}"
    return f"{value:g}"
