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
    t = pcs.spec.template
    configs = [(f"{_T}.cliques[{i}].spec.autoScalingConfig", c.spec.auto_scaling_config)
               for i, c in enumerate(t.cliques)]
    configs += [(f"{_T}.podCliqueScalingGroups[{i}].scaleConfig", g.scale_config)
                for i, g in enumerate(t.pod_clique_scaling_groups or ())]
    return [e for at, cfg in configs if cfg is not None
            for j, metric in enumerate(cfg.metrics or ())
            for e in metric_errors(metric, f"{at}.metrics[{j}]")]
