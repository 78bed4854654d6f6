"""An HorizontalPodAutoscaler whose metrics kube-apiserver refuses is refused by the embedded
API server too, with the field named (phalanx.cluster.hpavalidation). Run on every client:
the real kube-apiserver is the oracle for both rows."""

import pytest

from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.registry import from_dict
from phalanx.cluster.client import Invalid


def _hpa(name: str, metric: dict) -> HorizontalPodAutoscaler:
    return from_dict({  # type: ignore[return-value]
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"},
                 "minReplicas": 1, "maxReplicas": 3, "metrics": [metric]}})


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
