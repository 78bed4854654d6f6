"""Builders for the Koordinator coscheduling ports: koord-scheduler pods and PodGroups as
Koordinator's tests write them, and a gang cache + manager reading them as koord-scheduler
does (the framework-free level of Koordinator's core tests)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.scheduling import CoschedulingPodGroup
from phalanx.scheduler.gang import GangCache, GangManager, GangState
from phalanx.scheduler.gang.defaults import defaults_for
from phalanx.scheduler.gang.sources import default_sources

KOORD = labels.SCHEDULER_KOORDINATOR
PG_LABEL = labels.LABEL_POD_GROUP
NAME = labels.ANNOTATION_KOORD_GANG_NAME
MIN = labels.ANNOTATION_KOORD_GANG_MIN_AVAILABLE
TOTAL = labels.ANNOTATION_KOORD_GANG_TOTAL_NUMBER
MODE = labels.ANNOTATION_KOORD_GANG_MODE
GROUPS = labels.ANNOTATION_KOORD_GANG_GROUPS
WAIT = labels.ANNOTATION_KOORD_GANG_WAITING_TIME
MATCH_POLICY = "gang.scheduling.koordinator.sh/match-policy"
LIGHT_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LIGHT_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
# Koordinator's default wait (its CoschedulingArgs defaults), koord-scheduler's here.
KOORD_DEFAULT_WAIT = defaults_for(KOORD).timeout


def kpod(
    name: str,
    namespace: str = "default",
    *,
    pg: str | None = None,
    labels_: dict[str, str] | None = None,
    ann: dict[str, str] | None = None,
    node: str | None = None,
    cpu: str | None = None,
    priority: int | None = None,
    scheduler: str = KOORD,
    created: float | None = None,
) -> Pod:
    """A koord-scheduler pod (st.MakePod() in Koordinator's tests); `pg` sets the PodGroup
    label, `created` the creation time (seconds after the epoch)."""
    lbl = dict(labels_ or {})
    if pg is not None:
        lbl[PG_LABEL] = pg
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": name,
        "labels": lbl,
        "annotations": dict(ann or {}),
    }
    if created is not None:
        meta["creationTimestamp"] = (
            f"2025-01-01T00:{int(created) // 60:02d}:{int(created) % 60:02d}Z"
        )
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return Pod.model_validate({"metadata": meta, "spec": spec})


def make_pg(
    name: str,
    namespace: str = "default",
    min_member: int = 1,
    *,
    timeout: int | None = 10,
    ann: dict[str, str] | None = None,
) -> CoschedulingPodGroup:
    """Koordinator's makePg: minMember and a 10 s scheduleTimeoutSeconds."""
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return CoschedulingPodGroup.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(ann or {})},
            "spec": spec,
        }
    )


class Koord:
    """A gang cache and manager reading pods and PodGroups as koord-scheduler does."""

    def __init__(self) -> None:
        sources = default_sources()
        self.cache = GangCache({KOORD: sources[KOORD]})
        self.manager = GangManager(self.cache)
        self.source = sources[KOORD][0]
        self.activated: list[list[str]] = []
        self.cache.add_activate_listener(self.activated.append)

    def add_pg(self, *pgs: CoschedulingPodGroup) -> None:
        for pg in pgs:
            self.cache.set_object(self.source, pg)

    def delete_pg(self, pg: CoschedulingPodGroup) -> None:
        self.cache.delete_object(self.source, pg)

    def add(self, *pods: Pod) -> None:
        for p in pods:
            self.cache.add_pod(p)

    def delete(self, *pods: Pod) -> None:
        for p in pods:
            self.cache.delete_pod(p)

    def gang(self, namespace: str, name: str) -> GangState | None:
        return self.cache.get(f"coscheduling:{namespace}/{name}")

    def permit_all(self, pods: Iterable[Pod], node: str = "n1") -> None:
        """Each pod reserved and at Permit (Koordinator's RunPermitPlugins loop)."""
        for p in pods:
            self.manager.reserved(p.key, node)
            self.manager.permit(p.key, 0.0)


