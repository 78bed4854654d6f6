"""Cluster usage through a run, kept incrementally: a sample per pod change must not rescan
every pod. The `RunRecorder` (recorder.py) feeds it each pod's state."""

from __future__ import annotations

from phalanx.api.core import Node

from .record import NodeInfo, PodRecord, Sample

GPU = "nvidia.com/gpu"


def node_info(node: Node) -> NodeInfo:
    alloc = node.allocatable_resources()
    taints = [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}"
              for t in node.spec.taints or []]
    return NodeInfo(
        name=node.name,
        pool=node.metadata.labels.get("sim.phalanx.dev/node-pool", ""),
        labels=dict(node.metadata.labels),
        gpu=int(alloc.get(GPU, 0)),
        cpu=alloc.get("cpu", 0.0),
        memory=alloc.get("memory", 0.0),
        taints=taints,
        ready=node.is_ready and not node.spec.unschedulable,
    )


class Usage:
    """Resources held by bound, live pods, and pods running / pending: a step function."""

    def __init__(self) -> None:
        self.samples: list[Sample] = []
        self._usage: dict[str, tuple[float, float, float]] = {}
        self._used = [0.0, 0.0, 0.0]  # gpu, cpu, memory of bound, live pods
        self._category: dict[str, str] = {}  # pod key -> "running" | "pending" | ""
        self.counts = {"running": 0, "pending": 0, "": 0}

    def pod(self, t: float, key: str, rec: PodRecord, holds: bool) -> None:
        """A pod changed; `holds`: it is bound and neither ended nor being deleted."""
        self._set(key, (rec.gpu, rec.cpu, rec.memory) if holds else None)
        if rec.deleted is not None:
            category = ""
        elif rec.phase == "Running":
            category = "running"
        elif rec.phase == "Pending" and not rec.node:
            category = "pending"
        else:
            category = ""
        previous = self._category.get(key)
        if previous is not None:
            self.counts[previous] -= 1
        self._category[key] = category
        self.counts[category] += 1
        self._sample(t)

    def release(self, key: str) -> None:
        """An earlier pod of this name was replaced: what it held is free."""
        self._set(key, None)

    def _set(self, key: str, usage: tuple[float, float, float] | None) -> None:
        old = self._usage.pop(key, None)
        if old is not None:
            for i in range(3):
                self._used[i] -= old[i]
        if usage is not None:
            self._usage[key] = usage
            for i in range(3):
                self._used[i] += usage[i]

    def _sample(self, t: float) -> None:
        gpu, cpu, mem = (round(x, 6) for x in self._used)  # no float drift from +/-
        sample = Sample(t=t, gpu_used=gpu, cpu_used=cpu, memory_used=mem,
                        pods_running=self.counts["running"],
                        pods_pending=self.counts["pending"])
        if self.samples and self.samples[-1].t == t:
            self.samples[-1] = sample
        elif not self.samples or self.samples[-1].model_dump(exclude={"t"}) != sample.model_dump(
                exclude={"t"}):
            self.samples.append(sample)
