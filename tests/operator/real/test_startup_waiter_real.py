"""Startup order on a real kube-apiserver 1.36 (issue 24 item 4), with
kube-controller-manager's token controller filling the per-PodCliqueSet token Secret:

- the operator, running as a ServiceAccount bound to the install's operator ClusterRole
  (phalanx.manifests), creates Grove's ServiceAccount `<pcs>`, Secret `<pcs>-ic-sat`, Role
  and RoleBinding `grove.io:pcs:<pcs>` -- so the install's RBAC suffices, including RBAC's
  escalation check on the Role -- and the later clique's pod carries the grove-initc init
  container (accepted under strict field validation);
- `phalanx startup-wait`, run out of cluster with exactly that init container's arguments
  and the Secret's token, blocks while the parent clique has fewer Ready pods than it
  needs -- the test stands in for the kubelet and marks them Ready one at a time -- and
  exits 0 once it has them;
- the token is least privilege: it reads pods in its own namespace and nothing else -- not
  another PodCliqueSet's pods in another namespace (the waiter then exits 1 naming the
  cause), not Secrets, and it cannot write pods. RBAC cannot narrow a list by labels, so,
  as in Grove, the namespace is the boundary.
"""

from __future__ import annotations

import asyncio
import base64
import sys
from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.api.crds import crds
from phalanx.api.grove import PodCliqueSet
from phalanx.api.rbac import Role, RoleBinding, Secret, ServiceAccount
from phalanx.cluster.client import Forbidden, NotFound
from phalanx.cluster.kube import KubeCluster, connection_for
from phalanx.cluster.retry import update_with_retry
from phalanx.envtest import apply_documents, install_crds, wait_until_async
from phalanx.envtest.kubeconfig import write_kubeconfig
from phalanx.manifests.install import InstallOptions, install_manifests
from phalanx.operator import OperatorManager
from phalanx.operator.startupwaiter import INIT_CONTAINER_NAME

# Each wait ends when nothing changed for this long (phalanx.envtest.wait); the test's own
# timeout (tests/conftest.py) is the backstop.
STALL = 30.0
# The waiter's process start (Python imports) plus one list and watch: bounded by this.
WAITER_LINE = 60.0


def _pcs(name: str, ns: str) -> PodCliqueSet:
    def clique(cname: str, replicas: int) -> dict:
        return {"name": cname, "spec": {"roleName": cname, "replicas": replicas, "podSpec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}

    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1, "template": {
            "cliqueStartupType": "CliqueStartupTypeInOrder",
            "cliques": [clique("leader", 2), clique("worker", 1)]}}})


def test_startup_waiter_blocks_until_parents_ready(control_plane: Any,
                                                   kube_namespace: str) -> None:
    plane, ns = control_plane, kube_namespace
    other_ns = plane.create_namespace("startup-other")
    assert plane.apiserver is not None
    plane.start_controller_manager(
        ("serviceaccount-token-controller", "garbage-collector-controller"),
        extra_args=[f"--service-account-private-key-file={plane.apiserver.sa_key}"])
    try:
        asyncio.run(_scenario(plane, ns, other_ns))
    finally:
        plane.stop_controller_manager()


def _operator_rbac(ns: str) -> list[dict[str, Any]]:
    """The install's operator ClusterRole (named for this test, so nothing else on the
    shared server is touched) bound to ServiceAccount `ns/operator`."""
    docs = [d for d in install_manifests(InstallOptions(namespace=ns, webhook=False))
            if d["kind"] in ("ClusterRole", "ClusterRoleBinding")
            and d["metadata"]["name"] == "phalanx-operator"]
    for doc in docs:
        doc["metadata"]["name"] = f"{ns}-phalanx-operator"
        if doc["kind"] == "ClusterRoleBinding":
            doc["roleRef"]["name"] = f"{ns}-phalanx-operator"
            doc["subjects"] = [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}]
    assert len(docs) == 2
    return docs


