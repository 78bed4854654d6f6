"""KubeCluster, manifests and the operator end to end against a real kube-apiserver + etcd.

Skipped unless KUBEBUILDER_ASSETS points at envtest binaries (see docs/real-cluster.md).
These run on a real event loop: a real server answers in real time.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.api.core import ConfigMap
from phalanx.api.pod import Pod
from phalanx.cluster.client import AlreadyExists, Conflict, Gone, NotFound
from phalanx.cluster.kube import KubeCluster, connection_for

from . import envtest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(envtest.assets() is None, reason=envtest.SKIP_REASON)]


@pytest.fixture(scope="module")
def apiserver() -> Iterator[envtest.Envtest]:
    env = envtest.start(envtest.assets())  # type: ignore[arg-type]
    try:
        yield env
    finally:
        env.stop()


def run(env: envtest.Envtest, body: Any) -> None:
    async def main() -> None:
        kube = KubeCluster.from_connection(
            connection_for(env.server, token=env.token, insecure=True))
        try:
            await body(kube)
        finally:
            await kube.close()

    asyncio.run(main())


def test_crud_conflict_and_watch(apiserver: envtest.Envtest) -> None:
    async def body(kube: KubeCluster) -> None:
        cm = ConfigMap.model_validate({"metadata": {"name": "a", "namespace": "default"},
                                       "data": {"x": "1"}})
        created = await kube.create(cm)
        with pytest.raises(AlreadyExists):
            await kube.create(cm)
        listed = await kube.list(ConfigMap, "default")
        stream = kube.watch(ConfigMap, "default", resource_version=listed.resource_version)
        created.data = {"x": "2"}
        await kube.update(created)
        created.data = {"x": "3"}
        with pytest.raises(Conflict):
            await kube.update(created)
        await kube.delete(ConfigMap, "a", "default")
        seen = []
        async for ev in stream:
            seen.append(ev.type)
            if ev.type == "DELETED":
                break
        assert seen == ["MODIFIED", "DELETED"]
        with pytest.raises(NotFound):
            await kube.get(ConfigMap, "a", "default")
        with pytest.raises(Gone):
            async for _ in kube.watch(ConfigMap, "default", resource_version="1"):
                pass

    run(apiserver, body)


def test_pod_gates_update_and_binding(apiserver: envtest.Envtest) -> None:
    async def body(kube: KubeCluster) -> None:
        pod = Pod.model_validate({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}]}})
        pod = await kube.create(pod)
        pod.spec.scheduling_gates = []  # a merge patch; defaulted fields stay untouched
        pod = await kube.update(pod)
        await kube.bind("p", "default", "node-1")
        assert (await kube.get(Pod, "p", "default")).spec.node_name == "node-1"

    run(apiserver, body)


def test_events_go_through_events_k8s_io(apiserver: envtest.Envtest) -> None:
    from phalanx.api.core import Event
    from phalanx.cluster.events import EventRecorder

    async def body(kube: KubeCluster) -> None:
        cm = await kube.create(ConfigMap.model_validate(
            {"metadata": {"name": "evented", "namespace": "default"}}))
        rec = EventRecorder(kube, "phalanx-test", max_similar=1)
        # A repeat (a series patch), then a combined Event whose note changes (core/v1 patch).
        for message in ("first", "first", "second", "third"):
            rec.normal(cm, "Tested", message)
            await rec.flush()
        assert rec.failed == 0
        events = [e for e in (await kube.list(Event, "default")).items
                  if e.involved_object.name == "evented"]
        by_note = {e.message: e for e in events}
        assert by_note["first"].occurrences == 2
        assert by_note["(combined from similar events): third"].occurrences == 2
        v1 = await kube.transport.request(
            "GET", f"/apis/events.k8s.io/v1/namespaces/default/events/{by_note['first'].name}")
        assert v1["series"]["count"] == 2 and v1["reportingController"] == "phalanx-test"
        assert v1["action"] == "Tested" and v1["eventTime"]

    run(apiserver, body)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_accepts_the_install_manifests(apiserver: envtest.Envtest) -> None:
    from phalanx.manifests import install_manifests, to_yaml

    stream = to_yaml(install_manifests())
    for mode in ("client", "server"):
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(apiserver.kubeconfig()), "apply",
             f"--dry-run={mode}", "-f", "-"], input=stream, capture_output=True, text=True,
            timeout=120)
        if mode == "server" and "the server could not find the requested resource" in out.stderr:
            continue  # custom resources of CRDs not installed by a dry run
        assert out.returncode == 0, out.stderr


PCS = {
    "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
    "metadata": {"name": "demo", "namespace": "default"},
    "spec": {"replicas": 1, "template": {"cliques": [
        {"name": "leader", "spec": {"roleName": "leader", "replicas": 1, "podSpec": {
            "schedulerName": "phalanx-scheduler",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}}}]}}},
        {"name": "worker", "spec": {"roleName": "worker", "replicas": 2, "podSpec": {
            "schedulerName": "phalanx-scheduler",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}}}]}}},
    ]}},
}


def test_podcliqueset_end_to_end(apiserver: envtest.Envtest) -> None:
    """CRDs installed, operator + gang scheduler + simulated kubelet on KubeCluster: the
    PodCliqueSet's pods are created, gang-scheduled onto (fake) Nodes and run."""
    from phalanx.api.core import Node
    from phalanx.api.crds import crds
    from phalanx.api.grove import PodCliqueSet
    from phalanx.cluster.clock import wait_for_condition
    from phalanx.operator.manager import OperatorManager
    from phalanx.scheduler import Scheduler
    from phalanx.sim.kubelet import Kubelet

    async def body(kube: KubeCluster) -> None:
        for crd in crds():
            await kube.transport.request(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)
        assert await wait_for_condition(lambda: kube.serves(PodCliqueSet), timeout=30,
                                        interval=0.5)
        for i in range(2):
            await kube.create(Node.model_validate({
                "metadata": {"name": f"node-{i}"},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}))
        operator, scheduler, kubelet = OperatorManager(kube), Scheduler(kube), Kubelet(kube)
        await operator.start()
        await scheduler.start()
        await kubelet.start()
        try:
            await kube.create(PodCliqueSet.model_validate(PCS))

            async def running() -> bool:
                pods = (await kube.list(Pod, "default")).items
                return len(pods) == 3 and all(p.status.phase == "Running" for p in pods)

            assert await wait_for_condition(running, timeout=60, interval=0.5)
        finally:
            await kubelet.stop()
            await scheduler.stop()
            await operator.stop()

    run(apiserver, body)
