"""Resource quantities as the scheduler counts them.

Quantities become floats in canonical units: cpu in millicores, memory and storage in bytes,
everything else (pods, `nvidia.com/gpu`, any extended resource) as a plain count. Floats hold
integers exactly up to 2**53, far beyond any node, and let NumPy compare whole columns at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
GPU = "nvidia.com/gpu"

# Requests kube-scheduler assumes for scoring when a container asks for nothing
# (so best-effort pods still spread): 100m cpu, 200Mi memory.
DEFAULT_MILLI_CPU_REQUEST = 100.0
DEFAULT_MEMORY_REQUEST = 200.0 * 1024 * 1024

_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_cache: dict[tuple[str, str], float] = {}


def parse_quantity(value: Any, resource: str = "") -> float:
    """A Kubernetes quantity ("500m", "2", "16Gi", 4) in canonical units for `resource`.

    cpu comes back in millicores; everything else in base units. Raises ValueError with the
    offending text when the quantity is malformed.
    """
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r} for {resource or 'resource'}")
    milli = resource == CPU
    if isinstance(value, int | float):
        return float(value) * (1000.0 if milli else 1.0)
    text = str(value).strip()
    key = (text, CPU if milli else "")
    hit = _cache.get(key)
    if hit is not None:
        return hit
    m = _QUANTITY.match(text)
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {text!r} for {resource or 'resource'}")
    try:
        number = Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation as exc:
        raise ValueError(f"invalid quantity {text!r} for {resource or 'resource'}") from exc
    if milli:
        number *= 1000
    out = float(number)
    if len(_cache) < 65536:
        _cache[key] = out
    return out


def format_quantity(value: float, resource: str) -> str:
    """Canonical units back to something a human reads in an Event ("1500m", "16Gi", "8")."""
    if resource == CPU:
        return f"{value / 1000:g}" if value % 1000 == 0 else f"{value:g}m"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = float(_SUFFIX[suffix])
            if value >= unit and value % unit == 0:
                return f"{value / unit:g}{suffix}"
    return f"{value:g}"


def parse_resource_list(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """A ResourceList (name -> quantity) in canonical units."""
    if not resources:
        return {}
    return {name: parse_quantity(q, name) for name, q in resources.items()}


def _container_requests(container: Any) -> dict[str, float]:
    res = getattr(container, "resources", None)
    if res is None:
        return {}
    requests = getattr(res, "requests", None) or {}
    if not requests:
        # Like the API server's defaulting: limits stand in for missing requests.
        requests = getattr(res, "limits", None) or {}
    return parse_resource_list(requests)


def pod_requests(pod: Any) -> dict[str, float]:
    """What a pod asks a node for, as kube-scheduler computes it.

    max(sum of app containers (+ restartable init sidecars), largest init container) plus
    pod overhead. `pods` is not included (the snapshot counts pods separately).
    """
    spec = pod.spec
    total: dict[str, float] = {}
    for c in getattr(spec, "containers", None) or ():
        for name, v in _container_requests(c).items():
            total[name] = total.get(name, 0.0) + v
    sidecars: dict[str, float] = {}
    for c in getattr(spec, "init_containers", None) or ():
        req = _container_requests(c)
        if getattr(c, "restart_policy", None) == "Always":
            # Sidecars run alongside the app containers and after them in init order.
            for name, v in req.items():
                sidecars[name] = sidecars.get(name, 0.0) + v
                total[name] = total.get(name, 0.0) + v
            continue
        for name, v in req.items():
            # An init container runs next to the sidecars started before it.
            need = v + sidecars.get(name, 0.0)
            if need > total.get(name, 0.0):
                total[name] = need
    for name, v in parse_resource_list(getattr(spec, "overhead", None)).items():
        total[name] = total.get(name, 0.0) + v
    return {k: v for k, v in total.items() if v}


def non_zero_requests(requests: Mapping[str, float]) -> dict[str, float]:
    """Requests with kube-scheduler's scoring defaults for unset cpu/memory."""
    out = dict(requests)
    if not out.get(CPU):
        out[CPU] = DEFAULT_MILLI_CPU_REQUEST
    if not out.get(MEMORY):
        out[MEMORY] = DEFAULT_MEMORY_REQUEST
    return out
