"""`default-scheduler`: the Kubernetes kube-scheduler.

Without `gangScheduling` the backend only points pods at kube-scheduler (schedulerName);
kube-scheduler then places pods one by one, with no gang semantics. With
`gangScheduling: true` it also writes the Workload API objects kube-scheduler's gang
plugin reads (KEP-4671), in the API version the target server serves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from phalanx.api import labels

from .base import (
    BackendConfig,
    BackendSpec,
    Capability,
    MismatchPolicy,
    ValidationIssue,
    register_backend,
)

if TYPE_CHECKING:
    from phalanx.api.core import Pod
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.cluster.client import Client

WorkloadAPIVersion = Literal[
    "scheduling.k8s.io/v1alpha1",  # Kubernetes 1.35
    "scheduling.k8s.io/v1alpha2",  # 1.36
    "scheduling.k8s.io/v1beta1",  # 1.37
]
NEWEST_WORKLOAD_API: WorkloadAPIVersion = "scheduling.k8s.io/v1beta1"


class KubeBackendConfig(BackendConfig):
    """Profile config of `default-scheduler`.

    mismatchPolicy defaults to `reject`: kube-scheduler has no topology-aware placement,
    and silently ignoring a *required* pack constraint would surprise users.
    """

    gang_scheduling: bool = Field(False, alias="gangScheduling")
    workload_api_version: WorkloadAPIVersion = Field(
        NEWEST_WORKLOAD_API, alias="workloadAPIVersion"
    )
    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")


class KubeBackend:
    name: ClassVar[str] = "default-scheduler"
    scheduler_name: ClassVar[str] = labels.SCHEDULER_DEFAULT
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

    def __init__(self, config: KubeBackendConfig) -> None:
        self.config = config
        self.mismatch_policy = config.mismatch_policy
        self._client: Client | None = None

    async def init(self, client: Client) -> None:
        self._client = client

    async def sync_podgang(self, podgang: PodGang) -> None:
        # Non-gang mode writes nothing: kube-scheduler needs no extra object.
        return None

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        return None

    def prepare_pod(self, pod: Pod) -> None:
        pod.spec.scheduler_name = self.scheduler_name

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        return []


SPEC = register_backend(
    BackendSpec(name=KubeBackend.name, config_model=KubeBackendConfig, factory=KubeBackend)
)
