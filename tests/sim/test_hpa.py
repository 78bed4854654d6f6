"""The embedded HPA controller (phalanx.sim.hpa): kube-controller-manager's algorithm with
its defaults -- desired = ceil(current x value / target), a 10% tolerance, the 300 s
scale-down stabilisation window, the default scale-up policy, min/max -- driven by the
Scenario `metric` step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.core import Event
from phalanx.api.grove import PodClique
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.hpa import (
    ANNOTATION_METRIC,
    SimHPAController,
    Stabilizer,
    UnsupportedHPA,
    metric_target,
    raw_recommendation,
    scale_up_limit,
)
from phalanx.sim.runner import RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

NS = "default"


def _hpa(metrics: list[dict] | None = None, *, min_replicas: int | None = 1,
         max_replicas: int = 10, behavior: dict | None = None) -> HorizontalPodAutoscaler:
    return HorizontalPodAutoscaler.model_validate({
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"scaleTargetRef": {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
                                    "name": "web"},
                 "minReplicas": min_replicas, "maxReplicas": max_replicas,
                 "metrics": metrics if metrics is not None else [_cpu(80)],
                 **({"behavior": behavior} if behavior else {})}})


def _cpu(utilization: int) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": utilization}}}


@pytest.mark.parametrize("current,value,target,expected", [
    (4, 87, 80, 4),     # within the 10% tolerance: unchanged
    (4, 72, 80, 4),
    (4, 89, 80, 5),     # 1.1125 x 4 = 4.45 -> 5
    (3, 160, 80, 6),
    (10, 20, 80, 3),    # ceil(2.5)
])
def test_raw_recommendation(current: int, value: float, target: float, expected: int) -> None:
    assert raw_recommendation(current, value, target) == expected


def test_metric_target_kinds_and_refusals() -> None:
    assert metric_target(_hpa()) == (80, True)
    assert metric_target(_hpa([{"type": "External", "external": {
        "metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}}])) == (30, False)
    assert metric_target(_hpa([{"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue",
                                              "averageValue": "500m"}}}])) == (0.5, True)
    with pytest.raises(UnsupportedHPA, match="exactly one"):
        metric_target(_hpa([_cpu(80), _cpu(50)]))


def test_scale_down_waits_for_the_stabilization_window() -> None:
    s = Stabilizer()
    assert s.stabilize(0, 4, 8, 0, 300) == (8, None)
    # Lower recommendations are held at the highest of the last 300 s.
    assert s.stabilize(60, 8, 2, 0, 300) == (8, 300.0)
    assert s.stabilize(200, 8, 3, 0, 300) == (8, 160.0)
    # 300 s after the 8 stopped being recommended, the highest left is the 3.
    assert s.stabilize(360, 8, 3, 0, 300) == (3, None)
    # A scale-up applies at once (window 0).
    assert s.stabilize(400, 3, 9, 0, 300) == (9, None)


def test_scale_up_limit_is_double_or_four_pods() -> None:
    assert [scale_up_limit(n) for n in (1, 3, 4, 10)] == [5, 7, 8, 20]


async def _pclq(cluster: MemoryCluster, replicas: int, name: str = "web",
                selector: str | None = "app=web") -> None:
    """A PodClique whose status names its pods' selector, as the operator writes it (the
    scale's labelSelectorPath is .status.hpaPodSelector)."""
    await cluster.create(PodClique.model_validate({
        "metadata": {"name": name, "namespace": NS},
        "spec": {"roleName": name, "replicas": replicas,
                 "podSpec": {"containers": [{"name": "c", "image": "busybox"}]}}}))
    if selector is not None:
        await _select(cluster, name, selector)


async def _select(cluster: MemoryCluster, name: str, selector: str) -> None:
    await cluster.patch(PodClique, name, {"status": {"hpaPodSelector": selector}}, NS,
                        subresource="status")


async def _metric(cluster: MemoryCluster, value: str) -> None:
    await cluster.patch(HorizontalPodAutoscaler, "web",
                        {"metadata": {"annotations": {ANNOTATION_METRIC: value}}}, NS)


async def _replicas(cluster: MemoryCluster) -> int:
    return (await cluster.get(PodClique, "web", NS)).spec.replicas


