"""Grove's workload plumbing on a real kube-apiserver 1.36 (issue 24), with
kube-controller-manager's EndpointSlice controller running:

- the headless Service of each PodCliqueSet replica exists (clusterIP None), and its
  EndpointSlices list the replica's pods -- not-ready ones too, as publishNotReadyAddresses
  (Grove's default) says -- by the hostnames the pods carry;
- the pods carry Grove's variables first, in Grove's order, with fieldRefs, and the API
  server accepted them (every write is fieldValidation=Strict);
- the HorizontalPodAutoscaler passes strict validation and its scaleTargetRef resolves
  through the PodClique's /scale subresource;
- `kubectl scale` of a PodClique and of a scaling group sticks, and so does the kube
  client's `update_scale` (PUT .../scale: the server's precondition and validation).

The test stands in for the kubelet itself: it gives the pods an IP (status.podIP), which
is all the EndpointSlice controller needs; no scheduler runs (pods stay gated, which the
Service does not care about). The startup waiter: test_startup_waiter_real.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.core import Pod, Service
from phalanx.api.crds import crds
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet
from phalanx.cluster.client import Conflict, Invalid, NotFound
from phalanx.cluster.retry import update_with_retry
from phalanx.cluster.scale import Scale, scale_of
from phalanx.envtest import install_crds, wait_until_async
from phalanx.operator import OperatorManager
from tests.podnames import hostname

# Each wait ends when nothing changed for this long (phalanx.envtest.wait); the test's own
# timeout (tests/conftest.py) is the backstop.
STALL = 30.0


def _pcs(ns: str) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": "svc", "namespace": ns},
        "spec": {"replicas": 1, "template": {
            "cliques": [
                {"name": "router", "spec": {
                    "roleName": "router", "replicas": 2,
                    "autoScalingConfig": {"maxReplicas": 5, "metrics": [{
                        "type": "Resource", "resource": {"name": "cpu", "target": {
                            "type": "Utilization", "averageUtilization": 80}}}]},
                    "podSpec": {"containers": [{"name": "c", "image": "busybox", "env": [
                        {"name": "PEER", "value": "$(GROVE_PCLQ_NAME)-0.$(GROVE_HEADLESS_SERVICE)"},
                        {"name": "GROVE_PCS_NAME", "value": "replaced"}]}]}}},
                {"name": "worker", "spec": {"roleName": "worker", "replicas": 1, "podSpec": {
                    "containers": [{"name": "c", "image": "busybox"}]}}}],
            "podCliqueScalingGroups": [{"name": "grp", "cliqueNames": ["worker"],
                                        "replicas": 1, "minAvailable": 1}]}}})


def _kubectl_json(plane: Any, ns: str, *args: str) -> Any:
    return json.loads(plane.kubectl(*args, "-o", "json", namespace=ns).stdout)


def test_headless_service_env_hpa_and_scale(control_plane: Any, kube_namespace: str) -> None:
    plane, ns = control_plane, kube_namespace
    plane.start_controller_manager(("garbagecollector", "namespace", "endpointslice"))
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
            # Hostnames: the API server generates the names (generateName `<podclique>-`).
            pod_names = ["svc-0-router-0", "svc-0-router-1", "svc-0-grp-0-worker-0"]

            async def pods() -> list[Pod] | None:
                got = (await kube.list(Pod, ns)).items
                return got if sorted(hostname(p) for p in got) == sorted(pod_names) else None

            created = await wait_until_async(pods, 60, what="the pods", stall=STALL)

            # Env: Grove's order, the user's same-named variable replaced, accepted.
            router = next(p for p in created if hostname(p) == "svc-0-router-0")
            assert router.name.startswith("svc-0-router-") and router.name != "svc-0-router-0"
            env = router.spec.containers[0].env
            assert [e.name for e in env] == [
                L.ENV_PCS_NAME, L.ENV_PCS_INDEX, L.ENV_PCLQ_NAME, L.ENV_HEADLESS_SERVICE,
                L.ENV_PCLQ_POD_INDEX, "PEER"]
            assert env[0].value == "svc"
            assert env[3].value == f"svc-0.{ns}.svc.cluster.local"
            worker = next(p for p in created if "worker" in p.name)
            assert [e.name for e in worker.spec.containers[0].env][-3:] == [
                L.ENV_PCSG_NAME, L.ENV_PCSG_TEMPLATE_NUM_PODS, L.ENV_PCSG_INDEX]

            # The Service, and its EndpointSlices once the pods have IPs (not Ready).
            svc = await kube.get(Service, "svc-0", ns)
            assert svc.spec.cluster_ip == "None" and svc.spec.publish_not_ready_addresses
            for k, pod in enumerate(created):
                def give_ip(p: Pod, ip: str = f"10.0.0.{k + 10}") -> None:
                    p.status.pod_ip, p.status.pod_ips = ip, [{"ip": ip}]

                await update_with_retry(kube, Pod, pod.name, ns, give_ip, status=True)

            def endpoints() -> dict[str, bool] | None:
                slices = _kubectl_json(plane, ns, "get", "endpointslices", "-l",
                                       "kubernetes.io/service-name=svc-0")["items"]
                got = {ep.get("hostname", ""): ep.get("conditions", {}).get("ready")
                       for s in slices for ep in s.get("endpoints") or ()}
                return got if len(got) == len(pod_names) else None

            listed = await wait_until_async(lambda: asyncio.to_thread(endpoints), 60,
                                            what="EndpointSlices of svc-0", stall=STALL)
            assert sorted(listed) == sorted(pod_names)  # by the pods' hostnames
            # publishNotReadyAddresses: listed as ready although no pod is Ready.
            assert all(listed.values())

            # The HPA: accepted, and its target's /scale answers with our selector.
            hpa = await kube.get(HorizontalPodAutoscaler, "svc-0-router", ns)
            assert hpa.spec.scale_target_ref.kind == "PodClique"
            def scale() -> dict | None:
                got = json.loads(plane.kubectl(
                    "get", "--raw", f"/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques/"
                    "svc-0-router/scale").stdout)
                return got if got.get("status", {}).get("selector") else None

            got = await wait_until_async(lambda: asyncio.to_thread(scale), 60,
                                         what="the PodClique's /scale selector", stall=STALL)
            assert got["spec"]["replicas"] == 2
            assert "grove.io/podclique=svc-0-router" in got["status"]["selector"]

            # kubectl scale sticks, for a PodClique and for a scaling group.
            plane.kubectl("scale", "podcliques/svc-0-router", "--replicas=3", namespace=ns)
            plane.kubectl("scale", "podcliquescalinggroups/svc-0-grp", "--replicas=2",
                          namespace=ns)

            async def scaled() -> bool:
                n = len((await kube.list(Pod, ns)).items)
                return n == 3 + 1 * 2 or None  # type: ignore[return-value]

            await wait_until_async(scaled, 60, what="pods of the scaled objects", stall=STALL)
            await op.wait_idle(timeout=30)
            assert (await kube.get(PodClique, "svc-0-router", ns)).spec.replicas == 3
            assert (await kube.get(PodCliqueScalingGroup, "svc-0-grp", ns)).spec.replicas == 2

            # The kube client's scale goes through /scale too (issue 24): the server's view
            # (selector from the CRD's labelSelectorPath), its write, its resourceVersion
            # precondition and its Scale validation.
            for kind, name, before, after in ((PodClique, "svc-0-router", 3, 4),
                                              (PodCliqueScalingGroup, "svc-0-grp", 2, 1)):
                got_scale = await kube.get_scale(kind, name, ns)
                assert (got_scale.name, got_scale.replicas) == (name, before)
                assert got_scale.selector == scale_of(await kube.get(kind, name, ns)).selector
                stale = Scale(name, ns, after + 1, resource_version=got_scale.resource_version)
                got_scale.replicas = after
                assert (await kube.update_scale(kind, got_scale)).replicas == after
                with pytest.raises(Conflict):
                    await kube.update_scale(kind, stale)
                with pytest.raises(Invalid) as refused:
                    await kube.update_scale(kind, Scale(name, ns, -1))
                assert refused.value.field == ".spec.replicas"  # the CRD's specReplicasPath
                assert "should be a non-negative integer" in refused.value.message
                with pytest.raises(NotFound, match="no scale subresource"):
                    await kube.get_scale(Service, "svc-0", ns)
            await op.wait_idle(timeout=30)
            assert (await kube.get(PodClique, "svc-0-router", ns)).spec.replicas == 4
            assert (await kube.get(PodCliqueScalingGroup, "svc-0-grp", ns)).spec.replicas == 1
        finally:
            await op.stop()
