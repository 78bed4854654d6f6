"""Resource amounts as the scheduler counts them.

The API layer parses quantities to floats (cpu in cores). The scheduler keeps cpu in
millicores so fit checks on sums of "100m" requests are exact (0.1 + 0.2 != 0.3 in floats,
100 + 200 == 300); memory and storage are bytes, everything else (pods, `nvidia.com/gpu`, any
extended resource) a plain count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phalanx.api.core import Node, Pod

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
GPU = "nvidia.com/gpu"

# Requests kube-scheduler assumes for scoring when a pod asks for none (so best-effort
# pods still spread): 100m cpu, 200Mi memory. (Kube applies them per container.)
DEFAULT_MILLI_CPU_REQUEST = 100.0
DEFAULT_MEMORY_REQUEST = 200.0 * 1024 * 1024

_BINARY = (("Ei", 2.0**60), ("Pi", 2.0**50), ("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10))


def to_scheduler_units(amounts: Mapping[str, float]) -> dict[str, float]:
    """API floats -> scheduler units (cpu cores -> millicores, rounded like resource.Quantity)."""
    out: dict[str, float] = {}
    for name, v in amounts.items():
        if name == CPU:
            v = float(round(v * 1000.0, 6))
        if v:
            out[name] = v
    return out


def pod_requests(pod: Pod) -> dict[str, float]:
    """What a pod asks a node for (kube's resourcehelper.PodRequests), without `pods`."""
    return to_scheduler_units(pod.spec.total_requests)


def node_allocatable(node: Node) -> dict[str, float]:
    """status.allocatable (capacity when unset) in scheduler units."""
    return to_scheduler_units(node.allocatable_resources())


def non_zero_requests(requests: Mapping[str, float]) -> dict[str, float]:
    """Requests with kube-scheduler's scoring defaults for unset cpu/memory."""
    out = dict(requests)
    if not out.get(CPU):
        out[CPU] = DEFAULT_MILLI_CPU_REQUEST
    if not out.get(MEMORY):
        out[MEMORY] = DEFAULT_MEMORY_REQUEST
    return out


def format_amount(value: float, resource: str) -> str:
    """Scheduler units back to what a user reads in an Event ("1500m", "16Gi", "8")."""
    if resource == CPU:
        return f"{value / 1000:g}" if value % 1000 == 0 else f"{value:g}m"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for suffix, unit in _BINARY:
            if value >= unit and value % unit == 0:
                return f"{value / unit:g}{suffix}"
    return f"{value:g}"
