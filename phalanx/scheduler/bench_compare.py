"""`phalanx bench scheduler --spread F --pairs N`: spread against no spread, in alternating pairs.

Both arms schedule the same gangs (make_gangs draws the spread choice from its own random
stream); only the constraints differ. Pair k runs the spread arm first when k is odd and the
plain arm first when k is even, so a load that rises or falls over the session does not favour
one arm. Per pair, the ratios spread/plain; over the pairs, each figure's median and range.

Wall-clock pods/s moves with whatever else the machine runs. Each run also records its
run-queue wait (bench.thread_schedstat): `pods_per_second_uncontended` takes that wait out,
so the comparison can say whether a gap is the scheduler's or the machine's.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from phalanx.scheduler.bench import BenchConfig, run_scheduler_bench, write_result

FIGURES = ("pods_per_second", "pods_per_second_uncontended", "cpu_us_per_pod", "cycle_cpu_us_per_attempt",
           "runqueue_wait_seconds", "blocked_seconds", "gc_seconds_scheduling", "gc_cpu_seconds_scheduling")
RATIOS = ("pods_per_second", "pods_per_second_uncontended", "cpu_us_per_pod")


def _summary(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values), "all": values}


def _arm(runs: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": names}
    for key in FIGURES:
        values = [r[key] for r in runs if key in r]
        if len(values) == len(runs):
            out[key] = _summary(values)
    out["loadavg_before_after"] = [r["loadavg_before_after"] for r in runs]
    out["pods_with_spread"] = sorted({r["pods_with_spread"] for r in runs})
    out["spread_max_zone_skew"] = max(r["spread_max_zone_skew"] for r in runs)
    out["all_bound"] = all(r["pods_bound"] == r["config"]["pods"] for r in runs)
    return out


def run_spread_pairs(cfg: BenchConfig, pairs: int, out_dir: Path, tag: str,
                     progress: Callable[[str], None] = lambda _: None) -> tuple[dict[str, Any], Path]:
    """Run `pairs` alternating pairs of cfg (spread) and cfg without spread; write every run
    and the comparison under out_dir. Returns the comparison and its path."""
    if cfg.spread_fraction <= 0:
        raise ValueError("--pairs compares spread with no spread: give --spread above 0")
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    arms = {"spread": cfg, "plain": replace(cfg, spread_fraction=0.0)}
    base = f"scheduler-{cfg.nodes}n-{cfg.pods}p-{tag}"
    runs: dict[str, list[dict[str, Any]]] = {"spread": [], "plain": []}
    names: dict[str, list[str]] = {"spread": [], "plain": []}
    path = out_dir / f"{base}-spread-vs-plain.json"
    comparison: dict[str, Any] = {}
    for k in range(1, pairs + 1):
        order = ("spread", "plain") if k % 2 == 1 else ("plain", "spread")
        for arm in order:
            result = run_scheduler_bench(arms[arm])
            result.pop("profile", None)
            name = f"{base}-{arm}-run{k}"
            write_result(result, out_dir, name)
            runs[arm].append(result)
            names[arm].append(f"{name}.json")
            progress(f"  pair {k} {arm}: {result['pods_per_second']:.0f} pods/s "
                     f"({result.get('pods_per_second_uncontended', 0):.0f} uncontended), "
                     f"{result['cpu_us_per_pod']:.0f} us/pod CPU, run-queue wait "
                     f"{result.get('runqueue_wait_seconds', 0):.1f} s")
        # Written after every pair: a session cut short keeps the pairs it finished.
        comparison = compare(runs, names, pairs_planned=pairs)
        path = write_result(comparison, out_dir, f"{base}-spread-vs-plain")
    return comparison, path


def compare(runs: dict[str, list[dict[str, Any]]], names: dict[str, list[str]],
            pairs_planned: int | None = None) -> dict[str, Any]:
    """The comparison of finished pairs: run k of each arm is pair k (odd: spread first)."""
    rows = []
    for k, (s, p) in enumerate(zip(runs["spread"], runs["plain"]), start=1):
        row: dict[str, Any] = {"pair": k, "order": "spread first" if k % 2 == 1 else "plain first"}
        for key in RATIOS:
            if key in s and key in p:
                row[f"{key}_ratio"] = round(s[key] / p[key], 3)
        rows.append(row)
    cfg = runs["spread"][0]["config"]
    comparison: dict[str, Any] = {
        "benchmark": "scheduler-spread-vs-plain",
        "command": f"phalanx bench scheduler --nodes {cfg['nodes']} --pods {cfg['pods']} "
                   f"--spread {cfg['spread_fraction']} --pairs {pairs_planned or len(rows)}",
        "pairs_done": len(rows),
        "order": "alternating: odd pairs spread first, even pairs plain first",
        "spread": _arm(runs["spread"][: len(rows)], names["spread"][: len(rows)]),
        "plain": _arm(runs["plain"][: len(rows)], names["plain"][: len(rows)]),
        "pairs": rows,
    }
    for key in RATIOS:
        values = [r[f"{key}_ratio"] for r in rows if f"{key}_ratio" in r]
        if values:
            comparison[f"{key}_ratio"] = _summary(values)
    comparison["cpus"] = runs["spread"][0]["cpus"]
    return comparison
