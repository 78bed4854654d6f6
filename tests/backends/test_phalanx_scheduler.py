"""The phalanx-scheduler backend (phalanx/backends/phalanx_scheduler.py): the PodCliqueSet's
KAI queue and preemptibility labels reach its pods, over a clique template's, as KAI's grove
grouper takes the PodCliqueSet's (mirrored onto the PodGang) before the pod's."""

from __future__ import annotations

from typing import Any

from phalanx.api import labels
from phalanx.api.grove import PodCliqueSet
from phalanx.backends.base import Capability
from phalanx.backends.phalanx_scheduler import PhalanxBackend, PhalanxBackendConfig

from . import samples as s


class _Cache:
    def __init__(self, pcs: PodCliqueSet) -> None:
        self.pcs = pcs

    def cached(self, kind: type, name: str, namespace: str | None) -> Any:
        return self.pcs if name == self.pcs.name else None


def _pod(pcs: PodCliqueSet, pod_labels: dict | None = None) -> Any:
    backend = PhalanxBackend(PhalanxBackendConfig())
    backend.cache = _Cache(pcs)  # type: ignore[assignment]
    pod = s.grove_pod(s.BASE_GROUPS[0][0])
    pod.metadata.labels.update({labels.LABEL_PART_OF: pcs.name, **(pod_labels or {})})
    backend.prepare_pod(pod)
    return pod


def test_the_pcs_queue_and_preemptibility_reach_the_pods() -> None:
    pcs = s.pcs("phalanx-scheduler", queue="team-a")
    pcs.metadata.labels[labels.LABEL_KAI_PREEMPTIBILITY] = "non-preemptible"
    pod = _pod(pcs, {labels.LABEL_KAI_QUEUE: "from-template"})
    assert pod.spec.scheduler_name == "phalanx-scheduler"
    assert pod.metadata.labels[labels.LABEL_KAI_QUEUE] == "team-a"
    assert pod.metadata.labels[labels.LABEL_KAI_PREEMPTIBILITY] == "non-preemptible"


def test_a_template_queue_stays_when_the_pcs_has_none() -> None:
    pod = _pod(s.pcs("phalanx-scheduler"), {labels.LABEL_KAI_QUEUE: "from-template"})
    assert pod.metadata.labels[labels.LABEL_KAI_QUEUE] == "from-template"
    assert labels.LABEL_KAI_PREEMPTIBILITY not in pod.metadata.labels


def test_what_phalanx_scheduler_does_not_read() -> None:
    caps = PhalanxBackend(PhalanxBackendConfig()).capabilities
    assert {Capability.KAI_QUEUES, Capability.KAI_PREEMPTIBILITY} <= caps
    assert not caps & {Capability.VOLCANO_QUEUES, Capability.VOLCANO_PREEMPTABLE,
                       Capability.KAI_GPU_SHARING, Capability.KAI_PODGROUP_METADATA}


def test_a_pcs_queue_label_holds_its_gangs_end_to_end() -> None:
    """A1: docs/queues.md's promise -- the PodCliqueSet's label puts its pods in the queue,
    whose 8-GPU limit then holds the second gang; `get pods` shows the label."""
    from phalanx.api import registry
    from phalanx.api.core import Pod
    from phalanx.api.queue import queue_dict
    from phalanx.bench.stack import EmbeddedStack
    from phalanx.bench.workload import gpu_cluster, job_podcliqueset
    from phalanx.cluster.clock import run_virtual

    async def main() -> list[Pod]:
        stack = EmbeddedStack(gpu_cluster(4))
        await stack.start()
        try:
            free = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
            await stack.cluster.create(registry.from_dict(queue_dict(
                "team-a", gpu={"quota": 8, "limit": 8, "overQuotaWeight": 1},
                cpu=free, memory=free)))
            pcs = job_podcliqueset("pxjob", 1, 8)
            pcs.spec.replicas = 2
            pcs.metadata.labels[labels.LABEL_KAI_QUEUE] = "team-a"
            await stack.cluster.create(pcs)
            await stack.settle(timeout=600)
            return (await stack.cluster.list(Pod)).items
        finally:
            await stack.stop()

    pods = run_virtual(main)
    assert len(pods) == 2
    assert all(p.metadata.labels.get(labels.LABEL_KAI_QUEUE) == "team-a" for p in pods)
    assert sorted(bool(p.spec.node_name) for p in pods) == [False, True]
