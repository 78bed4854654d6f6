"""Labels and annotations of a PodCliqueSet and of what its template gives the objects the
operator creates, checked as Grove's webhook and the API server check them:

- the PodCliqueSet's own `metadata.labels` / `metadata.annotations` (Grove's
  ValidateObjectMeta), whose labels and annotations are mirrored onto its PodGangs;
- each clique's `labels` (metav1validation.ValidateLabels) and `annotations`
  (apivalidation.ValidateAnnotations), which go onto its PodCliques and their pods;
- each scaling group's `annotations`, which go onto its PodCliqueScalingGroups (Grove does
  not check these at admission; the API server then refuses the PodCliqueScalingGroup, so
  the field is named here instead).

And the annotation keys the operator itself writes on PodCliques and PodCliqueScalingGroups
(`naming.RESERVED_ANNOTATIONS`, all `phalanx.dev/`) are refused in a template: the operator
would overwrite or drop them, and its own readers must never take a value a user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.metavalidation import annotations_errors, labels_errors
from phalanx.cluster.podvalidation.fielderrors import FieldErrors, forbidden

from .naming import RESERVED_ANNOTATIONS

_T = "spec.template"


def _reserved(annotations: Mapping[str, str] | None, path: str, kind: str) -> FieldErrors:
    return [forbidden(f"{path}[{key}]", f"the operator sets this annotation on the {kind} "
                                        "it creates; remove it from the template")
            for key in annotations or () if key in RESERVED_ANNOTATIONS]


def metadata_errors(pcs: PodCliqueSet) -> FieldErrors:
    errs = labels_errors(pcs.metadata.labels, "metadata.labels")
    errs += annotations_errors(pcs.metadata.annotations, "metadata.annotations")
    t = pcs.spec.template
    for i, c in enumerate(t.cliques):
        at = f"{_T}.cliques[{i}]"
        errs += labels_errors(c.labels, f"{at}.labels")
        errs += annotations_errors(c.annotations, f"{at}.annotations")
        errs += _reserved(c.annotations, f"{at}.annotations", "PodCliques and pods")
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        at = f"{_T}.podCliqueScalingGroups[{i}].annotations"
        errs += annotations_errors(g.annotations, at)
        errs += _reserved(g.annotations, at, "PodCliqueScalingGroups")
    return errs
