"""The kubediff report: agreement counts (overall, per feature, per kind of difference) and
every disagreement with its seed, as JSON for bench/results/kubediff-<cases>.json.

A disagreement is reproduced alone with `phalanx bench kubediff --cases 1 --seed <seed>
--features <the run's features>` (the case of a seed depends only on the seed and the
features; node and pod names only on top of that).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from phalanx.bench.results import percentiles

from . import features as F
from .compare import BLOCKING, MessageError, parse_message
from .run import CaseRun

CASES_IN_FULL = 100  # disagreements recorded with their whole case (the rest: seed only)
EXAMPLES = 3  # examples kept per kind of non-blocking difference


def _outcome_kind(run: CaseRun) -> str:
    if run.error or run.kube is None or run.phalanx is None:
        return "error"
    if run.kube.scheduled and run.phalanx.scheduled:
        return "both_scheduled"
    if not run.kube.scheduled and not run.phalanx.scheduled:
        return "both_unschedulable"
    return "only_kube_scheduled" if run.kube.scheduled else "only_phalanx_scheduled"


def _node_check_kind(run: CaseRun) -> str:
    if not run.node_check:
        return "not_applicable"
    return run.node_check.split(":", 1)[0]


def build_report(runs: list[CaseRun], *, seed: int, features: tuple[str, ...],
                 seconds: float = 0.0, versions: dict[str, str] | None = None,
                 machine: dict[str, Any] | None = None) -> dict[str, Any]:
    agree = [r for r in runs if r.agrees]
    errors = [r for r in runs if r.error]
    disagree = [r for r in runs if not r.agrees and not r.error]
    by_feature: dict[str, dict[str, int]] = {}
    for f in F.ALL_FEATURES:
        using = [r for r in runs if f in r.case.uses]
        if f in features or using:
            by_feature[f] = {"cases": len(using), "agree": sum(r.agrees for r in using),
                             "disagree": sum(not r.agrees for r in using)}
    kinds: Counter[str] = Counter()
    examples: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        for d in {d.kind: d for d in r.differences}.values():
            kinds[d.kind] += 1
            if not d.blocking and len(examples.setdefault(d.kind, [])) < EXAMPLES:
                examples[d.kind].append({"seed": r.case.seed, "detail": d.detail})
    reasons: Counter[str] = Counter()  # cases whose kube message gives the reason
    prefilter: Counter[str] = Counter()  # ... or the PreFilter rejection
    for r in runs:
        if r.kube is not None and not r.kube.scheduled:
            try:
                parsed = parse_message(r.kube.message)
            except MessageError:
                continue
            reasons.update(parsed.reasons.keys())
            if parsed.prefilter:
                prefilter[re.sub(r'"[^"]*"', '"..."', parsed.prefilter)] += 1
    failed = disagree + errors
    return {
        "command": (f"phalanx bench kubediff --cases {len(runs)} --seed {seed} "
                    f"--features {','.join(features)}"),
        "seed": seed,
        "features": list(features),
        "cases": len(runs),
        "summary": {"agree": len(agree), "disagree": len(disagree), "errors": len(errors),
                    "agreement": round(len(agree) / len(runs), 4) if runs else None},
        "outcomes": dict(sorted(Counter(_outcome_kind(r) for r in runs).items())),
        "node_check": dict(sorted(Counter(_node_check_kind(r) for r in runs).items())),
        "by_feature": by_feature,
        "differences": {k: {"cases": n, "blocking": k in BLOCKING}
                        for k, n in sorted(kinds.items())},
        "non_blocking_examples": examples,
        "kube_reasons_seen": _by_count(reasons),
        "kube_prefilter_seen": _by_count(prefilter),
        "seconds": round(seconds, 2),
        "seconds_per_case": percentiles([r.seconds for r in runs], 3),
        "versions": versions or {},
        "machine": machine or {},
        "disagreements": [r.to_dict(with_case=i < CASES_IN_FULL) for i, r in enumerate(failed)],
    }


def _by_count(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def write_report(report: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(path)
    return path


def summary_lines(report: dict[str, Any]) -> list[str]:
    """A few lines for the terminal."""
    s = report["summary"]
    lines = [f"{report['cases']} cases: {s['agree']} agree, {s['disagree']} disagree, "
             f"{s['errors']} errors (features: {', '.join(report['features'])})",
             "outcomes: " + ", ".join(f"{k} {v}" for k, v in report["outcomes"].items()),
             "phalanx's node, re-checked by kube-scheduler: "
             + ", ".join(f"{k} {v}" for k, v in report["node_check"].items())]
    for f, c in report["by_feature"].items():
        lines.append(f"  {f:<17} {c['agree']:>5}/{c['cases']:<5} agree")
    for kind, c in report["differences"].items():
        tag = "" if c["blocking"] else " (recorded, not counted as a disagreement)"
        lines.append(f"  difference {kind}: {c['cases']} cases{tag}")
    seeds = [d["seed"] for d in report["disagreements"]]
    if seeds:
        more = f" ... (+{len(seeds) - 20})" if len(seeds) > 20 else ""
        lines.append("disagreeing seeds: " + ", ".join(map(str, seeds[:20])) + more)
    return lines
