"""Autoscaling metrics of a PodCliqueSet, checked as kube-apiserver checks an HPA's.

A clique's `autoScalingConfig.metrics` and a scaling group's `scaleConfig.metrics` are copied
into the HorizontalPodAutoscaler the operator creates (operator/hpa.py). Grove's CRD types
them as autoscaling/v2 MetricSpec, so the API server refuses an unknown field there, and the
HPA's own validation refuses the rest when Grove creates it. Here both happen at admission,
with the field named (phalanx.cluster.hpavalidation): a metric no HPA would accept, or a
field it would ignore, never reaches one.
"""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.hpavalidation import metric_errors

FieldErrors = list[tuple[str, str]]

_T = "spec.template"


def metrics_errors(pcs: PodCliqueSet) -> FieldErrors:
    errs: FieldErrors = []
    t = pcs.spec.template
    for i, c in enumerate(t.cliques):
        cfg = c.spec.auto_scaling_config
        for j, metric in enumerate((cfg.metrics or ()) if cfg is not None else ()):
            errs.extend(metric_errors(metric, f"{_T}.cliques[{i}].spec.autoScalingConfig"
                                              f".metrics[{j}]"))
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        cfg = g.scale_config
        for j, metric in enumerate((cfg.metrics or ()) if cfg is not None else ()):
            errs.extend(metric_errors(metric, f"{_T}.podCliqueScalingGroups[{i}].scaleConfig"
                                              f".metrics[{j}]"))
    return errs
