"""The scheduler backend protocol (GREP-375).

A backend translates Grove's scheduler-agnostic PodGang into what one scheduler reads
(a Workload, a PodGroup, ...) and prepares pods for that scheduler. Each backend is one
module that implements `Backend` and registers itself with `register_backend`; adding a
scheduler touches nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from phalanx.api.core import Pod
    from phalanx.api.grove import PodCliqueSet, PodGang
    from phalanx.cluster.client import Client

T = TypeVar("T")


class Capability(StrEnum):
    """Features a PodCliqueSet may ask for and a scheduler may or may not provide."""

    GANG = "GangScheduling"
    TOPOLOGY = "TopologyAwarePlacement"
    GANG_PREEMPTION = "GangPreemption"
    # A KAI queue (the kai.scheduler/queue label): kai-scheduler, and phalanx-scheduler, which
    # reads KAI's Queue natively.
    KAI_QUEUES = "KAIQueues"
    # A Volcano queue (scheduling.volcano.sh/queue-name annotation, volcano.sh/queue-name label).
    VOLCANO_QUEUES = "VolcanoQueues"
    # KAI's explicit preemptibility (the kai.scheduler/preemptibility label).
    KAI_PREEMPTIBILITY = "KAIPreemptibility"
    # Volcano's volcano.sh/preemptable: a pod Volcano does not evict.
    VOLCANO_PREEMPTABLE = "VolcanoPreemptable"
    # KAI's GPU sharing (gpu-fraction, gpu-memory pod annotations): a share of a GPU.
    KAI_GPU_SHARING = "KAIGPUSharing"
    # The rest of what KAI's pod grouper reads from a workload into its PodGroup: the
    # kai.scheduler/topology* annotations and the kai.scheduler/node-pool label (shards).
    KAI_PODGROUP_METADATA = "KAIPodGroupMetadata"
    SUBGROUPS = "HierarchicalSubGroups"
    # Each group of a multi-group gang keeps its own minimum (a PodGang group's
    # minReplicas), rather than one count for the whole gang.
    GROUP_MINIMUMS = "PerGroupMinimums"
    # Pod templates with DRA claims (spec.resourceClaims, containers[].resources.claims):
    # the scheduler allocates them (kube-scheduler's DynamicResources plugin).
    DYNAMIC_RESOURCES = "DynamicResources"
    # Every other placement field of a pod template (phalanx.api.podfields), honoured as
    # kube-scheduler does: node and pod (anti-)affinity, spread, host ports, volumes, ...
    POD_PLACEMENT_FIELDS = "PodPlacementFields"


class MismatchPolicy(StrEnum):
    """What admission does when a PodCliqueSet asks for a feature the backend lacks."""

    REJECT = "reject"  # admission error naming the feature
    PASS_THROUGH = "pass-through"  # admitted; a status condition names what is ignored


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One finding of `validate_podcliqueset`.

    `feature` set: a capability mismatch, handled by the backend's mismatch policy.
    `feature` None: a plain validation error, always rejected.
    `best_effort`: the PodCliqueSet only *prefers* the feature (e.g. a preferred pack
    domain), so ignoring it keeps the spec's meaning: reported, never rejected.
    """

    field: str  # camelCase path, e.g. "spec.template.topologyConstraint.packDomain"
    message: str
    feature: Capability | None = None
    best_effort: bool = False


class BackendConfig(BaseModel):
    """Base for a backend's profile `config`. Unknown keys are rejected.

    Every backend has a `mismatchPolicy`; subclasses re-declare the field to choose their
    own default (and say why).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Whether this backend's scheduler itself holds a pod until its PodGang is Initialized and
    # its backend objects exist (phalanx-scheduler's PreEnqueue). Only then may the operator
    # create pods without Grove's scheduling gate.
    GATE_OPTIONAL: ClassVar[bool] = False
    GATE_REQUIRED_WHY: ClassVar[str] = (
        "this scheduler would schedule a pod before its PodGang is Initialized; "
        "only phalanx-scheduler, and default-scheduler with gangScheduling, hold such pods "
        "themselves")

    mismatch_policy: MismatchPolicy = Field(MismatchPolicy.REJECT, alias="mismatchPolicy")
    # `false`: pods are created without the grove.io/podgang-pending-creation gate, saving
    # the gate-removal write per pod (issue 28). Pods of a scaled PodGang keep the gate: only
    # the operator knows when their base PodGang is scheduled.
    pod_scheduling_gate: bool = Field(True, alias="podSchedulingGate")

    @field_validator("pod_scheduling_gate")
    @classmethod
    def _gate_supported(cls, value: bool) -> bool:
        if not value and not cls.GATE_OPTIONAL:
            raise ValueError(f"false is not supported: {cls.GATE_REQUIRED_WHY}")
        return value


class SyncPending(Exception):
    """`sync_podgang` / `on_podgang_delete` cannot finish yet; the caller retries later.

    Not a failure: e.g. a protected PodGroup still has pods. `after` is a hint in seconds.
    """

    def __init__(self, message: str, after: float = 1.0) -> None:
        super().__init__(message)
        self.after = after


class CacheReader(Protocol):
    """Reads answered from the operator's informers, as Grove's backends read through
    controller-runtime's cached client (objects are shared: read them, do not change them)."""

    def cached(self, kind: type[T], name: str, namespace: str | None) -> T | None:
        """The object if the cache holds it; None sends the caller to the API server."""
        ...


@runtime_checkable
class Backend(Protocol):
    # The profile name in OperatorConfiguration (e.g. "koordinator").
    name: ClassVar[str]
    # The schedulerName pods carry for this scheduler (e.g. "koord-scheduler"); often == name.
    scheduler_name: ClassVar[str]
    # What this backend's scheduler provides; may depend on the profile config (e.g.
    # default-scheduler provides gangs only with gangScheduling: true).
    capabilities: frozenset[Capability]
    mismatch_policy: MismatchPolicy

    async def init(self, client: Client) -> None:
        """Called once at operator start-up, before any reconcile."""
        ...

    async def sync_podgang(self, podgang: PodGang) -> None:
        """Create or update the scheduler objects for this PodGang. Idempotent."""
        ...

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        """Remove what sync_podgang created. Idempotent (NotFound is success)."""
        ...

    def prepare_pod(self, pod: Pod) -> None:
        """Mutate a pod (in place) before it is created: schedulerName, labels, refs."""
        ...

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        """Backend-specific admission checks (create and update)."""
        ...


BackendFactory = Callable[[BackendConfig], Backend]


# What a backend needs on the scheduler objects it writes (BackendSpec.rbac).
OWNED_OBJECT_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """What the registry knows about a backend before it is enabled."""

    name: str
    config_model: type[BackendConfig]
    factory: Callable[[Any], Backend]
    # RBAC rules the operator needs when this backend is enabled: (apiGroup, resources, verbs).
    rbac: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()


_KNOWN: dict[str, BackendSpec] = {}


def register_backend(spec: BackendSpec) -> BackendSpec:
    if spec.name in _KNOWN and _KNOWN[spec.name] is not spec:
        raise ValueError(f"scheduler backend {spec.name!r} registered twice")
    _KNOWN[spec.name] = spec
    return spec


def known_backends() -> dict[str, BackendSpec]:
    """Every backend module that has registered itself (see phalanx.backends.__init__)."""
    return dict(_KNOWN)
