"""The harness on the real control plane: readiness, kubectl, fake nodes, kube-scheduler
binding onto them, the stand-in kubelet, and the garbage collector of the controller-manager."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from phalanx.api.core import ConfigMap, Node
from phalanx.api.pod import Pod
from phalanx.cluster.client import NotFound
from phalanx.envtest import NOT_READY_TAINT, running_kubelet, wait_until_async
from phalanx.envtest.ports import http_get


def pod(name: str, ns: str, *, gpus: int = 1, scheduler: str | None = None,
        owner: ConfigMap | None = None) -> Pod:
    limits = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    meta: dict = {"name": name, "namespace": ns}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "name": owner.name, "uid": owner.metadata.uid}]
    spec: dict = {"containers": [{"name": "c", "image": "busybox",
                                  "resources": {"requests": limits, "limits": limits}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return Pod.model_validate({"metadata": meta, "spec": spec})


def test_ready_means_readyz_openapi_and_the_default_namespace(control_plane):
    for path in ("/readyz", "/openapi/v2", "/api/v1/namespaces/default"):
        assert http_get(control_plane.server + path, token=control_plane.token)[0] == 200
    # The Workload API is served (runtime-config + feature gates).
    status, body = http_get(control_plane.server + "/apis/scheduling.k8s.io/v1alpha2",
                            token=control_plane.token)
    assert status == 200 and {"workloads", "podgroups"} <= {
        r["name"] for r in json.loads(body)["resources"]}


def test_kubectl_works_with_the_kubeconfig(control_plane, kube_namespace):
    kubectl = control_plane.binaries.require("kubectl")
    out = subprocess.run([kubectl, "--kubeconfig", control_plane.kubeconfig, "get", "ns",
                          kube_namespace, "-o", "jsonpath={.status.phase}"],
                         capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout) == (0, "Active"), out.stderr


def test_fake_nodes_are_ready_untainted_and_labelled(control_plane, fake_nodes):
    names = fake_nodes(3, gpus=4, nodes_per_rack=2)

    async def main():
        async with control_plane.client() as kube:
            nodes = [await kube.get(Node, n) for n in names]
        for node in nodes:
            assert node.is_ready
            assert not [t for t in node.spec.taints or () if t.key == NOT_READY_TAINT]
            assert node.status.allocatable["nvidia.com/gpu"] == "4"
            assert node.metadata.labels["kubernetes.io/hostname"] == node.name
        racks = [n.metadata.labels for n in nodes]
        assert len({tuple(sorted(r.items())) for r in racks}) == 3
        assert any("rack" in k for k in racks[0])

    asyncio.run(main())


def test_kube_scheduler_binds_onto_fake_nodes_and_the_kubelet_runs_the_pods(
        control_plane, kube_namespace, fake_nodes, kube_scheduler):
    names = fake_nodes(2, gpus=1)
    ns = kube_namespace

    async def main():
        async with control_plane.client() as kube:
            async with running_kubelet(kube):
                for i in range(3):  # 2 GPUs in all: the third pod cannot fit
                    await kube.create(pod(f"p{i}", ns))

                async def two_running():
                    pods = (await kube.list(Pod, ns)).items
                    state = sorted((p.name, p.spec.node_name, p.status.phase) for p in pods)
                    running = [s for s in state if s[2] == "Running"]
                    return len(running) == 2 or Pending(state)

                await wait_until_async(two_running, 60, what="2 of 3 pods Running", interval=0.3)
                pods = {p.name: p for p in (await kube.list(Pod, ns)).items}
                assert sorted(p.spec.node_name for p in pods.values() if p.spec.node_name) == \
                    sorted(names)
                pending = [p for p in pods.values() if not p.spec.node_name]
                assert len(pending) == 1

                async def unschedulable():
                    p = await kube.get(Pod, pending[0].name, ns)
                    cond = next((c for c in p.status.conditions if c.type == "PodScheduled"),
                                None)
                    return (cond is not None and cond.reason == "Unschedulable"
                            and "nvidia.com/gpu" in (cond.message or "")) or Pending(cond)

                await wait_until_async(unschedulable, 30, what="the third pod Unschedulable "
                                       "for lack of nvidia.com/gpu")

    from phalanx.envtest import Pending

    asyncio.run(main())


def test_controller_manager_collects_dependents(control_plane, kube_namespace,
                                                controller_manager):
    ns = kube_namespace

    async def main():
        async with control_plane.client() as kube:
            owner = await kube.create(ConfigMap.model_validate(
                {"metadata": {"name": "owner", "namespace": ns}}))
            await kube.create(pod("dependent", ns, owner=owner))
            await kube.delete(ConfigMap, "owner", ns)

            async def collected():
                try:
                    await kube.get(Pod, "dependent", ns)
                except NotFound:
                    return True
                return False

            await wait_until_async(collected, 60, what="the garbage collector to delete the "
                                   "dependent pod", interval=0.3)

    asyncio.run(main())


@pytest.mark.timeout(120)
def test_a_stopped_plane_leaves_no_process():
    from phalanx.envtest import BinariesNotFound, ControlPlane, find_binaries, live_processes

    try:
        binaries = find_binaries()
    except BinariesNotFound as err:
        pytest.skip(str(err))
    plane = ControlPlane.start(binaries=binaries, scheduler=True)
    pids = [p.pid for p in live_processes()
            if p in (plane.etcd.process, plane.apiserver.process, plane.scheduler.process)]
    assert len(pids) == 3
    plane.stop()
    assert not plane.workdir.exists()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            import os
            os.kill(pid, 0)


def test_the_audit_log_holds_service_accounts_writes_not_the_admins(control_plane,
                                                                     kube_namespace):
    ns = kube_namespace
    sa_kubeconfig = control_plane.service_account_kubeconfig(ns, "writer")
    user = control_plane.service_account_user(ns, "writer")
    def create_as_sa():
        return subprocess.run(
            [control_plane.binaries.require("kubectl"), "--kubeconfig", sa_kubeconfig,
             "create", "configmap", "by-sa", "-n", ns], capture_output=True, text=True,
            timeout=30)

    out = create_as_sa()  # RBAC: the service account may do nothing yet
    assert out.returncode != 0 and "forbidden" in out.stderr
    control_plane.kubectl("create", "role", "writer", "--verb=create",
                          "--resource=configmaps", namespace=ns)
    control_plane.kubectl("create", "rolebinding", "writer", "--role=writer",
                          f"--serviceaccount={ns}:writer", namespace=ns)
    out = create_as_sa()
    assert out.returncode == 0, out.stderr
    control_plane.kubectl("create", "configmap", "by-admin", namespace=ns)
    writes = [(w.verb, w.resource, w.name, w.code) for w in control_plane.audit_events(user)]
    assert writes == [("create", "configmaps", "", 403), ("create", "configmaps", "by-sa", 201)]
    assert not [w for w in control_plane.audit_events() if w.name == "by-admin"]


def test_the_stand_in_kubelet_finishes_deleting_a_running_pod(control_plane, kube_namespace,
                                                              fake_nodes):
    """A bound pod's delete only sets deletionTimestamp; the kubelet removes it."""
    [node] = fake_nodes(1, gpus=1)
    ns = kube_namespace

    async def main():
        async with control_plane.client() as kube:
            async with running_kubelet(kube) as kubelet:
                bound = pod("bound", ns)
                bound.spec.node_name = node
                await kube.create(bound)
                await wait_until_async(
                    lambda: _phase(kube, "bound", ns, "Running"), 30, what="bound Running")
                await kube.delete(Pod, "bound", ns)

                async def gone():
                    try:
                        p = await kube.get(Pod, "bound", ns)
                    except NotFound:
                        return True
                    return Pending(f"deletionTimestamp {p.metadata.deletion_timestamp}")

                await wait_until_async(gone, 30, what="the deleted pod gone", interval=0.2)
                assert kubelet.terminated == 1

    from phalanx.envtest import Pending

    asyncio.run(main())


async def _phase(kube, name, ns, phase):
    return (await kube.get(Pod, name, ns)).status.phase == phase