def test_controller_scales_the_target_and_holds_scale_down() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2)
        await cluster.create(_hpa(min_replicas=2, max_replicas=12))
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "160")  # twice the target at 2 pods: the load of 4
            await hpa.wait_idle()
            assert await _replicas(cluster) == 4
            status = (await cluster.get(HorizontalPodAutoscaler, "web", NS)).status
            assert (status["currentReplicas"], status["desiredReplicas"]) == (2, 4)
            assert "lastScaleTime" in status
            assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
                ("ScalingActive", "True", "ValidMetricFound")]
            assert status["conditions"][0]["message"].endswith(
                "from cpu resource utilization (percentage of request)")
            # The load spread over 4 pods is on target: no further scaling.
            assert hpa.pending == 0 and hpa.scalings == 1

            await _metric(cluster, "20")  # a quarter of the target at 4 pods
            await hpa.wait_idle()
            assert await _replicas(cluster) == 4 and hpa.pending == 1
            await asyncio.sleep(299)
            assert await _replicas(cluster) == 4
            await asyncio.sleep(2)
            await hpa.wait_idle()
            assert await _replicas(cluster) == 2  # clamped at minReplicas (ceil(1) < 2)
            assert hpa.pending == 0

            await _metric(cluster, "800")  # 10x at 2 pods: 20 wanted, max(x2, +4) per 15 s
            await hpa.wait_idle()
            assert await _replicas(cluster) == 6
            await asyncio.sleep(15)
            await hpa.wait_idle()
            assert await _replicas(cluster) == 12  # then maxReplicas
        finally:
            await hpa.stop()

    run_virtual(main)


def test_unsupported_behavior_is_reported_not_ignored() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2)
        await cluster.create(_hpa(behavior={"scaleUp": {"policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 60}]}}))
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "400")
            await hpa.wait_idle()
            assert await _replicas(cluster) == 2
        finally:
            await hpa.stop()
        events = [e for e in (await cluster.list(Event, NS)).items
                  if e.reason == "FailedComputeMetricsReplicas"]
        assert events and "spec.behavior.scaleUp policies are not simulated" in events[0].message

    run_virtual(main)


WORKLOAD = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: inf}
spec:
  replicas: 1
  template:
    cliques:
    - name: fe
      spec:
        roleName: fe
        replicas: 2
        autoScalingConfig:
          maxReplicas: 8
          metrics:
          - type: Resource
            resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
        podSpec:
          containers:
          - name: c
            image: x
            resources: {requests: {cpu: "1"}}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: load}
spec:
  steps:
  - at: 1m
    metric: {hpa: inf-0-fe, value: 160}
  - at: 3m
    metric: {hpa: inf-0-fe, value: 20}
  - at: 4m
    metric: {hpa: missing, value: 1}
"""


def test_scenario_metric_step_drives_the_hpa(tmp_path: Path) -> None:
    """Up to 4 at 1m; the step down at 3m is held by the 300 s window, then goes to
    minReplicas (2) at 8m. (`until`: a run whose PodClique was scaled down does not settle
    yet -- the scheduler is not idle afterwards, with `scale` steps too.)"""
    f = tmp_path / "w.yaml"
    f.write_text(WORKLOAD)
    wl = load_workload([f])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    record = run_virtual(Simulation(wl, spec, cfg, RunOptions(until=600.0)).run())
    assert [(s.action, s.ok) for s in record.steps] == [
        ("metric", True), ("metric", True), ("metric", False)]
    assert record.steps[0].description == "set HPA inf-0-fe's metric to 160"
    assert record.steps[2].error == "HorizontalPodAutoscaler missing does not exist"
    clique = next(o for o in record.objects["PodClique"] if o["metadata"]["name"] == "inf-0-fe")
    assert clique["spec"]["replicas"] == 2
    hpa = next(o for o in record.objects["HorizontalPodAutoscaler"])
    assert (hpa["status"]["currentReplicas"], hpa["status"]["desiredReplicas"]) == (4, 2)
    assert hpa["status"]["lastScaleTime"].endswith("T00:08:00+00:00")


def test_target_without_a_scale_subresource_is_failed_get_scale() -> None:
    """As kube's controller: the target is read through /scale, so a kind without one (a
    Pod) or a missing target is a FailedGetScale Warning and nothing is written."""
    async def main() -> None:
        cluster = MemoryCluster()
        hpa_obj = _hpa()
        hpa_obj.spec.scale_target_ref.api_version = "v1"
        hpa_obj.spec.scale_target_ref.kind = "Pod"
        await cluster.create(hpa_obj)
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "400")
            await hpa.wait_idle()
        finally:
            await hpa.stop()
        events = [e for e in (await cluster.list(Event, NS)).items
                  if e.reason == "FailedGetScale"]
        assert events and "Pod has no scale subresource" in events[0].message
        assert hpa.scalings == 0

    run_virtual(main)


def test_scale_step_goes_through_the_scale_subresource() -> None:
    """The Scenario `scale` step is `kubectl scale`: unconditional, through /scale; a kind
    without one is refused when the scenario is read, naming the field."""
    from pydantic import ValidationError

    from phalanx.sim.scenario import Step
    from phalanx.sim.steps import run_step

    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2)
        done = await run_step(cluster, Step.model_validate(
            {"at": 0, "scale": {"kind": "PodClique", "name": "web", "replicas": 4}}))
        assert done == "scaled PodClique web to 4" and await _replicas(cluster) == 4
        with pytest.raises(ValidationError, match=r"scale\.kind\n.*Pod has no scale "
                           r"subresource; kinds that have one: PodClique, "
                           r"PodCliqueScalingGroup, PodCliqueSet"):
            Step.model_validate({"at": 0, "scale": {"kind": "Pod", "name": "web",
                                                    "replicas": 4}})

    run_virtual(main)


def _warnings(events: list[Event], reason: str) -> list[str]:
    return [e.message for e in events if e.reason == reason and e.type == "Warning"]


def test_a_target_without_a_selector_is_selector_required_until_it_has_one() -> None:
    """kube's validateAndParseSelector: an empty scale selector is a SelectorRequired Warning
    (and FailedComputeMetricsReplicas), ScalingActive False/InvalidSelector, nothing
    scaled; the resync 15 s later acts once the target's status names its pods."""
    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2, selector=None)
        await cluster.create(_hpa())
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "160")
            await hpa.wait_idle()
            assert await _replicas(cluster) == 2 and hpa.scalings == 0
            events = (await cluster.list(Event, NS)).items
            assert _warnings(events, "SelectorRequired") == ["selector is required"]
            assert _warnings(events, "FailedComputeMetricsReplicas") == ["selector is required"]
            status = (await cluster.get(HorizontalPodAutoscaler, "web", NS)).status
            assert status["currentReplicas"] == 2
            assert [(c["type"], c["status"], c["reason"], c["message"])
                    for c in status["conditions"]] == [
                ("ScalingActive", "False", "InvalidSelector",
                 "the HPA target's scale is missing a selector")]

            await _select(cluster, "web", "app=web")
            await asyncio.sleep(15)
            await hpa.wait_idle()
            assert await _replicas(cluster) == 4
            status = (await cluster.get(HorizontalPodAutoscaler, "web", NS)).status
            assert status["conditions"][0]["reason"] == "ValidMetricFound"
        finally:
            await hpa.stop()

    run_virtual(main)


