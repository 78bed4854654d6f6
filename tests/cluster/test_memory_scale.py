"""The embedded `/scale` subresource (phalanx.cluster.scale on MemoryCluster), as
kube-apiserver serves it for custom resources whose CRD declares `subresources.scale`.
The same calls on the real server: tests/operator/real/test_workload_plumbing_real.py."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueScalingGroup
from phalanx.cluster.client import Conflict, Invalid, NotFound
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.scale import Scale

NS = "default"


def _pclq(replicas: int = 2) -> PodClique:
    return PodClique.model_validate({
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"roleName": "web", "replicas": replicas,
                 "podSpec": {"containers": [{"name": "c", "image": "busybox"}]}}})


def _pcsg() -> PodCliqueScalingGroup:
    return PodCliqueScalingGroup.model_validate({
        "metadata": {"name": "grp", "namespace": NS},
        "spec": {"replicas": 3, "cliqueNames": ["web"]}})


def test_get_scale_reads_the_crd_paths() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        created = await cluster.create(_pclq(2))
        fresh = await cluster.get_scale(PodClique, "web", NS)
        assert (fresh.replicas, fresh.status_replicas, fresh.selector) == (2, 0, "")
        assert fresh.resource_version == created.metadata.resource_version
        assert fresh.uid == created.metadata.uid
        pclq = await cluster.get(PodClique, "web", NS)
        pclq.status.replicas, pclq.status.hpa_pod_selector = 2, "app=web"
        await cluster.update_status(pclq)
        seen = await cluster.get_scale(PodClique, "web", NS)
        assert (seen.status_replicas, seen.selector) == (2, "app=web")

        await cluster.create(_pcsg())  # its selector is at .status.selector
        group = await cluster.get(PodCliqueScalingGroup, "grp", NS)
        group.status.selector = "grove.io/podcliquescalinggroup=grp"
        await cluster.update_status(group)
        got = await cluster.get_scale(PodCliqueScalingGroup, "grp", NS)
        assert (got.replicas, got.selector) == (3, "grove.io/podcliquescalinggroup=grp")

    asyncio.run(main())


def test_update_scale_writes_spec_replicas() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await cluster.create(_pclq(2))
        scale = await cluster.get_scale(PodClique, "web", NS)
        scale.replicas = 5
        done = await cluster.update_scale(PodClique, scale)
        pclq = await cluster.get(PodClique, "web", NS)
        assert pclq.spec.replicas == 5 == done.replicas
        assert pclq.metadata.generation == 2  # a spec change, as through the object
        assert done.resource_version == pclq.metadata.resource_version != scale.resource_version

    asyncio.run(main())


def test_update_scale_resource_version_is_a_precondition() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await cluster.create(_pclq(2))
        stale = await cluster.get_scale(PodClique, "web", NS)
        await cluster.patch(PodClique, "web", {"metadata": {"labels": {"a": "b"}}}, NS)
        stale.replicas = 4
        with pytest.raises(Conflict):
            await cluster.update_scale(PodClique, stale)
        # Without one (as `kubectl scale`), the write is unconditional.
        await cluster.update_scale(PodClique, Scale("web", NS, 4))
        assert (await cluster.get(PodClique, "web", NS)).spec.replicas == 4

    asyncio.run(main())


def test_update_scale_refuses_negative_replicas_as_the_api_server() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await cluster.create(_pclq(2))
        with pytest.raises(Invalid) as refused:
            await cluster.update_scale(PodClique, Scale("web", NS, -1))
        assert refused.value.field == ".spec.replicas"
        assert refused.value.message == ('PodClique.grove.io "web" is invalid: .spec.replicas: '
                                         "Invalid value: -1: should be a non-negative integer")
        assert (await cluster.get(PodClique, "web", NS)).spec.replicas == 2

    asyncio.run(main())


def test_scale_of_a_kind_without_one_or_a_missing_object_is_not_found() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        await cluster.create(Pod.model_validate({
            "metadata": {"name": "p", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
        with pytest.raises(NotFound, match="Pod has no scale subresource"):
            await cluster.get_scale(Pod, "p", NS)
        with pytest.raises(NotFound, match="Pod has no scale subresource"):
            await cluster.update_scale(Pod, Scale("p", NS, 2))
        with pytest.raises(NotFound):
            await cluster.get_scale(PodClique, "absent", NS)
        with pytest.raises(NotFound):
            await cluster.update_scale(PodClique, Scale("absent", NS, 1))

    asyncio.run(main())


def test_scale_wire_form_is_autoscaling_v1() -> None:
    scale = Scale("web", NS, 3, status_replicas=2, selector="app=web", resource_version="7",
                  uid="u1")
    data = scale.to_dict()
    assert data == {"apiVersion": "autoscaling/v1", "kind": "Scale",
                    "metadata": {"name": "web", "namespace": NS, "resourceVersion": "7",
                                 "uid": "u1"},
                    "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}}
    assert Scale.from_dict(data) == scale