def gang_view(k: Koord, st: GangState) -> dict[str, Any]:
    """A gang as Koordinator's tests compare it (its `Gang` struct's fields)."""
    spec = st.spec
    ns = st.id.partition(":")[2].partition("/")[0]
    return {
        "HasGangInit": spec is not None,
        "GangFrom": (
            None
            if spec is None
            else ("PodGroupCrd" if spec.object_ref is not None else "PodAnnotation")
        ),
        "MinRequiredNumber": spec.min_member if spec else None,
        "TotalChildrenNum": spec.total_number if spec else None,
        "Mode": spec.mode.value if spec else None,
        "GangMatchPolicy": st.policy.value,
        "WaitTime": (spec.schedule_timeout or k.manager.default_timeout_of(st)) if spec else None,
        "GangGroup": (
            [g.partition(":")[2] for g in spec.gang_group] if spec else [st.id.partition(":")[2]]
        ),
        "Children": sorted(m.key for m in st.members.values()),
        "PendingChildren": sorted(m.key for m in st.pending_members()),
        "WaitingForBindChildren": sorted(st.assumed),
        "BoundChildren": sorted(st.bound),
        "OnceResourceSatisfied": st.once_satisfied,
        "Namespace": ns,
    }


def koord_profile(*, plugins: Any = None, **coscheduling_args: Any) -> Any:
    """A koord-scheduler profile with these Coscheduling args (and optional plugin sets)."""
    from phalanx.scheduler.framework import Plugins, SchedulerProfile
    from phalanx.scheduler.framework.config import PluginConfig

    return SchedulerProfile(
        scheduler_name=KOORD,
        plugin_config=[PluginConfig(name="Coscheduling", args=coscheduling_args)],
        plugins=plugins or Plugins(),
    )


def koord_scheduler(*profiles: Any) -> Any:
    """A Scheduler factory for run_scheduler: the given profiles, else a default koord one."""
    from phalanx.scheduler import Scheduler

    return lambda client: Scheduler(client, list(profiles) or [koord_profile()])


class PluginSuite:
    """Koordinator's pluginTestSuit: the Coscheduling plugin of a koord-scheduler profile on
    an embedded scheduler that is not started (nothing is scheduled behind the test's back).
    The test feeds the gang cache as the informers would and drives the extension points;
    build it inside the event loop (waiting pods need one)."""

    def __init__(self, **args: Any) -> None:
        from phalanx.cluster.memory import MemoryCluster
        from phalanx.scheduler import Scheduler

        args.setdefault("statusController", False)
        self.sched = Scheduler(
            MemoryCluster(),
            [koord_profile(**args)],
            record_events=False,
            update_pod_conditions=False,
        )
        self.fw = self.sched.frameworks[KOORD]
        self.plugin = self.fw.plugins["Coscheduling"]
        self.cache: GangCache = self.plugin.cache
        self.source = default_sources()[KOORD][0]

    def add_pg(self, *pgs: CoschedulingPodGroup) -> None:
        for pg in pgs:
            self.cache.set_object(self.source, pg)

    def add(self, *pods: Pod) -> None:
        for p in pods:
            self.cache.add_pod(p)

    @staticmethod
    def info(p: Pod) -> Any:
        from phalanx.scheduler.framework.types import PodInfo

        return PodInfo(p)

    def permit(self, p: Pod, node: str = "n1") -> Any:
        """Reserve, then the framework's Permit (a Wait parks the pod in the waiting map)."""
        from phalanx.scheduler.framework.cycle_state import CycleState

        state = CycleState()
        info = self.info(p)
        self.fw.run_reserve(state, info, node)
        return self.fw.run_permit(state, info, node)

    def waiting(self) -> list[str]:
        return sorted(wp.info.key for wp in self.sched.waiting)

    def outcome(self, p: Pod) -> str:
        """ "waiting", "allowed" or "rejected" for a pod parked at Permit."""
        wp = self.sched.waiting.get(p.metadata.uid or "")
        if wp is None:
            return "absent"
        if not wp.done:
            return "waiting"
        return "allowed" if wp._status is not None and wp._status.is_success else "rejected"
