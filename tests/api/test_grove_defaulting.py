"""Grove's defaulting webhook (`default_podcliqueset` in phalanx/api/grove.py), rows ported
from operator/internal/webhook/admission/pcs/defaulting/podcliqueset_additional_test.go,
each test named after Grove's row: TestDefaultPodCliqueTemplateSpecs (replicas, minAvailable,
autoScalingConfig.minReplicas) and TestDefaultPodCliqueScalingGroupConfigs (scaleConfig
.minReplicas). The pod spec rows are in test_grove.py and tests/operator."""

from __future__ import annotations

from phalanx.api.core import Container, PodSpec
from phalanx.api.grove import (
    AutoScalingConfig,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
    default_podcliqueset,
)


def _pcs(cliques: list[PodCliqueSpec], groups: list[PodCliqueScalingGroupConfig] | None = None
         ) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "metadata": {"name": "x"},
        "spec": {"template": {
            "cliques": [PodCliqueTemplateSpec(name=f"clique{i + 1}", spec=s).model_dump()
                        for i, s in enumerate(cliques)],
            "podCliqueScalingGroups": [g.model_dump() for g in groups] if groups else None}},
    })


def _clique(replicas: int, min_available: int | None = None,
            scale: AutoScalingConfig | None = None) -> PodCliqueSpec:
    return PodCliqueSpec(role_name="role1", replicas=replicas, min_available=min_available,
                         auto_scaling_config=scale,
                         pod_spec=PodSpec(containers=[Container(name="c")]))


def _defaulted_clique(spec: PodCliqueSpec) -> PodCliqueSpec:
    return default_podcliqueset(_pcs([spec])).spec.template.cliques[0].spec


# --- TestDefaultPodCliqueTemplateSpecs --------------------------------------------------------

def test_replicas_defaults_to_1_when_0() -> None:
    assert _defaulted_clique(_clique(0)).replicas == 1


def test_min_available_defaults_to_replicas_when_nil() -> None:
    assert _defaulted_clique(_clique(5)).min_available == 5


def test_min_available_is_not_overridden_when_set() -> None:
    assert _defaulted_clique(_clique(5, 3)).min_available == 3


def test_scale_config_min_replicas_defaults_to_replicas_when_nil() -> None:
    spec = _defaulted_clique(_clique(5, scale=AutoScalingConfig(max_replicas=10)))
    assert spec.auto_scaling_config.min_replicas == 5


def test_scale_config_min_replicas_is_not_overridden_when_set() -> None:
    spec = _defaulted_clique(_clique(5, scale=AutoScalingConfig(min_replicas=2, max_replicas=10)))
    assert spec.auto_scaling_config.min_replicas == 2


def test_nil_scale_config_does_not_cause_panic() -> None:
    assert _defaulted_clique(_clique(5)).auto_scaling_config is None


def test_min_available_and_min_replicas_default_from_replicas_as_written() -> None:
    """Grove reads the clique as written, before replicas 0 became 1: minAvailable and
    minReplicas are 0 (and validation then refuses the clique)."""
    spec = _defaulted_clique(_clique(0, scale=AutoScalingConfig(max_replicas=3)))
    assert (spec.replicas, spec.min_available, spec.auto_scaling_config.min_replicas) == (1, 0, 0)


# --- TestDefaultPodCliqueScalingGroupConfigs --------------------------------------------------

def _group(name: str, replicas: int | None, scale: AutoScalingConfig | None
           ) -> PodCliqueScalingGroupConfig:
    return PodCliqueScalingGroupConfig(name=name, clique_names=["clique1"], replicas=replicas,
                                       scale_config=scale)


def _defaulted_groups(*groups: PodCliqueScalingGroupConfig) -> list[PodCliqueScalingGroupConfig]:
    pcs = default_podcliqueset(_pcs([_clique(1)], list(groups)))
    return list(pcs.spec.template.pod_clique_scaling_groups or ())


def test_group_scale_config_min_replicas_defaults_to_replicas_when_nil() -> None:
    [g] = _defaulted_groups(_group("g", 3, AutoScalingConfig(max_replicas=10)))
    assert g.scale_config.min_replicas == 3


def test_group_scale_config_min_replicas_is_not_overridden_when_set() -> None:
    [g] = _defaulted_groups(_group("g", 3, AutoScalingConfig(min_replicas=1, max_replicas=10)))
    assert g.scale_config.min_replicas == 1


def test_group_nil_scale_config_does_not_cause_panic() -> None:
    [g] = _defaulted_groups(_group("g", 3, None))
    assert g.scale_config is None


def test_multiple_scaling_groups_are_all_defaulted_correctly() -> None:
    a, b = _defaulted_groups(_group("g", 2, AutoScalingConfig(max_replicas=5)),
                             _group("h", 4, AutoScalingConfig(max_replicas=8)))
    assert (a.scale_config.min_replicas, b.scale_config.min_replicas) == (2, 4)


def test_group_replicas_unset_default_to_1_before_min_replicas() -> None:
    """Grove's CRD defaults replicas to 1 before its webhook runs."""
    [g] = _defaulted_groups(_group("g", None, AutoScalingConfig(max_replicas=5)))
    assert (g.replicas, g.scale_config.min_replicas) == (1, 1)