async def _scenario(plane: Any, ns: str, other_ns: str) -> None:
    rbac = _operator_rbac(ns)
    async with plane.client() as kube:
        await install_crds(kube, crds())
        await apply_documents(kube, rbac)
        operator_client = await KubeCluster.connect(
            str(plane.service_account_kubeconfig(ns, "operator")), field_manager="phalanx")
        op = OperatorManager(operator_client)
        try:
            await op.start()
            await kube.create(_pcs("order", ns))
            await kube.create(_pcs("elsewhere", other_ns))

            async def token() -> str | None:
                try:
                    secret = await kube.get(Secret, "order-ic-sat", ns)
                except NotFound:
                    return None
                raw = (secret.data or {}).get("token")
                return base64.b64decode(raw).decode() if raw else None

            sa_token = await wait_until_async(token, 60, what="the token Secret's token",
                                              stall=STALL)
            async def eventually(kind: Any, name: str) -> Any:
                async def get() -> Any:
                    try:
                        return await kube.get(kind, name, ns)
                    except NotFound:
                        return None

                return await wait_until_async(get, 60, what=f"{kind.KIND} {name}",
                                              stall=STALL)

            # Grove's names, and the Role's rules as Grove's.
            assert (await eventually(ServiceAccount, "order")).automount_service_account_token
            role = await eventually(Role, "grove.io:pcs:order")
            assert [(r.api_groups, r.resources, r.verbs) for r in role.rules or ()] == [
                ([""], ["pods", "pods/status"], ["get", "list", "watch"])]
            # The RoleBinding follows its Role (the API server resolves it when checking it).
            binding = await eventually(RoleBinding, "grove.io:pcs:order")
            assert [(s.kind, s.name) for s in binding.subjects or ()] == [
                ("ServiceAccount", "order")]

            async def worker_pod() -> Pod | None:
                pods = (await kube.list(Pod, ns, label_selector={
                    "grove.io/podclique": "order-0-worker"})).items
                return pods[0] if pods else None

            worker = await wait_until_async(worker_pod, 60, what="the worker pod", stall=STALL)
            initc = next(c for c in worker.spec.init_containers or ()
                         if c.name == INIT_CONTAINER_NAME)
            assert initc.args == ["startup-wait", "--podcliques=order-0-leader:2"]
            assert {v["name"] for v in worker.spec.volumes or ()} >= {
                "sa-token-secret-vol", "pod-info-vol"}

            async def leaders() -> list[Pod] | None:
                pods = (await kube.list(Pod, ns, label_selector={
                    "grove.io/podclique": "order-0-leader"})).items
                return pods if len(pods) == 2 else None

            leader_pods = await wait_until_async(leaders, 60, what="the leader pods",
                                                 stall=STALL)
            kubeconfig = write_kubeconfig(plane.workdir / f"kubeconfig-waiter-{ns}",
                                          plane.server, sa_token, namespace=ns,
                                          name="waiter")
            await _run_waiter(kube, ns, str(kubeconfig), list(initc.args or ())[1:],
                              [p.name for p in leader_pods])
            await _least_privilege(plane, ns, other_ns, sa_token, str(kubeconfig))
        finally:
            await op.stop()
            await operator_client.close()
            for doc in rbac:
                await kube.transport.request(
                    "DELETE", f"/apis/rbac.authorization.k8s.io/v1/{doc['kind'].lower()}s/"
                    f"{doc['metadata']['name']}")


async def _set_ready(kube: KubeCluster, ns: str, name: str) -> None:
    def ready(p: Pod) -> None:
        p.set_condition("Ready", True, "")

    await update_with_retry(kube, Pod, name, ns, ready, status=True)


async def _line(stream: asyncio.StreamReader, wanted: str) -> str:
    """The waiter's next log line containing `wanted` (the ones before it are skipped)."""
    while True:
        raw = await asyncio.wait_for(stream.readline(), WAITER_LINE)
        if not raw:
            raise AssertionError(f"the waiter ended before logging {wanted!r}")
        line = raw.decode().rstrip()
        if wanted in line:
            return line


async def _run_waiter(kube: KubeCluster, ns: str, kubeconfig: str, args: list[str],
                      leaders: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "phalanx.cli.main", "startup-wait", *args,
        "--kubeconfig", kubeconfig, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    try:
        await _line(proc.stderr, "parents: order-0-leader 0/2 Ready")
        await _set_ready(kube, ns, leaders[0])
        await _line(proc.stderr, "parents: order-0-leader 1/2 Ready")
        assert proc.returncode is None  # still blocked: one of two
        await _set_ready(kube, ns, leaders[1])
        await _line(proc.stderr, "all parent PodCliques are ready: order-0-leader 2/2 Ready")
        assert await asyncio.wait_for(proc.wait(), WAITER_LINE) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _least_privilege(plane: Any, ns: str, other_ns: str, sa_token: str,
                           kubeconfig: str) -> None:
    async with KubeCluster.from_connection(connection_for(plane.server, token=sa_token,
                                                          insecure=True)) as waiter:
        assert (await waiter.list(Pod, ns)).items  # its own namespace's pods: yes
        with pytest.raises(Forbidden):
            await waiter.list(Pod, other_ns)  # the other PodCliqueSet's pods
        with pytest.raises(Forbidden):
            await waiter.get(Secret, "order-ic-sat", ns)
        pod = (await waiter.list(Pod, ns)).items[0]
        pod.metadata.labels["touched"] = "yes"
        with pytest.raises(Forbidden):
            await waiter.update(pod)
    # The waiter itself, pointed at the other namespace, fails clearly with exit code 1.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "phalanx.cli.main", "startup-wait",
        "--podcliques=elsewhere-0-leader:1", "--namespace", other_ns,
        "--kubeconfig", kubeconfig, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    line = await _line(proc.stderr, "may not read pods")
    assert other_ns in line
    assert await asyncio.wait_for(proc.wait(), WAITER_LINE) == 1
