"""scheduling.x-k8s.io PodGroup -> Gang (scheduler-plugins' Coscheduling).

Read as scheduler-plugins reads it (pkg/coscheduling): a pod belongs to the PodGroup its
label `scheduling.x-k8s.io/pod-group` names, in its own namespace; the gang needs
`spec.minMember` members (none set, or 0: the pods are ordinary pods) and waits at most
`spec.scheduleTimeoutSeconds` (none, or <= 0: the profile's default wait). A failed member
sends the waiting ones back (Strict). There are no sub-groups, gang groups or topology.
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api.schedulerplugins import POD_GROUP_LABEL, SchedulerPluginsPodGroup

from ..model import Gang, GangMode, MemberRef, ObjectRef, Source, gang_id
from .base import labels_of


class SchedulerPluginsSource:
    source: ClassVar[Source] = Source.SCHEDULER_PLUGINS
    kind: ClassVar[type[SchedulerPluginsPodGroup]] = SchedulerPluginsPodGroup

    def gangs(self, obj: SchedulerPluginsPodGroup) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        timeout = obj.spec.schedule_timeout_seconds
        return [Gang(
            id=gang_id(Source.SCHEDULER_PLUGINS, ns, name),
            source=Source.SCHEDULER_PLUGINS,
            namespace=ns,
            name=name,
            min_member=max(obj.spec.min_member or 0, 0),
            mode=GangMode.STRICT,
            schedule_timeout=float(timeout) if timeout is not None and timeout > 0 else None,
            object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
            generation=obj.metadata.generation,
        )]

    def member(self, pod: Any) -> MemberRef | None:
        name = labels_of(pod).get(POD_GROUP_LABEL)
        if not name:
            return None
        return MemberRef(gang_id(Source.SCHEDULER_PLUGINS, pod.metadata.namespace or "", name))

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None
