"""Scheduler configuration: profiles of plugins per extension point, like a
KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`), in camelCase YAML.

```yaml
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- schedulerName: phalanx-scheduler
  plugins:
    multiPoint:
      enabled: [{name: MyPlugin, weight: 2}]
    score:
      disabled: [{name: NodeResourcesFit}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: LeastAllocated}}   # spread (the default packs GPUs)
```

A profile's plugins are merged onto `DEFAULT_PLUGINS` as kube-scheduler does: `enabled` adds,
`disabled` removes (`"*"` removes every default at that point). `multiPoint` enables a plugin
at every extension point it implements; a plugin enabled at a specific point runs before the
multiPoint ones there.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from phalanx.api.base import KubeModel

# Plugin names. The gang engineer's plugins fill the GANG slots (phalanx/scheduler/plugins/
# coscheduling.py, topology.py, preemption.py); the default profile enables a slot only once
# its plugin is registered, so every profile works while they are being built.
PRIORITY_SORT = "PrioritySort"
SCHEDULING_GATES = "SchedulingGates"
# Refuses, by name, a pod whose placement fields need a plugin this profile lacks.
UNSUPPORTED_POD_FIELDS = "UnsupportedPodFields"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
NODE_NAME = "NodeName"
NODE_PORTS = "NodePorts"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DYNAMIC_RESOURCES = "DynamicResources"  # DRA claims (structured parameters)
DEFAULT_BINDER = "DefaultBinder"
COSCHEDULING = "Coscheduling"  # gang slot: PreEnqueue/PreFilter/BeforePostFilter/Permit/Reserve...
TOPOLOGY_PACKING = "TopologyPacking"  # gang slot: pack constraints (Filter + Score)
DEFAULT_PREEMPTION = "DefaultPreemption"  # gang slot: priority preemption, gang-aware (PostFilter)
GANG_RESERVATION = "GangReservation"  # the longest-waiting gang reserves room; others backfill
# KAI's queues (phalanx/scheduler/queues): limits and quotas at PreFilter, the fair-share
# order (through PrioritySort), and reclaim between queues (a PostFilter before preemption,
# as KAI runs reclaim before preempt). Both skip at once while no Queue exists.
QUEUE_CAPACITY = "QueueCapacity"
QUEUE_RECLAIM = "QueueReclaim"

# Scheduler names served in embedded mode (contracts.md), one profile each.
PROFILE_NAMES: tuple[str, ...] = (
    "default-scheduler",
    "kai-scheduler",
    "volcano",
    "koord-scheduler",
    "scheduler-plugins-scheduler",
    "phalanx-scheduler",
)
DEFAULT_PROFILE_NAME = "phalanx-scheduler"


class PluginRef(KubeModel):
    name: str
    weight: int | None = Field(default=None, ge=0)


class PluginSet(KubeModel):
    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)


class Plugins(KubeModel):
    multi_point: PluginSet = Field(default_factory=PluginSet)
    pre_enqueue: PluginSet = Field(default_factory=PluginSet)
    queue_sort: PluginSet = Field(default_factory=PluginSet)
    pre_filter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    before_post_filter: PluginSet = Field(default_factory=PluginSet)
    post_filter: PluginSet = Field(default_factory=PluginSet)
    pre_score: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    pre_bind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    post_bind: PluginSet = Field(default_factory=PluginSet)

    def for_point(self, point: str) -> PluginSet:
        """The PluginSet of an extension point given by its camelCase name ("preFilter")."""
        return getattr(self, _snake(point))


class PluginConfig(KubeModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class SchedulerProfile(KubeModel):
    scheduler_name: str = DEFAULT_PROFILE_NAME
    plugins: Plugins = Field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = Field(default_factory=list)
    # None: the scheduler-wide setting; 0: adaptive (kube-scheduler's formula).
    percentage_of_nodes_to_score: int | None = Field(default=None, ge=0, le=100)

    def args_for(self, plugin: str) -> dict[str, Any]:
        for pc in self.plugin_config:
            if pc.name == plugin:
                return pc.args
        return {}


class SchedulerConfiguration(KubeModel):
    api_version: str = "phalanx.io/v1alpha1"
    kind: str = "SchedulerConfiguration"
    profiles: list[SchedulerProfile] = Field(default_factory=list)
    pod_initial_backoff_seconds: float = Field(default=1.0, gt=0)
    pod_max_backoff_seconds: float = Field(default=10.0, gt=0)
    # Unschedulable pods are retried at least this often even without a helpful event.
    pod_max_in_unschedulable_pods_duration_seconds: float = Field(default=300.0, gt=0)
    # 0: adaptive like kube-scheduler (50% minus 1% per 125 nodes, at least 5%, >= 100 nodes).
    percentage_of_nodes_to_score: int = Field(default=0, ge=0, le=100)
    # Seed for tie-breaking between equally scored nodes (same seed = same placement).
    seed: int = 0

    @model_validator(mode="after")
    def _unique_names(self) -> SchedulerConfiguration:
        seen: set[str] = set()
        for i, p in enumerate(self.profiles):
            if p.scheduler_name in seen:
                raise ValueError(f"profiles[{i}].schedulerName {p.scheduler_name!r} is duplicated")
            seen.add(p.scheduler_name)
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            raise ValueError("podMaxBackoffSeconds must be >= podInitialBackoffSeconds")
        return self

    def profile(self, scheduler_name: str) -> SchedulerProfile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


# The default plugin set (multiPoint, in order) and score weights (kube-scheduler's defaults
# where they exist). Order matters for Filter: cheap, decisive filters first.
DEFAULT_PLUGINS: list[tuple[str, int | None]] = [
    (PRIORITY_SORT, None),
    (SCHEDULING_GATES, None),
    (UNSUPPORTED_POD_FIELDS, None),
    (NODE_UNSCHEDULABLE, None),
    (NODE_NAME, None),
    (TAINT_TOLERATION, 3),
    (NODE_AFFINITY, 2),
    (NODE_PORTS, None),
    (NODE_RESOURCES_FIT, 1),
    (NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (VOLUME_RESTRICTIONS, None),  # kube's order: the volume plugins after NodeResourcesFit
    (NODE_VOLUME_LIMITS, None),
    (VOLUME_BINDING, 1),
    (VOLUME_ZONE, None),
    (POD_TOPOLOGY_SPREAD, 2),  # kube's order: before InterPodAffinity
    (INTER_POD_AFFINITY, 2),
    # kube's order: after InterPodAffinity, before DefaultPreemption (deallocating an idle
    # claim beats evicting a pod); before the gang plugins, whose checks count its verdict.
    (DYNAMIC_RESOURCES, 2),
    (QUEUE_CAPACITY, None),
    (COSCHEDULING, None),
    (TOPOLOGY_PACKING, 2),
    (QUEUE_RECLAIM, None),
    (DEFAULT_PREEMPTION, None),
    (GANG_RESERVATION, None),
    (DEFAULT_BINDER, None),
]
# Slots that may be absent while their plugins are being built (skipped if unregistered).
OPTIONAL_DEFAULT_PLUGINS: frozenset[str] = frozenset({COSCHEDULING, TOPOLOGY_PACKING, DEFAULT_PREEMPTION, GANG_RESERVATION})


def default_profile(scheduler_name: str = DEFAULT_PROFILE_NAME) -> SchedulerProfile:
    return SchedulerProfile(scheduler_name=scheduler_name)


def default_configuration(
    scheduler_names: tuple[str, ...] = PROFILE_NAMES,
) -> SchedulerConfiguration:
    """One default profile per schedulerName (embedded mode serves every backend's pods)."""
    return SchedulerConfiguration(profiles=[default_profile(n) for n in scheduler_names])
