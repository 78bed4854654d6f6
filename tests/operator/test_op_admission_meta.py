"""Labels and annotations at admission (phalanx/operator/admission_meta.py): a clique's labels
as ValidateLabels, annotations (clique, scaling group, the PodCliqueSet's own) as
ValidateAnnotations, in kube's words and naming the field the user wrote; and the operator's
own `phalanx.dev/` annotation keys refused in a template. Grove has no unit row for these."""

from __future__ import annotations

import pytest
from op_harness import make_pcs

from phalanx.api.grove import PodCliqueSet
from phalanx.operator import default_podcliqueset, validate_podcliqueset
from phalanx.operator.naming import ANNOTATION_STARTS_AFTER, ANNOTATION_TEMPLATE_REPLICAS

KEY_WHY = "name part must consist of alphanumeric characters"


def errors(pcs: PodCliqueSet) -> dict[str, str]:
    return dict(validate_podcliqueset(default_podcliqueset(pcs)))


def pcs_with(where: str, kind: str, values: dict[str, str]) -> PodCliqueSet:
    pcs = make_pcs("t", [("a", 1), ("b", 1)], groups=[("g", ["b"], 1, 1)])
    target = {"clique": pcs.spec.template.cliques[0],
              "group": pcs.spec.template.pod_clique_scaling_groups[0],
              "pcs": pcs.metadata}[where]
    setattr(target, kind, values)
    return pcs


@pytest.mark.parametrize(("where", "kind", "values", "field", "says"), [
    ("clique", "labels", {"bad key!": "v"}, "spec.template.cliques[0].labels",
     f'Invalid value: "bad key!": {KEY_WHY}'),
    ("clique", "labels", {"k": "bad value!"}, "spec.template.cliques[0].labels",
     'Invalid value: "bad value!": a valid label must be an empty string'),
    ("clique", "annotations", {"bad key!": "v"}, "spec.template.cliques[0].annotations",
     f'Invalid value: "bad key!": {KEY_WHY}'),
    ("group", "annotations", {"only/one/slash": "v"},
     "spec.template.podCliqueScalingGroups[0].annotations",
     'Invalid value: "only/one/slash": a valid label key must consist of'),
    ("pcs", "annotations", {"bad key!": "v"}, "metadata.annotations",
     f'Invalid value: "bad key!": {KEY_WHY}'),
    ("pcs", "labels", {"bad key!": "v"}, "metadata.labels",
     f'Invalid value: "bad key!": {KEY_WHY}'),
    ("clique", "annotations", {"big": "x" * (256 * 1024)}, "spec.template.cliques[0].annotations",
     "Too long: may not be more than 262144 bytes"),
], ids=["clique-label-key", "clique-label-value", "clique-annotation-key",
        "group-annotation-key", "pcs-annotation-key", "pcs-label-key", "annotations-size"])
def test_invalid_labels_and_annotations_are_refused(where, kind, values, field, says) -> None:
    errs = errors(pcs_with(where, kind, values))
    assert list(errs) == [field] and says in errs[field], errs


def test_valid_keys_in_any_letter_case_are_admitted() -> None:
    pcs = pcs_with("clique", "annotations", {"Example.COM/Note": "x", "grove.io/starts-after": "y"})
    pcs.spec.template.cliques[0].labels = {"UpperCaseAreOK123": "123_-.BaR"}
    assert errors(pcs) == {}


@pytest.mark.parametrize("key", [ANNOTATION_STARTS_AFTER, ANNOTATION_TEMPLATE_REPLICAS])
@pytest.mark.parametrize("where", ["clique", "group"])
def test_the_operators_own_annotations_are_refused_in_a_template(where: str, key: str) -> None:
    """A6: the startup waiter's list must come from the operator, never from a template."""
    errs = errors(pcs_with(where, "annotations", {key: "t-0-zzz:1"}))
    at = ("spec.template.cliques[0].annotations" if where == "clique"
          else "spec.template.podCliqueScalingGroups[0].annotations")
    assert list(errs) == [f"{at}[{key}]"]
    assert errs[f"{at}[{key}]"].startswith("Forbidden: the operator sets this annotation")
