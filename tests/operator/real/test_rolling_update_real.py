"""A RollingRecreate on the real kube-apiserver 1.36 (issue 23 item 6): `phalanx operator`
(as a service account, so its writes are in the audit log) and `phalanx scheduler` as
subprocesses, kube-controller-manager's garbage collector, and the stand-in kubelet.

An image change of a running 3-replica PodCliqueSet (a standalone clique of 2 pods and a
scaling group of 2 replicas of 1 pod each) rolls through replica by replica: every pod is
recreated exactly once (the watch sees each original pod go once and no new pod go; the audit
log has one operator delete per standalone pod and per scaling-group PodClique), no two
PodCliqueSet replicas are ever in flight together, and `kubectl get pcs` shows the progress.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.crds import crds
from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import Pod
from phalanx.cluster.retry import update_with_retry
from phalanx.envtest import (
    Pending,
    PhalanxService,
    bind_cluster_role,
    install_crds,
    operator_config,
    running_kubelet,
    start_operator,
    start_phalanx_scheduler,
    wait_until_async,
)
from phalanx.envtest.ports import free_port
from tests.conftest import REAL_SERVER_TIMEOUT

pytestmark = [pytest.mark.real_cluster]

SYSTEM_NS = "rolling-system"
ACCOUNT = "rolling-operator"
REPLICAS = 3
PODS_PER_REPLICA = 2 + 2  # clique a (2 pods) and 2 scaling-group replicas of clique b (1 pod)
# A wait ends when nothing has changed for this long (phalanx.envtest.wait); the test's
# timeout is the backstop.
STALL = 45.0


def _pcs(ns: str, image: str) -> PodCliqueSet:
    def clique(name: str, replicas: int) -> dict[str, Any]:
        res = {"cpu": "100m", "nvidia.com/gpu": "1"}
        return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": {
            "schedulerName": "phalanx-scheduler", "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": image,
                            "resources": {"requests": res, "limits": res}}]}}}

    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": "roll", "namespace": ns},
        "spec": {"replicas": REPLICAS, "template": {
            "cliques": [clique("a", 2), clique("b", 1)],
            "podCliqueScalingGroups": [{"name": "g", "cliqueNames": ["b"], "replicas": 2,
                                        "minAvailable": 1}]}}})


@pytest.fixture
def services(control_plane: Any, fake_nodes: Any, controller_manager: Any
             ) -> Iterator[tuple[list[PhalanxService], str]]:
    """The operator (as service account <system ns>/rolling-operator) and the scheduler;
    yields them and the operator's audit user name."""
    plane = control_plane
    fake_nodes(4, gpus=8, nodes_per_rack=2, racks_per_block=2)
    ns = plane.create_namespace(SYSTEM_NS)
    kubeconfig = plane.service_account_kubeconfig(ns, ACCOUNT)
    bind_cluster_role(plane.server, plane.token, ns, ACCOUNT)

    async def setup() -> None:
        async with plane.client() as kube:
            await install_crds(kube, crds())

    asyncio.run(setup())
    cfg = operator_config(probe_port=free_port(), metrics_port=free_port(),
                          webhook_port=free_port(), lease_namespace=ns)
    started = [start_operator(plane, config=cfg, namespace=ns, name="op-rolling",
                              kubeconfig=kubeconfig)]
    try:
        started.append(start_phalanx_scheduler(plane, name="sched-rolling"))
        yield started, plane.service_account_user(ns, ACCOUNT)
    finally:
        for s in started:
            s.stop()


