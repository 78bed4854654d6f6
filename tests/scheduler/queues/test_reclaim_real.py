"""A KAI reclaim end to end on a real kube-apiserver 1.36 (issue 26 item 6): KAI's Queue CRD
installed (the file `phalanx manifests` ships), the operator and phalanx-scheduler in
process, a simulated kubelet.

One 4-GPU node. Queue A (GPU quota 0, over-quota weight 1) runs two gangs of 2 x 1 GPU:
the node is full. Queue B (GPU quota 2) submits one gang of 2 x 1 GPU: B is within its
quota and A above its own, so B reclaims -- one whole gang of A is evicted (both its pods,
never one), B's gang runs, and A's evicted gang, recreated by the operator, waits (A is at
its fair share). Every pod asks for the node by name, so other tests' nodes do not matter.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.core import Event, Pod
from phalanx.api.crds import crds
from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import Queue, queue_dict
from phalanx.cluster.client import NotFound
from phalanx.envtest import install_crds, running_kubelet, wait_until_async
from phalanx.envtest.crds import uninstall_crds
from phalanx.manifests.install import install_config
from phalanx.manifests.kai_queue import queue_crd
from phalanx.operator import OperatorManager
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework.config import default_profile

pytestmark = [pytest.mark.real_cluster]

STALL = 30.0  # a wait ends when nothing changed this long (phalanx.envtest.wait)
FREE = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def _queue(name: str, gpu_quota: float) -> Queue:
    return Queue.model_validate(queue_dict(
        name, gpu={"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1}, cpu=FREE,
        memory=FREE))


def _pcs(name: str, ns: str, queue: str, node: str, replicas: int) -> PodCliqueSet:
    gpu = {"nvidia.com/gpu": "1"}
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "template": {"cliques": [{
            "name": "w", "labels": {L.LABEL_KAI_QUEUE: queue},
            "spec": {"roleName": "w", "replicas": 2, "podSpec": {
                "schedulerName": "phalanx-scheduler",
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": gpu, "limits": gpu}}]}}}]}}})


def _bound(pods: list[Pod], part_of: str) -> dict[str, list[str]]:
    """PodCliqueSet replica -> its bound, live pods."""
    out: dict[str, list[str]] = {}
    for p in pods:
        labels = p.metadata.labels
        if labels.get(L.LABEL_PART_OF) == part_of and p.spec.node_name and \
                p.metadata.deletion_timestamp is None:
            out.setdefault(labels[L.LABEL_PODCLIQUESET_REPLICA_INDEX], []).append(p.name)
    return out


@pytest.mark.timeout(240)
def test_a_queue_within_quota_reclaims_a_whole_gang(control_plane: Any, kube_namespace: str,
                                                    fake_nodes: Any) -> None:
    ns = kube_namespace
    [node] = fake_nodes(1, gpus=4)
    tag = uuid.uuid4().hex[:6]
    qa, qb = f"team-a-{tag}", f"team-b-{tag}"

    async def main() -> None:
        async with control_plane.client() as kube:
            await install_crds(kube, crds())
            installed = await install_crds(kube, [queue_crd()])
            op = OperatorManager(kube, install_config(scheduler=True))
            sched = Scheduler(kube, [default_profile("phalanx-scheduler")])
            try:
                await kube.create(_queue(qa, 0))
                await kube.create(_queue(qb, 2))
                await op.start()
                await sched.start()
                async with running_kubelet(kube):
                    await kube.create(_pcs("a", ns, qa, node, replicas=2))

                    async def a_full() -> dict[str, list[str]] | None:
                        got = _bound((await kube.list(Pod, ns)).items, "a")
                        return got if sum(map(len, got.values())) == 4 else None

                    await wait_until_async(a_full, 60, what="queue A's 2 gangs bound",
                                           stall=STALL)
                    await kube.create(_pcs("b", ns, qb, node, replicas=1))

                    async def reclaimed() -> tuple[Any, Any] | None:
                        pods = (await kube.list(Pod, ns)).items
                        a, b = _bound(pods, "a"), _bound(pods, "b")
                        done = sum(map(len, b.values())) == 2 and \
                            sum(map(len, a.values())) == 2
                        return (a, pods) if done else None

                    a, pods = await wait_until_async(reclaimed, 90, stall=STALL,
                                                     what="queue B's gang bound by reclaim")
                    # One whole gang of A kept both its pods; the other lost both.
                    assert len(a) == 1 and len(next(iter(a.values()))) == 2, a
                    waiting = [p for p in pods if p.metadata.labels.get(L.LABEL_PART_OF) == "a"
                               and not p.spec.node_name]
                    assert len(waiting) == 2, [p.name for p in waiting]
                    events = (await kube.list(Event, ns)).items
                    said = {e.involved_object.name: e.message for e in events
                            if e.reason == "Preempted"}
                    assert len(said) == 2 and all(f"queue {qb}" in m for m in said.values()), said
            finally:
                await sched.stop()
                await op.stop()
                for name in ("a", "b"):
                    with contextlib.suppress(NotFound):
                        await kube.delete(PodCliqueSet, name, ns)
                await uninstall_crds(kube, installed)

    asyncio.run(main())
