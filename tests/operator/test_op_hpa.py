"""HorizontalPodAutoscalers, as Grove's `podcliqueset/components/hpa` makes them
(hpa_test.go: TestComputeExpectedHPAs and TestBuildResource, ported)."""

from __future__ import annotations

import pytest
from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.grove import AutoScalingConfig, PodCliqueSet
from phalanx.api.registry import from_dict
from phalanx.operator import default_podcliqueset, validate_podcliqueset
from phalanx.operator.hpa import build_hpa, expected_hpas

METRIC = {"type": "Resource", "resource": {"name": "cpu", "target": {
    "type": "Utilization", "averageUtilization": 80}}}


def _pcs(replicas: int = 2) -> PodCliqueSet:
    pcs = make_pcs("inf", [("router", 1), ("leader", 1), ("worker", 2)], replicas=replicas,
                   groups=[("grp", ["leader", "worker"], 1, 1)], autoscaled=("router",))
    pcs.spec.template.pod_clique_scaling_groups[0].scale_config = AutoScalingConfig(
        min_replicas=1, max_replicas=3, metrics=[METRIC])
    return pcs


def test_compute_expected_hpas() -> None:
    got = expected_hpas(_pcs())
    assert {n: k for n, (k, _) in got.items()} == {
        "inf-0-router": "PodClique", "inf-0-grp": "PodCliqueScalingGroup",
        "inf-1-router": "PodClique", "inf-1-grp": "PodCliqueScalingGroup"}
    assert expected_hpas(make_pcs("none", [("a", 1)])) == {}


def test_build_resource() -> None:
    pcs = _pcs()
    pcs.metadata.uid = "uid-1"  # as stored
    name, (kind, cfg) = "inf-0-grp", expected_hpas(pcs)["inf-0-grp"]
    hpa = build_hpa(pcs, name, kind, cfg)
    ref = hpa.spec.scale_target_ref
    assert (ref.kind, ref.name, ref.api_version) == ("PodCliqueScalingGroup", "inf-0-grp",
                                                     "grove.io/v1alpha1")
    assert (hpa.spec.min_replicas, hpa.spec.max_replicas) == (1, 3)
    assert hpa.spec.metrics == [METRIC]
    assert hpa.metadata.labels[L.LABEL_COMPONENT] == "pcs-hpa"
    assert hpa.metadata.labels[L.LABEL_APP_NAME] == "inf-0-grp"
    assert hpa.metadata.owner_references[0].kind == "PodCliqueSet"


def test_autoscaling_metrics_are_admitted() -> None:
    """Metrics reach the HPA, so they are no longer refused."""
    data = _pcs().to_dict()
    data["spec"]["template"]["cliques"][0]["spec"]["autoScalingConfig"]["metrics"] = [METRIC]
    assert validate_podcliqueset(default_podcliqueset(from_dict(data))) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["clique", "group"])
@pytest.mark.parametrize("metric,path,message", [
    ({"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilizationX": 80}}},
     "resource.target.averageUtilizationX", "Unknown field"),
    ({"type": "Memory", "resource": {"name": "memory", "target": {
        "type": "Utilization", "averageUtilization": 80}}},
     "type", 'Unsupported value: "Memory"'),
    ({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value"}}},
     "pods.target.averageValue", "must specify a positive target averageValue"),
], ids=["unknown-field", "unknown-type", "pods-without-average-value"])
def test_a_metric_no_hpa_would_take_is_refused_by_name(where: str, metric: dict[str, object],
                                                       path: str, message: str) -> None:
    """Grove's CRD (unknown fields) and the HPA's own validation (the rest) refuse these:
    here admission does, naming the field, before any HPA is written."""
    data = _pcs().to_dict()
    t = data["spec"]["template"]
    if where == "clique":
        t["cliques"][0]["spec"]["autoScalingConfig"]["metrics"] = [METRIC, metric]
        at = "spec.template.cliques[0].spec.autoScalingConfig.metrics[1]"
    else:
        t["podCliqueScalingGroups"][0]["scaleConfig"]["metrics"] = [metric]
        at = "spec.template.podCliqueScalingGroups[0].scaleConfig.metrics[0]"
    errs = validate_podcliqueset(default_podcliqueset(from_dict(data)))  # type: ignore[arg-type]
    assert any(p == f"{at}.{path}" and message in m for p, m in errs), errs


def test_hpas_follow_the_podcliqueset() -> None:
    async def scenario(env: Env) -> None:
        await env.create(_pcs())
        await env.settle()
        hpas = {h.name: h for h in (await env.cluster.list(HorizontalPodAutoscaler, NS)).items}
        assert sorted(hpas) == ["inf-0-grp", "inf-0-router", "inf-1-grp", "inf-1-router"]
        # minReplicas defaulted by admission to the clique's replicas, as Grove defaults it.
        assert (hpas["inf-0-router"].spec.min_replicas, hpas["inf-0-router"].spec.max_replicas) \
            == (1, 4)
        pcs = await env.pcs("inf")
        pcs.spec.replicas = 1
        pcs.spec.template.pod_clique_scaling_groups[0].scale_config = None
        await env.cluster.update(pcs)
        await env.settle()
        hpas = {h.name for h in (await env.cluster.list(HorizontalPodAutoscaler, NS)).items}
        assert hpas == {"inf-0-router"}

    run(scenario)
