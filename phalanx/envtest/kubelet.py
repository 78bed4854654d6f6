"""The stand-in kubelet: `phalanx.sim.kubelet.Kubelet` over a `KubeCluster`, plus the one
kubelet duty only a real API server needs.

The embedded mode's kubelet, unchanged, reads pods and nodes through informers and writes
pod status through the Client, so on a real API server (real clock) it marks each pod bound
to a Ready node Running, honours the operator's startup ordering and fails pods of deleted
nodes, exactly as in `phalanx run`.

What it adds: graceful deletion. kube-apiserver deletes an unbound or finished pod at once,
but a bound, running one only gets a deletionTimestamp; it stays Terminating until its
kubelet has stopped the containers and deletes it with grace period 0. Here nothing runs,
so such a pod is deleted at once (uid precondition, so a pod recreated under the same name
is never hit). Without this, a cascading delete (garbage collector, scale-in, gang
termination) would leave every running pod Terminating for good.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from phalanx.api.pod import Pod
from phalanx.cluster.client import Conflict, NotFound
from phalanx.cluster.controller import Controller, Result
from phalanx.cluster.objects import split_key
from phalanx.sim.kubelet import Kubelet as SimKubelet


def _terminating(old: Pod, new: Pod) -> bool:
    return new.metadata.deletion_timestamp is not None and bool(new.spec.node_name)


class Kubelet(SimKubelet):
    def __init__(self, client: Any, start_delay: float = 0.0) -> None:
        super().__init__(client, start_delay=start_delay)
        self.terminated = 0
        self.terminator = self.manager.add(
            Controller("kubelet-terminate", self._finish_deletion, workers=4))
        self.terminator.watch(self.pods, predicate=_terminating)

    async def _finish_deletion(self, key: str) -> Result | None:
        pod = self.pods.get(key)
        if pod is None or pod.metadata.deletion_timestamp is None or not pod.spec.node_name:
            return None
        ns, name = split_key(key)
        from phalanx.cluster.kube.paths import object_path

        try:
            await self.client.transport.request(
                "DELETE", object_path(Pod, name, ns), kind="Pod", name=name,
                body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                      "preconditions": {"uid": pod.metadata.uid}})
        except (NotFound, Conflict):
            return None  # gone already, or a new pod of that name
        self.terminated += 1
        return None


@asynccontextmanager
async def running_kubelet(kube: Any, *, start_delay: float = 0.0) -> AsyncIterator[Kubelet]:
    kubelet = Kubelet(kube, start_delay=start_delay)
    await kubelet.start()
    try:
        yield kubelet
    finally:
        await kubelet.stop()


__all__ = ["Kubelet", "running_kubelet"]
