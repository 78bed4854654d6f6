"""An HorizontalPodAutoscaler whose metrics or replica bounds kube-apiserver refuses is
refused by the embedded API server too, with the field named (phalanx.cluster.hpavalidation).
Run on every client: the real kube-apiserver is the oracle for every row."""

import pytest

from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.registry import from_dict
from phalanx.cluster.client import Invalid


def _hpa(name: str, metric: dict | None = None, min_replicas: int = 1,
         max_replicas: int = 3) -> HorizontalPodAutoscaler:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": min_replicas, "maxReplicas": max_replicas}
    if metric is not None:
        spec["metrics"] = [metric]
    return from_dict({  # type: ignore[return-value]
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec})


@pytest.mark.parametrize("metric,says", [
    ({"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilizationX": 80}}}, "averageUtilizationX"),
    ({"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 0}}}, "must be greater than 0"),
    ({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value"}}},
     "must specify a positive target averageValue"),
], ids=["unknown-field", "zero-utilization", "pods-without-average-value"])
def test_an_hpa_with_a_metric_the_api_refuses_is_refused(client_factory, metric, says):
    async def main():
        c = client_factory()
        with pytest.raises(Invalid) as err:
            await c.create(_hpa("bad", metric))
        assert says in str(err.value), str(err.value)
        ok = await c.create(_hpa("good", {"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}))
        await c.delete(HorizontalPodAutoscaler, ok.name, "default")
    client_factory.run(main)


@pytest.mark.parametrize("bounds,field,says", [
    ((3, 2), "spec.maxReplicas", "must be greater than or equal to `minReplicas`"),
    ((0, 2), "spec.minReplicas", "must be greater than or equal to 1"),
], ids=["max-below-min", "min-zero"])
def test_an_hpa_with_bounds_the_api_refuses_is_refused(client_factory, bounds, field, says):
    async def main():
        c = client_factory()
        with pytest.raises(Invalid) as err:
            await c.create(_hpa("bad", min_replicas=bounds[0], max_replicas=bounds[1]))
        assert err.value.field == field and says in str(err.value), str(err.value)
        ok = await c.create(_hpa("good", min_replicas=2, max_replicas=2))
        ok.spec.max_replicas = 1
        with pytest.raises(Invalid) as err:  # on update too
            await c.update(ok)
        assert err.value.field == "spec.maxReplicas"
        await c.delete(HorizontalPodAutoscaler, ok.name, "default")
    client_factory.run(main)
