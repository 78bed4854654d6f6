"""`phalanx operator` and `phalanx scheduler` as subprocesses on the real API server: a
PodCliqueSet becomes pods that are gang-scheduled onto fake nodes and run."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api.crds import crds
from phalanx.api.pod import Pod
from phalanx.envtest import (
    Pending,
    install_crds,
    running_kubelet,
    start_operator,
    start_phalanx_scheduler,
    wait_until_async,
)


def pcs(ns: str) -> dict:
    limits = {"cpu": "1", "nvidia.com/gpu": "1"}
    clique = lambda name, n: {"name": name, "spec": {"roleName": name, "replicas": n,  # noqa: E731
        "podSpec": {"schedulerName": "phalanx-scheduler", "containers": [
            {"name": "c", "image": "busybox",
             "resources": {"requests": limits, "limits": limits}}]}}}
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": "demo", "namespace": ns},
            "spec": {"replicas": 1, "template": {"cliques": [clique("leader", 1),
                                                             clique("worker", 2)]}}}


@pytest.fixture(scope="module")
def grove_crds(control_plane):
    async def main():
        async with control_plane.client() as kube:
            await install_crds(kube, crds())

    asyncio.run(main())


@pytest.fixture(scope="module")
def podcliqueset_run(control_plane, grove_crds):
    """One end-to-end run shared by the assertions below: operator and scheduler as
    subprocesses, 2 fake GPU nodes, the stand-in kubelet, a 3-pod PodCliqueSet."""
    from phalanx.api.grove import PodCliqueSet
    from phalanx.envtest import create_nodes, delete_nodes, gpu_cluster_spec

    ns = control_plane.create_namespace("services-e2e")
    operator = start_operator(control_plane)
    scheduler = start_phalanx_scheduler(control_plane)
    outcome: dict = {"operator": operator, "scheduler": scheduler}

    async def main():
        async with control_plane.client() as kube:
            nodes = await create_nodes(kube, gpu_cluster_spec(2, gpus=2, name_prefix="svc"))
            try:
                async with running_kubelet(kube):
                    await kube.create(PodCliqueSet.model_validate(pcs(ns)))

                    async def all_running():
                        pods = (await kube.list(Pod, ns)).items
                        state = sorted((p.name, p.spec.node_name, p.status.phase)
                                       for p in pods)
                        return (len(pods) == 3 and all(s[2] == "Running" for s in state)
                                or Pending(state))

                    outcome["pods"] = await wait_until_async(
                        all_running, 60, what="the 3 pods of the PodCliqueSet Running",
                        interval=0.5)
            finally:
                await delete_nodes(kube, [n.name for n in nodes])

    try:
        asyncio.run(main())
    except BaseException as err:  # reported by each test, with the services' logs
        outcome["error"] = err
    finally:
        operator.stop()
        scheduler.stop()
    return outcome


@pytest.mark.timeout(150)
def test_operator_and_scheduler_subprocesses_run_a_podcliqueset(podcliqueset_run):
    error = podcliqueset_run.get("error")
    assert error is None, (f"{error}\n--- operator:\n"
                           f"{podcliqueset_run['operator'].log_text(3000)}\n--- scheduler:\n"
                           f"{podcliqueset_run['scheduler'].log_text(3000)}")


def test_the_operator_log_holds_no_traceback(podcliqueset_run):
    operator = podcliqueset_run["operator"]
    assert operator.tracebacks() == [], operator.log_text(5000)


def test_the_scheduler_log_holds_no_traceback(podcliqueset_run):
    scheduler = podcliqueset_run["scheduler"]
    assert scheduler.tracebacks() == [], scheduler.log_text(5000)
