"""Autoscaling bounds of a PodCliqueSet, as Grove's validating webhook checks them
(operator/internal/webhook/admission/pcs/validation/podcliqueset.go validateScaleConfig,
validatePodCliqueSpec and validatePodCliqueScalingGroupConfigs), with Grove's messages:

- a clique's `autoScalingConfig.minReplicas` not below its `minAvailable` (an HPA scaling it
  lower would breach minAvailable and end in gang termination), `maxReplicas` not below
  `minReplicas` nor below the clique's `replicas`;
- a scaling group's `scaleConfig.minReplicas` not below its `minAvailable`;
- no `autoScalingConfig` on a clique that belongs to a scaling group (the group scales it).

One rule is Phalanx's own: a scaling group's `scaleConfig.maxReplicas` not below its
`minReplicas`. Grove does not check it, and the HorizontalPodAutoscaler made from it is then
refused by the API server; here the field is named at admission instead.
Metrics are checked in admission_metrics.py. Runs on the defaulted object (minReplicas
defaults to the template's replicas).
"""

from __future__ import annotations

from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.podvalidation.fielderrors import FieldErrors, invalid, required

_T = "spec.template"
IN_GROUP = ("AutoScalingConfig is not allowed to be defined for PodClique that is part of "
            "scaling group")


def autoscaling_errors(pcs: PodCliqueSet) -> FieldErrors:
    t = pcs.spec.template
    errs: FieldErrors = []
    for i, c in enumerate(t.cliques):
        cfg = c.spec.auto_scaling_config
        if cfg is None:
            continue
        at = f"{_T}.cliques[{i}].spec.autoScalingConfig"
        floor = c.spec.min_available if c.spec.min_available is not None else c.spec.replicas
        if cfg.min_replicas is None:
            errs.append(required(f"{at}.minReplicas", "field is required"))
        else:
            if cfg.min_replicas < floor:
                errs.append(invalid(f"{at}.minReplicas", cfg.min_replicas,
                                    "must be greater than or equal to "
                                    "podCliqueSpec.minAvailable"))
            if cfg.max_replicas < cfg.min_replicas:
                errs.append(invalid(f"{at}.maxReplicas", cfg.max_replicas,
                                    "must be greater than or equal to "
                                    "podCliqueSpec.minReplicas"))
        if cfg.max_replicas < c.spec.replicas:
            errs.append(invalid(f"{at}.maxReplicas", cfg.max_replicas,
                                "must be greater than or equal to replicas"))
    grouped: list[str] = []
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        grouped += [n for n in g.clique_names if n not in grouped]
        cfg = g.scale_config
        if cfg is None:
            continue
        at = f"{_T}.podCliqueScalingGroups[{i}].scaleConfig"
        if cfg.min_replicas is not None and g.min_available is not None \
                and cfg.min_replicas < g.min_available:
            errs.append(invalid(f"{at}.minReplicas", cfg.min_replicas,
                                "scaleConfig.minReplicas must be greater than or equal to "
                                "minAvailable"))
        if cfg.min_replicas is not None and cfg.max_replicas < cfg.min_replicas:
            errs.append(invalid(f"{at}.maxReplicas", cfg.max_replicas,
                                "scaleConfig.maxReplicas must be greater than or equal to "
                                "scaleConfig.minReplicas (the HorizontalPodAutoscaler's "
                                "bounds)"))
    for c in t.cliques:
        if c.name in grouped and c.spec.auto_scaling_config is not None:
            errs.append(invalid(f"{_T}.podCliqueScalingGroups", c.name, IN_GROUP))
    return errs
