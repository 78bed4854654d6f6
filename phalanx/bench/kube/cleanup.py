"""Between runs: every pod and gang object of a finished run deleted, so the next scheduler
starts on empty nodes.

Pods bound to the fake nodes have no kubelet to confirm their end, so they are deleted with
`gracePeriodSeconds: 0` (what a kubelet's final confirmation does). A 1.36 PodGroup keeps
the `scheduling.k8s.io/podgroup-protection` finalizer until no pod names it; the bench runs
no controller-manager, so once its pods are gone the finalizer is removed here.

A collection DELETE answers only once every item is deleted: thousands of pods on a loaded
machine outlast the client's 30 s request timeout. Such a timeout is not a failure here:
what is left is deleted again until nothing is (bounded by the run's own timeout).
"""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Pod
from phalanx.api.podgang import PodGang
from phalanx.api.workloads import PodGroupV1Alpha2, WorkloadV1Alpha2
from phalanx.cluster.client import NotFound, ServiceUnavailable
from phalanx.cluster.kube.paths import MERGE_PATCH, collection_path, object_path
from phalanx.envtest import Pending, wait_until_async

NOW = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
       "propagationPolicy": "Background"}


async def _delete_all(kube: Any, kind: type, namespace: str) -> None:
    try:
        await kube.transport.request("DELETE", collection_path(kind, namespace), body=NOW,
                                     kind=kind.KIND)
    except NotFound:  # the kind is not served (e.g. no Workload API)
        pass
    except ServiceUnavailable:  # timed out while the server deleted: the caller checks
        pass


async def _names(kube: Any, kind: type, namespace: str) -> list[str]:
    try:
        data = await kube.transport.request("GET", collection_path(kind, namespace),
                                            query=[("limit", "500")], kind=kind.KIND)
    except NotFound:
        return []
    return [(i.get("metadata") or {}).get("name", "") for i in data.get("items") or ()]


async def delete_run(kube: Any, namespace: str, timeout: float = 600.0) -> None:
    """Delete the run's pods, then its gang objects; return once all are gone."""
    await _delete_all(kube, Pod, namespace)

    async def no_pods() -> object:
        left = await _names(kube, Pod, namespace)
        if left:
            await _delete_all(kube, Pod, namespace)  # what a timed-out DELETE left
        return not left or Pending(f"{len(left)} pods left in {namespace}")

    await wait_until_async(no_pods, timeout, what=f"every pod of {namespace} deleted",
                           interval=0.5)
    for kind in (PodGroupV1Alpha2, WorkloadV1Alpha2, PodGang):
        await _delete_all(kube, kind, namespace)
    for name in await _names(kube, PodGroupV1Alpha2, namespace):
        try:
            await kube.transport.request(
                "PATCH", object_path(PodGroupV1Alpha2, name, namespace),
                body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH,
                kind="PodGroup", name=name)
        except NotFound:
            pass

    async def no_gangs() -> object:
        left = {k.KIND: len(await _names(kube, k, namespace))
                for k in (PodGroupV1Alpha2, WorkloadV1Alpha2, PodGang)}
        return not any(left.values()) or Pending(f"left in {namespace}: {left}")

    await wait_until_async(no_gangs, timeout, what=f"every gang object of {namespace} deleted",
                           interval=0.5)
