"""Benchmark results: percentiles, JSON files in bench/results/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from phalanx.report.format import percentile


def percentiles(values: list[float], digits: int = 4) -> dict[str, float]:
    """p50/p90/p99/max (nearest-rank, as the run report computes them; zeros when empty)."""
    if not values:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    return {name: round(percentile(values, q) or 0.0, digits)
            for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))}


def write_result(result: dict[str, Any], out_dir: Path, name: str) -> Path:
    """`<out_dir>/<name>.json`, pretty-printed; a "profile" entry goes to `<name>.profile.txt`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = dict(result)
    profile = data.pop("profile", None)
    path = out_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
    if profile:
        path.with_suffix(".profile.txt").write_text(profile)
    return path
