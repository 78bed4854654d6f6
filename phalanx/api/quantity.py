"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as plain floats.

Resources are kept in manifests exactly as users wrote them; code that does arithmetic
(fit checks, scoring, reports) converts with `parse_quantity`, which is cached because the
same few strings ("100m", "1Gi") recur across hundreds of thousands of pods.

Units: cpu in cores, memory and storage in bytes, everything else (GPUs, pods) as counts.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

# Binary (Ki = 2**10) and decimal (k = 10**3) suffixes, as in k8s.io/apimachinery.
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_DECIMAL = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_MULTIPLIER = {**_BINARY, **_DECIMAL}

# The grammar of resource.Quantity. A suffix is tried before an exponent, so "1E" is one
# exa while "1E3" is a thousand, as in Kubernetes.
QUANTITY_PATTERN = (
    r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_QUANTITY_RE = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?[0-9]+))?$"
)

Quantity = str | int | float


@lru_cache(maxsize=8192)
def _parse_str(text: str) -> float:
    m = _QUANTITY_RE.match(text.strip())
    if m is None:
        raise ValueError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(e.g. 500m, 2, 1.5, 16Gi, 1G, 1e3)"
        )
    number, suffix, exponent = m.groups()
    value = float(number)
    if exponent is not None:
        return value * 10.0 ** int(exponent)
    return value * _MULTIPLIER[suffix or ""]


def parse_quantity(value: Quantity) -> float:
    """A quantity as a float: "500m" -> 0.5, "16Gi" -> 17179869184.0, 2 -> 2.0.

    Raises ValueError (naming the bad value and the accepted forms) on bad input.
    """
    # `bool` is an int subclass; `true` is never a valid quantity.
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}: expected a number or a string like 500m")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: must be finite")
        return float(value)
    if isinstance(value, str):
        return _parse_str(value)
    raise ValueError(
        f"invalid quantity {value!r} ({type(value).__name__}): expected a number or a string"
    )


def parse_resources(resources: dict[str, Quantity] | None) -> dict[str, float]:
    """A ResourceList (`{"cpu": "500m", "memory": "1Gi"}`) as floats."""
    if not resources:
        return {}
    return {name: parse_quantity(q) for name, q in resources.items()}


# Resources whose natural display unit is bytes.
_BYTE_RESOURCES = ("memory", "storage", "ephemeral-storage")


def is_byte_resource(name: str) -> bool:
    return name in _BYTE_RESOURCES or name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    """No domain, or the kubernetes.io domain (cpu, memory, hugepages-2Mi, ...)."""
    return "/" not in name or "kubernetes.io/" in name


def overcommit_allowed(name: str) -> bool:
    """Whether a container may request less than its limit of `name` (the API server's
    rule: native resources other than hugepages; never extended ones such as GPUs)."""
    return is_native_resource(name) and not name.startswith("hugepages-")


def format_quantity(value: float, resource: str = "") -> str:
    """A compact, exact-when-possible display form, the inverse of `parse_quantity`.

    cpu: "2", "500m", "0.0005" (sub-milli values keep decimals); memory-like resources use
    the largest binary suffix that divides evenly ("16Gi", "1536Mi"), else a decimal one
    ("1G"); other resources print as numbers ("8", "0.5").
    """
    if value == 0:
        return "0"
    if resource == "cpu":
        if float(value).is_integer():
            return str(int(value))
        milli = value * 1000
        if abs(milli - round(milli)) < 1e-6:
            return f"{int(round(milli))}m"
        return _plain(value)
    if is_byte_resource(resource):
        if float(value).is_integer():
            ivalue = int(value)
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                unit = int(_BINARY[suffix])
                if ivalue % unit == 0:
                    return f"{ivalue // unit}{suffix}"
            for suffix in ("E", "P", "T", "G", "M", "k"):
                unit = int(_DECIMAL[suffix])
                if ivalue % unit == 0:
                    return f"{ivalue // unit}{suffix}"
            return str(ivalue)
        return _plain(value)
    return _plain(value)


def format_resources(resources: dict[str, float]) -> str:
    """`cpu=2,memory=16Gi,nvidia.com/gpu=8` for tables and messages."""
    return ",".join(f"{k}={format_quantity(v, k)}" for k, v in resources.items())


def _plain(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"
