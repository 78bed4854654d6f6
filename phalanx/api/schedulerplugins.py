"""scheduling.x-k8s.io/v1alpha1 `PodGroup`: kubernetes-sigs/scheduler-plugins' coscheduling.

The API group scheduler-plugins serves today (Koordinator still installs the older
`scheduling.sigs.k8s.io`, `phalanx.api.scheduling.CoschedulingPodGroup`). Pods join a group
with the label `scheduling.x-k8s.io/pod-group: <name>` in the group's namespace; the
Coscheduling plugin binds none of them until `minMember` fit, waiting at most
`scheduleTimeoutSeconds` (else its permitWaitingTimeSeconds). The CRD has a status
subresource, with no conditions: scheduler-plugins' PodGroup controller fills phase and
counts.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty
from .labels import LABEL_POD_GROUP_X_K8S
from .pod import ResourceList

# The scheduler name scheduler-plugins' install gives its profile.
SCHEDULER_PLUGINS = "scheduler-plugins-scheduler"
POD_GROUP_LABEL = LABEL_POD_GROUP_X_K8S


class SchedulerPluginsPodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=1)
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None


class SchedulerPluginsPodGroupStatus(KubeModel):
    # Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed, Unknown.
    phase: str | None = None
    occupied_by: str | None = None
    running: int = Field(default=0, exclude_if=_is_empty)
    succeeded: int = Field(default=0, exclude_if=_is_empty)
    failed: int = Field(default=0, exclude_if=_is_empty)
    schedule_start_time: datetime | None = None


class SchedulerPluginsPodGroup(Resource):
    API_VERSION = "scheduling.x-k8s.io/v1alpha1"
    KIND = "PodGroup"
    PLURAL = "podgroups"
    NAMESPACED = True
    HAS_STATUS = True

    spec: SchedulerPluginsPodGroupSpec = Field(default_factory=SchedulerPluginsPodGroupSpec)
    status: SchedulerPluginsPodGroupStatus = Field(
        default_factory=SchedulerPluginsPodGroupStatus)


_registry.register(SchedulerPluginsPodGroup)
