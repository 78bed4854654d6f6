"""Small formatting helpers shared by the terminal tables, the HTML report and `explain`."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SUFFIX = re.compile(r"^(.*?)(\d+)$")


def fmt_duration(seconds: float | None) -> str:
    """Compact kubectl-style durations: 850ms, 12s, 1m30s, 2h5m, 3d4h. None -> "-"."""
    if seconds is None:
        return "-"
    if seconds < 0:
        return "-" + fmt_duration(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms" if seconds > 0 else "0s"
    if seconds < 10:
        text = f"{seconds:.1f}".rstrip("0").rstrip(".")
        return f"{text}s"
    s = int(round(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    return f"{s}s"


def hostlist(names: Iterable[str]) -> str:
    """Compress node names the way Slurm does: node-003,node-004,node-005,gpu-1 ->
    "gpu-1,node-[003-005]". Keeps zero padding; order is by prefix then number."""
    by_prefix: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in sorted(set(names)):
        m = _SUFFIX.match(name)
        if m is None:
            plain.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        by_prefix.setdefault((prefix, len(digits)), []).append(int(digits))
    parts: list[str] = list(plain)
    for (prefix, width), numbers in sorted(by_prefix.items()):
        numbers.sort()
        ranges: list[str] = []
        start = prev = numbers[0]
        for n in numbers[1:] + [None]:  # type: ignore[list-item]
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(
                f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}"
            )
            if n is not None:
                start = prev = n
        if len(ranges) == 1 and "-" not in ranges[0]:
            parts.append(f"{prefix}{ranges[0]}")
        else:
            parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(sorted(parts))


def fmt_bytes(n: float) -> str:
    for unit in ("", "Ki", "Mi", "Gi", "Ti", "Pi"):
        if abs(n) < 1024 or unit == "Pi":
            return f"{n:.0f}{unit}" if unit == "" or n == int(n) else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.0f}"


def fmt_cores(n: float) -> str:
    return f"{n:g}" if n == int(n) else f"{n * 1000:.0f}m"


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of a non-empty list, else None."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(-(-q * len(ordered) // 100)))  # ceil without floats drifting
    return ordered[min(rank, len(ordered)) - 1]


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"
