"""`phalanx-scheduler`: Phalanx's own gang scheduler.

It reads PodGangs (and the ClusterTopology) directly, so the backend writes no extra object:
pods only get `schedulerName: phalanx-scheduler`, and find their gang through the
`grove.io/podgang` label every Grove pod carries. It supports every feature a PodCliqueSet
can ask for, so admission never finds a mismatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from phalanx.api import labels

from . import features
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
    # Nothing can mismatch; `reject` keeps any future gap loud.
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")


class PhalanxBackend(ConfiguredBackend[PhalanxBackendConfig]):
    name: ClassVar[str] = "phalanx-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_PHALANX
    capabilities: frozenset[Capability] = frozenset(Capability)

    async def sync_podgang(self, podgang: PodGang) -> None:
        return None  # the scheduler watches PodGangs itself

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        return None

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        return features.capability_issues(pcs, self.capabilities, self.name)


SPEC = register_backend(
    BackendSpec(name=PhalanxBackend.name, config_model=PhalanxBackendConfig, factory=PhalanxBackend)
)
