"""spec.tolerations validation, ported from kube 1.36's validation_test.go: the toleration
rows of TestValidatePod (ids = kube's row names) and the gate-off rows of
TestNumericTolerationsWithFeatureGate; plus the update rule (existing tolerations may only
change their tolerationSeconds; new ones must be valid).

Not ported: TestNumericTolerationsWithFeatureGate's rows with the gate on (Lt / Gt
comparison values): TaintTolerationComparisonOperators is alpha and off in 1.36, so a real
1.36 server refuses every Lt / Gt toleration, as the Toleration model does here. Those
rows (and "invalid toleration operator") are refused when the pod is loaded, naming the
same field as the API server; the words are the model's ("Input should be 'Exists' or
'Equal'"), not "Unsupported value", so they are checked by field path.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.pod import Pod
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

from .podvalidation_cases import create_verdict, pod_json


def tol(**fields: Any) -> dict[str, Any]:
    return {"tolerations": [fields]}


VALID = {
    "populate forgiveness tolerations with exists operator in annotations.": tol(
        key="foo", operator="Exists", value="", effect="NoExecute", tolerationSeconds=60),
    "populate forgiveness tolerations with equal operator in annotations.": tol(
        key="foo", operator="Equal", value="bar", effect="NoExecute", tolerationSeconds=60),
    "populate tolerations equal operator in annotations.": tol(
        key="foo", operator="Equal", value="bar", effect="NoSchedule"),
    "empty key with Exists operator is OK for toleration, empty toleration key means match all "
    "taint keys.": tol(operator="Exists", effect="NoSchedule"),
    "empty operator is OK for toleration, defaults to Equal.": tol(
        key="foo", value="bar", effect="NoSchedule"),
    "empty effect is OK for toleration, empty toleration effect means match all taint "
    "effects.": tol(key="foo", operator="Equal", value="bar"),
    "negative tolerationSeconds is OK for toleration.": tol(
        key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute",
        tolerationSeconds=-2),
}


@pytest.mark.parametrize("spec", VALID.values(), ids=VALID.keys())
def test_valid(spec: dict[str, Any]) -> None:
    assert create_verdict(pod_json(spec)) is None


INVALID = {
    "invalid toleration key": ("spec.tolerations[0].key", tol(
        key="nospecialchars^=@", operator="Equal", value="bar", effect="NoSchedule")),
    "invalid toleration operator": ("spec.tolerations[0].operator", tol(
        key="foo", operator="In", value="bar", effect="NoSchedule")),
    "value must be empty when `operator` is 'Exists'": ("spec.tolerations[0].operator", tol(
        key="foo", operator="Exists", value="bar", effect="NoSchedule")),
    "operator must be 'Exists' when `key` is empty": ("spec.tolerations[0].operator", tol(
        operator="Equal", value="bar", effect="NoSchedule")),
    "effect must be 'NoExecute' when `TolerationSeconds` is set": (
        "spec.tolerations[0].effect", tol(key="node.kubernetes.io/not-ready",
                                          operator="Exists", effect="NoSchedule",
                                          tolerationSeconds=20)),
    # TestValidatePod: Lt / Gt need a feature gate that 1.36 leaves off.
    "numeric operator Lt requires feature gate (gate disabled)": (
        "spec.tolerations[0].operator", tol(key="node.kubernetes.io/sla", operator="Lt",
                                            value="950", effect="NoSchedule")),
    "numeric operator Gt requires feature gate (gate disabled)": (
        "spec.tolerations[0].operator", tol(key="node.kubernetes.io/sla", operator="Gt",
                                            value="950", effect="NoSchedule")),
    # TestNumericTolerationsWithFeatureGate, gate off
    "Lt operator with feature gate disabled": (
        "spec.tolerations[0].operator", tol(key="node.kubernetes.io/sla", operator="Lt",
                                            value="950", effect="NoSchedule")),
}


@pytest.mark.parametrize("expected,spec", INVALID.values(), ids=INVALID.keys())
def test_invalid(expected: str, spec: dict[str, Any]) -> None:
    err = create_verdict(pod_json(spec))
    assert err is not None, "the pod was created"
    assert expected in err.message, err.message
    assert err.field == expected


def test_equal_value_must_be_a_label_value() -> None:
    err = create_verdict(pod_json(tol(key="k", operator="Equal", value="not valid")))
    assert err is not None and err.field == "spec.tolerations[0].operator"
    assert 'Invalid value: "not valid": a valid label must be' in err.message


def test_update_may_add_valid_tolerations_and_change_seconds() -> None:
    async def main() -> None:
        c = MemoryCluster()
        spec = tol(key="k", operator="Exists", effect="NoExecute", tolerationSeconds=10)
        p = await c.create(Pod.model_validate(pod_json(spec, name="p")))
        p.spec.tolerations[0].toleration_seconds = 30  # the one change kube allows
        p = await c.update(p)
        p.spec.tolerations = [*p.spec.tolerations,
                              type(p.spec.tolerations[0])(key="bad key!", operator="Exists")]
        with pytest.raises(Invalid) as err:
            await c.update(p)
        assert err.value.field == "spec.tolerations[1].key"
        p = await c.get(Pod, "p", "ns")
        p.spec.tolerations[0].key = "other"
        with pytest.raises(Invalid) as err:
            await c.update(p)
        assert err.value.field == "spec.tolerations"

    run_virtual(main)