def test_an_image_change_rolls_replica_by_replica(control_plane: Any, kube_namespace: str,
                                                  services: tuple[list[PhalanxService], str]
                                                  ) -> None:
    plane, ns = control_plane, kube_namespace
    started, user = services
    total = REPLICAS * PODS_PER_REPLICA

    async def body(kube: Any) -> None:
        await kube.create(_pcs(ns, "busybox:1"))

        async def all_ready() -> object:
            pods = (await kube.list(Pod, ns)).items
            ready = [p for p in pods if p.status.phase == "Running" and p.is_ready]
            return pods if len(ready) == total == len(pods) else Pending(len(ready))

        original = await wait_until_async(all_ready, REAL_SERVER_TIMEOUT, interval=0.5,
                                          stall=STALL, what=f"{total} pods Ready")
        by_uid = {p.metadata.uid: p for p in original}
        rv = (await kube.list(Pod, ns)).resource_version
        gone: list[Pod] = []  # pods deleted, in the order the API server saw it
        added: list[Pod] = []

        async def follow() -> None:
            async for ev in kube.watch(Pod, ns, resource_version=rv):
                if ev.type == "DELETED":
                    gone.append(ev.object)
                elif ev.type == "ADDED":
                    added.append(ev.object)

        watcher = asyncio.create_task(follow())
        audit_from = len(plane.audit_events(user=user))
        try:
            def new_image(pcs: PodCliqueSet) -> None:
                for c in pcs.spec.template.cliques:
                    c.spec.pod_spec.containers[0].image = "busybox:2"

            await update_with_retry(kube, PodCliqueSet, "roll", ns, new_image)

            async def rolled() -> object:
                pcs = await kube.get(PodCliqueSet, "roll", ns)
                up = pcs.status.update_progress
                pods = (await kube.list(Pod, ns)).items
                done = (up is not None and up.update_started_at is not None
                        and up.update_ended_at is not None
                        and pcs.status.updated_replicas == REPLICAS
                        # Availability is written after the pods turn Ready: wait for it so
                        # that `kubectl get pcs` below reads the settled row.
                        and pcs.status.available_replicas == REPLICAS
                        and len(pods) == total
                        and all(p.is_ready and p.spec.containers[0].image == "busybox:2"
                                for p in pods))
                return pcs if done else Pending((pcs.status.updated_replicas,
                                                 pcs.status.available_replicas, len(pods)))

            pcs = await wait_until_async(rolled, REAL_SERVER_TIMEOUT, interval=0.5,
                                         stall=STALL, what="the rolling update to finish")
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

        # Each original pod went exactly once; no replacement went at all.
        gone_uids = [p.metadata.uid for p in gone]
        assert sorted(gone_uids) == sorted(by_uid), (len(gone_uids), len(by_uid))
        assert len(added) == total
        # Replica by replica: a replica's first deletion comes after the previous replica's
        # replacements were all added.
        order = [p.metadata.labels[L.LABEL_PODCLIQUESET_REPLICA_INDEX] for p in gone]
        firsts = [order.index(str(i)) for i in range(REPLICAS)]
        assert firsts == sorted(firsts), order
        assert order == sorted(order), order  # never two replicas in flight
        # The audit log: one operator delete per standalone pod and per group PodClique.
        writes = plane.audit_events(user=user)[audit_from:]
        pod_deletes = [e.name for e in writes if e.verb == "delete" and e.resource == "pods"]
        pclq_deletes = [e.name for e in writes
                        if e.verb == "delete" and e.resource == "podcliques"]
        standalone = sorted(p.name for p in original
                            if L.LABEL_PODCLIQUESCALINGGROUP not in p.metadata.labels)
        assert sorted(pod_deletes) == standalone, pod_deletes
        groups = sorted({p.metadata.labels[L.LABEL_PODCLIQUE] for p in original
                         if L.LABEL_PODCLIQUESCALINGGROUP in p.metadata.labels})
        assert sorted(pclq_deletes) == groups, pclq_deletes
        assert pcs.status.update_progress.currently_updating is None or all(
            r.update_ended_at is not None for r in pcs.status.update_progress.currently_updating)

    async def main() -> None:
        async with plane.client() as kube, running_kubelet(kube):
            await asyncio.wait_for(body(kube), REAL_SERVER_TIMEOUT - 5)

    try:
        asyncio.run(main())
    except BaseException:
        for s in started:
            print(f"--- {s.name} (tail) ---\n{s.log_text(4000)}")
        raise
    # `kubectl get pcs` shows the progress: Grove's printer columns.
    out = plane.kubectl("get", "pcs", "roll", namespace=ns).stdout.splitlines()
    head, row = out[0].split(), out[1].split()
    assert head[:8] == ["NAME", "REPLICAS", "AVAILABLE", "UPDATED", "PCLQS-UPDATED",
                        "PCLQS-TOTAL", "PCSGS-UPDATED", "PCSGS-TOTAL"], head
    assert row[:8] == ["roll", "3", "3", "3", "3", "3", "3", "3"], row
