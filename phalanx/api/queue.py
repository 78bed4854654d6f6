"""scheduling.run.ai/v2 `Queue`: KAI Scheduler's queue, exactly as KAI's CRD declares it.

Cluster-scoped. A queue has a deserved `quota`, an `overQuotaWeight` that shares out what
other queues leave unused, and a `limit` it never exceeds, per resource:

    spec:
      parentQueue: dept-1            # queues form a tree; only leaves hold workloads
      priority: 100                  # over-quota room goes to higher priorities first
      reclaimMinRuntime: 10m         # a job runs at least this long before it is reclaimed
      resources:
        gpu:    {quota: 8, overQuotaWeight: 1, limit: 16}     # GPUs (fractions allowed)
        cpu:    {quota: 64000, limit: -1}                     # millicores (1000 = 1 cpu)
        memory: {quota: 256000, limit: -1}                    # megabytes (10^6 bytes)

As KAI reads them: `-1` means unlimited (a quota of all there is, no limit); a field left out
is 0 (no quota, no over-quota share, and a limit of 0: nothing of that resource may run).
Workloads name their queue with the `kai.scheduler/queue` label. The status is what KAI's
queue controller reports (allocated, requested, childQueues); Phalanx's scheduler writes it.

The schema is KAI's CRD (`scheduling.run.ai_queues.yaml`), no more, no less; the rules the
CRD does not state (numbers not below -1, a limit not below the quota, a tree without
cycles, a child's quota within its parent's) are admission's (phalanx.cluster.queues).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, StrictFloat, StrictInt

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty
from .pod import ResourceList

# KAI's "unlimited" (UnlimitedResourceQuantity): a quota of everything, or no limit.
UNLIMITED = -1.0
# KAI's default queue priority (DefaultQueuePriority) when `spec.priority` is not set.
DEFAULT_QUEUE_PRIORITY = 100
# The three resources a queue accounts, in KAI's order, with the unit of the spec's numbers.
RESOURCES = ("cpu", "memory", "gpu")
UNITS = {"cpu": "millicores", "memory": "megabytes", "gpu": "GPUs"}

# A JSON number: the CRD's `type: number` refuses strings ("8") where pydantic would coerce
# them (strict floats still take integers).
Number = StrictFloat
# A JSON integer: the CRD's `type: integer` refuses "5", true and 5.5 alike.
Integer = StrictInt


class QueueResource(KubeModel):
    """One resource's quota, over-quota weight and limit (unset = 0, -1 = unlimited)."""

    limit: Number | None = None
    over_quota_weight: Number | None = None
    quota: Number | None = None

    def value(self, field: str) -> float:
        """The number KAI reads for `field` ("quota", "overQuotaWeight", "limit")."""
        raw = getattr(self, "over_quota_weight" if field == "overQuotaWeight" else field)
        return float(raw) if raw is not None else 0.0


class QueueResources(KubeModel):
    cpu: QueueResource | None = Field(
        default=None, description="CPU resources in millicpus. 1000 = 1 cpu")
    gpu: QueueResource | None = Field(
        default=None, description="GPU resources in fractions. 0.7 = 70% of a gpu")
    memory: QueueResource | None = Field(
        default=None, description="Memory resources in megabytes. 1 = 10^6  (1000*1000) bytes")

    def of(self, resource: str) -> QueueResource:
        return getattr(self, resource) or QueueResource()


class QueueSpec(KubeModel):
    display_name: str | None = None
    parent_queue: str | None = None
    preempt_min_runtime: str | None = None
    priority: Integer | None = None
    reclaim_min_runtime: str | None = None
    resources: QueueResources | None = None

    def effective_priority(self) -> int:
        return self.priority if self.priority is not None else DEFAULT_QUEUE_PRIORITY


class QueueCondition(KubeModel):
    """A condition as KAI's Queue status declares it (type and status required)."""

    last_probe_time: datetime | None = None
    last_transition_time: datetime | None = None
    message: str | None = None
    reason: str | None = None
    status: str
    type: str


class QueueStatus(KubeModel):
    allocated: ResourceList | None = None
    allocated_non_preemptible: ResourceList | None = None
    child_queues: list[str] | None = None
    conditions: list[QueueCondition] = Field(default_factory=list, exclude_if=_is_empty)
    requested: ResourceList | None = None


class Queue(Resource):
    API_VERSION = "scheduling.run.ai/v2"
    KIND = "Queue"
    PLURAL = "queues"
    NAMESPACED = False
    HAS_STATUS = True

    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)

    @property
    def parent(self) -> str:
        return self.spec.parent_queue or ""

    def quota(self, resource: str) -> QueueResource:
        res = self.spec.resources
        return res.of(resource) if res is not None else QueueResource()


def queue_dict(name: str, *, parent: str | None = None, priority: int | None = None,
               **resources: dict[str, Any]) -> dict[str, Any]:
    """A Queue as YAML would say it (tests, bench, examples):
    `queue_dict("team-a", gpu={"quota": 8, "limit": 16})`."""
    spec: dict[str, Any] = {"resources": {k: dict(v) for k, v in resources.items()}}
    if parent:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": Queue.API_VERSION, "kind": Queue.KIND, "metadata": {"name": name},
            "spec": spec}


def unlimited_queue(name: str, *, parent: str | None = None) -> Queue:
    """A queue with no quota and no limit on anything (KAI's `default` queue shape)."""
    free = {"quota": UNLIMITED, "limit": UNLIMITED, "overQuotaWeight": 1}
    return Queue.model_validate(queue_dict(name, parent=parent, gpu=free, cpu=free, memory=free))


_registry.register(Queue)
