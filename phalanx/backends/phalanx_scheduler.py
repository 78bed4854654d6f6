"""`phalanx-scheduler`: Phalanx's own gang scheduler.

It reads PodGangs (and the ClusterTopology) directly, so the backend writes no extra object:
pods get `schedulerName: phalanx-scheduler`, and find their gang through the
`grove.io/podgang` label every Grove pod carries.

It reads KAI's Queue natively, from the pods' `kai.scheduler/queue` and
`kai.scheduler/preemptibility` labels. Set on the PodCliqueSet, they reach the pods here:
`prepare_pod` copies the PodCliqueSet's onto each pod, over a clique template's, as KAI's grove
grouper takes the PodCliqueSet's (mirrored onto the PodGang) before the pod's -- so
`phalanx get pods` shows the queue the scheduler uses, on any cluster.

Its capabilities are what the scheduler in this build really has: a pod template field whose
kube-scheduler plugin phalanx-scheduler lacks (phalanx.api.podfields) is a mismatch, and so
are the keys only another scheduler reads: Volcano's queue and preemptable, KAI's GPU sharing
(no GPU share is modelled) and KAI's PodGroup metadata (topology annotations, node pools).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from phalanx.api import labels, podfields
from phalanx.scheduler.framework.config import DEFAULT_PLUGINS
from phalanx.scheduler.framework.registry import get_plugin

from . import features, hints
from .base import (
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    register_backend,
)
from .objects import ConfiguredBackend

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.api.pod import Pod


class PhalanxBackendConfig(BackendConfig):
    # Its PreEnqueue holds members of a PodGang that is not Initialized or not BackendSynced
    # (phalanx.scheduler.gang.sources.podgang.operator_hold).
    GATE_OPTIONAL: ClassVar[bool] = True
    # Nothing can mismatch; `reject` keeps any future gap loud.
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")


@cache
def missing_plugins() -> tuple[str, ...]:
    """Plugins some pod placement field needs that the default profile does not run."""
    default = {name for name, _ in DEFAULT_PLUGINS}
    return tuple(p for p in podfields.plugins_needed() if p not in default or get_plugin(p) is None)


# Keys other schedulers read and phalanx-scheduler does not (hints.py).
NOT_READ = frozenset({Capability.VOLCANO_QUEUES, Capability.VOLCANO_PREEMPTABLE,
                      Capability.KAI_GPU_SHARING, Capability.KAI_PODGROUP_METADATA})
# The labels the PodCliqueSet's pods take from it (its own over a clique template's).
FROM_PCS = (labels.LABEL_KAI_QUEUE, labels.LABEL_KAI_PREEMPTIBILITY)
ORDER = "the pods take the PodCliqueSet's (as KAI's grove grouper does)"


@cache
def scheduler_capabilities() -> frozenset[Capability]:
    # KAIQueues, KAIPreemptibility: KAI Queues read natively (QueueCapacity, QueueReclaim in
    # the default profile).
    lacking: set[Capability] = set(NOT_READ)
    missing = missing_plugins()
    if podfields.DYNAMIC_RESOURCES in missing:
        lacking.add(Capability.DYNAMIC_RESOURCES)
    if set(missing) - {podfields.DYNAMIC_RESOURCES}:
        lacking.add(Capability.POD_PLACEMENT_FIELDS)
    return frozenset(Capability) - lacking


class PhalanxBackend(ConfiguredBackend[PhalanxBackendConfig]):
    name: ClassVar[str] = "phalanx-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_PHALANX

    @property
    def capabilities(self) -> frozenset[Capability]:  # type: ignore[override]
        return scheduler_capabilities()

    async def sync_podgang(self, podgang: PodGang) -> None:
        return None  # the scheduler watches PodGangs itself

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        return None

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name
        pcs = hints.cached_podcliqueset(self.cache, pod)
        if pcs is not None:
            for key in FROM_PCS:
                value = pcs.metadata.labels.get(key)
                if value:
                    pod.metadata.labels[key] = value

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        others = [p for p in missing_plugins() if p != podfields.DYNAMIC_RESOURCES]
        return (features.capability_issues(pcs, self.capabilities, self.name)
                + features.missing_plugin_issues(pcs, others, self.name)
                + hints.preemptibility_errors(pcs)
                + hints.overridden_issues(pcs, hints.KAI_QUEUE, "KAI queue",
                                          Capability.KAI_QUEUES, ORDER)
                + hints.overridden_issues(pcs, hints.KAI_PREEMPTIBILITY, "KAI preemptibility",
                                          Capability.KAI_PREEMPTIBILITY, ORDER))


SPEC = register_backend(
    BackendSpec(name=PhalanxBackend.name, config_model=PhalanxBackendConfig, factory=PhalanxBackend)
)
