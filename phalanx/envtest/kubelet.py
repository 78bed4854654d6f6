"""The stand-in kubelet: `phalanx.sim.kubelet.Kubelet` over a `KubeCluster`.

It is the embedded mode's kubelet, unchanged: it reads pods and nodes through informers and
writes pod status through the Client, so on a real API server (real clock) it marks each
pod bound to a Ready node Running, honours the operator's startup ordering and fails pods
of deleted nodes, exactly as in `phalanx run`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from phalanx.sim.kubelet import Kubelet


@asynccontextmanager
async def running_kubelet(kube: Any, *, start_delay: float = 0.0) -> AsyncIterator[Kubelet]:
    kubelet = Kubelet(kube, start_delay=start_delay)
    await kubelet.start()
    try:
        yield kubelet
    finally:
        await kubelet.stop()


__all__ = ["Kubelet", "running_kubelet"]