def test_a_selector_that_does_not_parse_is_invalid_selector() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2, selector="app in (web")
        await cluster.create(_hpa())
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "160")
            await hpa.wait_idle()
        finally:
            await hpa.stop()
        assert await _replicas(cluster) == 2
        [message] = _warnings((await cluster.list(Event, NS)).items, "InvalidSelector")
        assert message.startswith("couldn't convert selector into a corresponding internal "
                                  "selector object: ")

    run_virtual(main)


def test_two_hpas_selecting_the_same_pods_is_ambiguous_selector() -> None:
    """Two HPAs whose targets' selectors pick the same pod: the second to sync is refused
    with AmbiguousSelector naming both, as kube's hpaSelectors check does."""
    from phalanx.api.core import Pod

    async def main() -> None:
        cluster = MemoryCluster()
        await _pclq(cluster, 2, "web", "app=web")
        await _pclq(cluster, 2, "web2", "tier=front")
        await cluster.create(Pod.model_validate({
            "metadata": {"name": "p", "namespace": NS,
                         "labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
        await cluster.create(_hpa())
        second = _hpa()
        second.metadata.name = "web2"
        second.spec.scale_target_ref.name = "web2"
        await cluster.create(second)
        hpa = SimHPAController(cluster)
        await hpa.start()
        try:
            await _metric(cluster, "160")
            await hpa.wait_idle()
            assert await _replicas(cluster) == 4  # the first HPA is alone when it syncs
            await cluster.patch(HorizontalPodAutoscaler, "web2",
                                {"metadata": {"annotations": {ANNOTATION_METRIC: "160"}}}, NS)
            await hpa.wait_idle()
        finally:
            await hpa.stop()
        assert (await cluster.get(PodClique, "web2", NS)).spec.replicas == 2
        [message] = _warnings((await cluster.list(Event, NS)).items, "AmbiguousSelector")
        assert message == ("pods by selector tier=front are controlled by multiple HPAs: "
                           "[default/web default/web2]")

    run_virtual(main)
