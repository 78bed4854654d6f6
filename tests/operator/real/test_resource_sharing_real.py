"""Resource sharing and auto-MNNVL's start-up check on a real kube-apiserver 1.36 (issue 27
items 4 and 5), every write strict:

- the ResourceClaims the operator creates from a PodCliqueSet's resourceClaimTemplates
  (AllReplicas and PerReplica) pass the API server's resource.k8s.io/v1 validation, carry
  their owner, and the pods referencing them are accepted;
- scaling the PodCliqueSet in deletes the per-replica claims above the new count;
- with `network.autoMNNVLEnabled` on, the operator refuses to start on a server that does
  not serve ComputeDomain (no NVIDIA DRA driver CRD installed), naming the CRD.

No scheduler runs: pods stay gated, which neither the claims nor the API server mind.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from phalanx.api.config import load_operator_config
from phalanx.api.core import Pod
from phalanx.api.crds import crds
from phalanx.api.grove import PodCliqueSet
from phalanx.api.resource import ResourceClaim
from phalanx.envtest import install_crds, wait_until_async
from phalanx.operator import OperatorManager
from phalanx.operator.admission_mnnvl import MNNVLPreflightError

pytestmark = [pytest.mark.real_cluster]

# Each wait ends when nothing changed for this long (phalanx.envtest.wait); the test's own
# timeout (tests/conftest.py) is the backstop.
STALL = 30.0
REQ = {"spec": {"devices": {"requests": [
    {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def _pcs(ns: str) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": "rs", "namespace": ns},
        "spec": {"replicas": 2, "template": {
            "resourceClaimTemplates": [{"name": "shared", "templateSpec": REQ},
                                       {"name": "own", "templateSpec": REQ}],
            "resourceSharing": [{"name": "shared", "scope": "AllReplicas"},
                                {"name": "own", "scope": "PerReplica"}],
            "cliques": [{"name": "w", "spec": {"roleName": "w", "replicas": 1, "podSpec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}]}}})


def test_shared_claims_are_accepted_and_follow_scale(control_plane: Any,
                                                     kube_namespace: str) -> None:
    plane, ns = control_plane, kube_namespace
    plane.start_controller_manager(("garbagecollector",))
    try:
        asyncio.run(_scenario(plane, ns))
    finally:
        plane.stop_controller_manager()


async def _scenario(plane: Any, ns: str) -> None:
    async with plane.client() as kube:
        await install_crds(kube, crds())
        op = OperatorManager(kube)
        await op.start()
        try:
            await kube.create(_pcs(ns))

            async def claims() -> dict[str, ResourceClaim] | None:
                found = {c.name: c for c in (await kube.list(ResourceClaim, ns)).items}
                return found if len(found) == 3 else None

            got = await wait_until_async(claims, 60, what="the 3 shared claims", stall=STALL)
            assert sorted(got) == ["rs-0-own", "rs-1-own", "rs-all-shared"]
            for c in got.values():
                owner = c.metadata.controller_ref()
                assert owner is not None and (owner.kind, owner.name) == ("PodCliqueSet", "rs")
                assert c.spec.devices.requests[0].name == "gpu"

            async def pods() -> list[Pod] | None:
                found = (await kube.list(Pod, ns)).items
                return found if len(found) == 2 else None

            for p in await wait_until_async(pods, 60, what="the 2 pods", stall=STALL):
                replica = p.metadata.labels["grove.io/podcliqueset-replica-index"]
                refs = sorted(c["resourceClaimName"] for c in p.spec.resource_claims or ())
                assert refs == sorted([f"rs-{replica}-own", "rs-all-shared"]), p.name

            await kube.patch(PodCliqueSet, "rs", {"spec": {"replicas": 1}}, ns)

            async def scaled_in() -> list[str] | None:
                names = sorted(c.name for c in (await kube.list(ResourceClaim, ns)).items)
                return names if names == ["rs-0-own", "rs-all-shared"] else None

            assert await wait_until_async(scaled_in, 60, what="replica 1's claim gone",
                                          stall=STALL)
        finally:
            await op.stop()


def test_operator_refuses_to_start_without_the_ComputeDomain_CRD(control_plane: Any) -> None:
    async def body() -> None:
        async with control_plane.client() as kube:
            cfg = load_operator_config({
                "apiVersion": "operator.config.grove.io/v1alpha1",
                "kind": "OperatorConfiguration", "network": {"autoMNNVLEnabled": True}})
            op = OperatorManager(kube, cfg)
            with pytest.raises(MNNVLPreflightError) as err:
                await op.start()
            assert "computedomains.resource.nvidia.com" in str(err.value)

    asyncio.run(body())
