"""Autoscaling bounds at admission (phalanx/operator/admission_autoscaling.py), with Grove's
rows ported from operator/internal/webhook/admission/pcs/validation/podcliqueset_test.go:
TestValidateScaleConfig (a clique's autoScalingConfig against its minAvailable, each test
named after Grove's row) and the scaleConfig row of TestPodCliqueScalingGroupConfigValidation.
Then the rules Grove has no unit row for (maxReplicas below replicas, autoScalingConfig on a
clique of a scaling group) and Phalanx's own (a group's maxReplicas below minReplicas)."""

from __future__ import annotations

import pytest
from op_harness import make_pcs

from phalanx.api.grove import AutoScalingConfig, PodCliqueSet
from phalanx.operator import default_podcliqueset, validate_podcliqueset

AT = "spec.template.cliques[0].spec.autoScalingConfig"
GROUP_AT = "spec.template.podCliqueScalingGroups[0].scaleConfig"


def errors(pcs: PodCliqueSet) -> dict[str, str]:
    return dict(validate_podcliqueset(default_podcliqueset(pcs)))


def scaled(min_replicas: int | None, max_replicas: int, min_available: int,
           replicas: int | None = None) -> PodCliqueSet:
    pcs = make_pcs("x", [("a", replicas if replicas is not None else min_available,
                          min_available)])
    pcs.spec.template.cliques[0].spec.auto_scaling_config = AutoScalingConfig(
        min_replicas=min_replicas, max_replicas=max_replicas)
    return pcs


# --- TestValidateScaleConfig ------------------------------------------------------------------

@pytest.mark.parametrize(("min_replicas", "max_replicas", "min_available", "field", "contains"), [
    pytest.param(2, 5, 1, None, None, id="valid scale config"),
    pytest.param(1, 5, 2, "minReplicas",
                 "must be greater than or equal to podCliqueSpec.minAvailable",
                 id="minReplicas less than minAvailable returns error"),
    pytest.param(5, 3, 1, "maxReplicas",
                 "must be greater than or equal to podCliqueSpec.minReplicas",
                 id="maxReplicas less than minReplicas returns error"),
    pytest.param(5, 5, 1, None, None, id="minReplicas equal to maxReplicas passes validation"),
])
def test_validate_scale_config(min_replicas: int, max_replicas: int, min_available: int,
                               field: str | None, contains: str | None) -> None:
    errs = errors(scaled(min_replicas, max_replicas, min_available))
    if field is None:
        assert errs == {}
    else:
        assert contains in errs[f"{AT}.{field}"], errs


def test_max_replicas_below_replicas_is_refused() -> None:
    """validatePodCliqueSpec: maxReplicas >= replicas."""
    errs = errors(scaled(2, 3, 2, replicas=4))
    assert errs == {f"{AT}.maxReplicas": "Invalid value: 3: must be greater than or equal to "
                                         "replicas"}


def test_min_replicas_defaults_to_replicas_and_is_then_checked() -> None:
    """The audit's gang-termination case: replicas 2 (minAvailable 2) and minReplicas 1 is
    refused; without minReplicas the default (replicas) fits."""
    assert f"{AT}.minReplicas" in errors(scaled(1, 4, 2))
    pcs = default_podcliqueset(scaled(None, 4, 2))
    assert pcs.spec.template.cliques[0].spec.auto_scaling_config.min_replicas == 2
    assert validate_podcliqueset(pcs) == []


# --- TestPodCliqueScalingGroupConfigValidation ------------------------------------------------

def grouped(replicas: int, min_available: int, scale: AutoScalingConfig | None) -> PodCliqueSet:
    pcs = make_pcs("inference", [("prefill", 1)], groups=[("workers", ["prefill"], replicas,
                                                           min_available)])
    pcs.spec.template.pod_clique_scaling_groups[0].scale_config = scale
    return pcs


def test_invalid_scale_config_min_replicas_below_min_available() -> None:
    """Invalid ScaleConfig.MinReplicas < MinAvailable."""
    errs = errors(grouped(4, 3, AutoScalingConfig(min_replicas=2, max_replicas=10)))
    assert errs == {f"{GROUP_AT}.minReplicas": "Invalid value: 2: scaleConfig.minReplicas must "
                                               "be greater than or equal to minAvailable"}


def test_a_group_max_replicas_below_min_replicas_is_refused() -> None:
    """Phalanx's own: Grove admits it and the API server then refuses the HPA."""
    errs = errors(grouped(4, 1, AutoScalingConfig(min_replicas=3, max_replicas=2)))
    assert list(errs) == [f"{GROUP_AT}.maxReplicas"]
    assert "must be greater than or equal to scaleConfig.minReplicas" in errs[
        f"{GROUP_AT}.maxReplicas"]
    pcs = default_podcliqueset(grouped(3, 1, AutoScalingConfig(max_replicas=5)))
    assert pcs.spec.template.pod_clique_scaling_groups[0].scale_config.min_replicas == 3


def test_autoscaling_config_on_a_clique_of_a_scaling_group_is_refused() -> None:
    """validatePodCliqueScalingGroupConfigs (A1): the group scales its cliques."""
    pcs = make_pcs("t", [("a", 2), ("b", 1)], groups=[("g", ["a", "b"], 1, 1)])
    pcs.spec.template.cliques[0].spec.auto_scaling_config = AutoScalingConfig(
        min_replicas=2, max_replicas=4)
    assert errors(pcs) == {"spec.template.podCliqueScalingGroups": 'Invalid value: "a": '
                           "AutoScalingConfig is not allowed to be defined for PodClique that "
                           "is part of scaling group"}


def test_the_stored_podcliqueset_carries_the_defaulted_min_replicas() -> None:
    """A7.5: the defaulting webhook writes minReplicas into the stored object, so the HPA
    keeps the value it was created with when the template's replicas change later."""
    from phalanx.cluster.clock import run_virtual
    from phalanx.cluster.memory import MemoryCluster
    from phalanx.operator import install_admission

    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        pcs = grouped(3, 1, AutoScalingConfig(max_replicas=6))
        pcs.spec.template.cliques[0].spec.auto_scaling_config = None
        pcs.spec.template.cliques.append(scaled(None, 4, 2).spec.template.cliques[0])
        pcs.spec.template.cliques[1].name = pcs.spec.template.cliques[1].spec.role_name = "b"
        stored = await cluster.create(pcs)
        t = stored.spec.template
        assert t.cliques[1].spec.auto_scaling_config.min_replicas == 2
        assert t.pod_clique_scaling_groups[0].scale_config.min_replicas == 3
        t.cliques[1].spec.replicas = 3  # minAvailable stays 2: minReplicas is not re-derived
        assert (await cluster.update(stored)).spec.template.cliques[1].spec \
            .auto_scaling_config.min_replicas == 2

    run_virtual(main)
