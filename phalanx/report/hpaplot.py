"""Replicas over time of each autoscaled PodClique or scaling group (issue 24), from the
run's object history: the target's `spec.replicas` (what the embedded HPA controller, a
`scale` step or the template set) and the metric value Scenario `metric` steps gave its
HorizontalPodAutoscaler (phalanx.sim.hpa)."""

from __future__ import annotations

from phalanx.sim.hpa import ANNOTATION_METRIC
from phalanx.sim.record import RunRecord

from .stepplot import StepLine, add_point, step_lines_svg

Series = list[tuple[float, int]]  # (t, replicas)


def _targets(record: RunRecord) -> dict[str, tuple[str, str]]:
    """HPA key -> (target kind, target key), from every HPA version in the run."""
    out: dict[str, tuple[str, str]] = {}
    hpas = [(c.key, c.object) for c in record.history
            if c.kind == "HorizontalPodAutoscaler" and c.object is not None]
    hpas += [(f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}", o)
             for o in record.objects.get("HorizontalPodAutoscaler", [])]
    for key, obj in hpas:
        ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
        ns = key.partition("/")[0]
        if ref.get("kind") and ref.get("name"):
            out[key] = (ref["kind"], f"{ns}/{ref['name']}")
    return out


def replica_series(record: RunRecord) -> dict[str, Series]:
    """`<kind> <name>` of each HPA's target -> its replicas after every change."""
    targets = {t: hpa for hpa, t in _targets(record).items()}
    out: dict[str, Series] = {}
    for change in record.history:
        hpa = targets.get((change.kind, change.key))
        if hpa is None or change.object is None:
            continue
        replicas = (change.object.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int):
            continue
        add_point(out.setdefault(f"{change.kind} {change.key.partition('/')[2]}", []),
                  (change.t, replicas))
    return out


def metric_changes(record: RunRecord) -> dict[str, list[tuple[float, str]]]:
    """HPA name -> (t, metric value) each time a `metric` step set it."""
    out: dict[str, list[tuple[float, str]]] = {}
    for change in record.history:
        if change.kind != "HorizontalPodAutoscaler" or change.object is None:
            continue
        value = (change.object.get("metadata", {}).get("annotations") or {}).get(
            ANNOTATION_METRIC)
        points = out.setdefault(change.key.partition("/")[2], [])
        if value is not None and (not points or points[-1][1] != value):
            points.append((change.t, value))
    return {k: v for k, v in out.items() if v}


def replicas_svg(record: RunRecord, series: dict[str, Series] | None = None) -> str:
    """One step line per autoscaled target."""
    series = replica_series(record) if series is None else series
    lines = [StepLine(name, points, f"C{i % 10}")
             for i, (name, points) in enumerate(sorted(series.items()))]
    return step_lines_svg(record, lines, ylabel="replicas", salt="autoscaling", height=3.2,
                          label="replicas of autoscaled objects over time")
