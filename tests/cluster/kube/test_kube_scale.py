"""KubeCluster's scale subresource on the wire (GET/PUT `.../NAME/scale`, autoscaling/v1
Scale), against the REST facade over MemoryCluster. On kube-apiserver itself:
tests/operator/real/test_workload_plumbing_real.py."""

from __future__ import annotations

import pytest

from phalanx.api.core import ConfigMap
from phalanx.api.grove import PodClique
from phalanx.cluster.client import Conflict, Invalid, NotFound
from phalanx.cluster.kube import KubeCluster
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.scale import Scale

from .facade import Facade, run_over_facade


def test_get_and_update_scale_go_through_the_scale_endpoint() -> None:
    async def body(kube: KubeCluster, mem: MemoryCluster, facade: Facade) -> None:
        await mem.create(PodClique.model_validate({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"roleName": "web", "replicas": 2,
                     "podSpec": {"containers": [{"name": "c", "image": "busybox"}]}}}))
        scale = await kube.get_scale(PodClique, "web", "ns")
        assert (scale.name, scale.namespace, scale.replicas) == ("web", "ns", 2)
        stale = Scale("web", "ns", 9, resource_version=scale.resource_version)
        scale.replicas = 3
        done = await kube.update_scale(PodClique, scale)
        assert done.replicas == 3 == (await mem.get(PodClique, "web", "ns")).spec.replicas
        with pytest.raises(Conflict):
            await kube.update_scale(PodClique, stale)
        with pytest.raises(Invalid) as refused:
            await kube.update_scale(PodClique, Scale("web", "ns", -1))
        assert refused.value.field == ".spec.replicas"
        with pytest.raises(NotFound):
            await kube.get_scale(PodClique, "absent", "ns")
        path = "/apis/grove.io/v1alpha1/namespaces/ns/podcliques/web/scale"
        assert [r for r in facade.requests if r[1].endswith("/scale")][:2] == [
            ("GET", path), ("PUT", path)]
        # A kind without one is refused before any request, as the server would refuse it.
        sent = len(facade.requests)
        with pytest.raises(NotFound, match="ConfigMap has no scale subresource"):
            await kube.get_scale(ConfigMap, "cm", "ns")
        assert len(facade.requests) == sent

    run_over_facade(body)
