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

A profile's plugins are merged onto `DEFAULT_PLUGINS` as kube-scheduler does (resolve.py):
`multiPoint.enabled` adds, and re-stating a default there reconfigures it in its default
place; `disabled` removes (`"*"` removes every default at that point). `multiPoint` enables a
plugin at every extension point it implements. At one point, a plugin enabled both there and
in the merged multiPoint list runs first (in the point's order), then the multiPoint ones,
then the plugins enabled only at that point. A plugin named twice in one `enabled` list, or
twice in `pluginConfig`, is refused. A score weight of 0 (or none) means 1, as in kube.

`schedulerName` is required when there are several profiles (and may never be empty). A
single profile without one serves `phalanx-scheduler` (Phalanx's default; kube-scheduler's
is `default-scheduler`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

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
    # kube's int32; 0 or unset means 1 at Score (framework.go: "a weight of zero is not
    # permitted"). Negative weights are refused.
    weight: int | None = Field(default=None, ge=0, le=2**31 - 1)


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
    # Required with several profiles; a lone profile without one serves phalanx-scheduler
    # (kube-scheduler's default would be default-scheduler). Never empty.
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


def _whole_number(value: Any) -> Any:
    """1.0 is 1 (a YAML float without fraction decodes into kube's int64); 1.5 is refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# kube's int64 seconds: whole numbers only (no strings, no booleans, no fractions).
Int64 = Annotated[int, BeforeValidator(_whole_number), Field(strict=True)]

# kube validation.go invalidPluginsByVersion: plugins removed from the v1 API.
KUBE_CONFIG_V1 = "kubescheduler.config.k8s.io/v1"
REMOVED_PLUGINS: dict[str, str] = {
    name: KUBE_CONFIG_V1 for name in ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
}


# The (apiVersion, kind) a configuration may name: kube-scheduler's file format, and the
# name this model had before files were read (for configurations built in Python).
CONFIGURATION_KINDS = (("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration"),
                       ("phalanx.io/v1alpha1", "SchedulerConfiguration"))


class SchedulerConfiguration(KubeModel):
    api_version: str = "phalanx.io/v1alpha1"
    kind: str = "SchedulerConfiguration"
    profiles: list[SchedulerProfile] = Field(default_factory=list)
    pod_initial_backoff_seconds: Int64 = Field(default=1, gt=0)
    pod_max_backoff_seconds: Int64 = Field(default=10, gt=0)
    # Unschedulable pods are retried at least this often even without a helpful event.
    pod_max_in_unschedulable_pods_duration_seconds: float = Field(default=300.0, gt=0)
    # 0: adaptive like kube-scheduler (50% minus 1% per 125 nodes, at least 5%, >= 100 nodes).
    percentage_of_nodes_to_score: int = Field(default=0, ge=0, le=100)
    # Seed for tie-breaking between equally scored nodes (same seed = same placement).
    seed: int = 0

    @model_validator(mode="after")
    def _valid(self) -> SchedulerConfiguration:
        """kube's ValidateKubeSchedulerConfiguration, as far as it needs no plugin: every
        problem at once. Plugin args are validated when the scheduler is built (pluginargs.py)."""
        errors: list[str] = []
        # Empty: a file's document, whose type meta its Resource class fills and checks.
        if (self.api_version or self.kind) and \
                (self.api_version, self.kind) not in CONFIGURATION_KINDS:
            known = " or ".join(f"{v} {k}" for v, k in CONFIGURATION_KINDS)
            errors.append(f"apiVersion/kind: Unsupported value: "
                          f'"{self.api_version} {self.kind}": supported values: {known}')
        seen: dict[str, int] = {}
        for i, p in enumerate(self.profiles):
            named = "scheduler_name" in p.model_fields_set
            if not p.scheduler_name or (len(self.profiles) > 1 and not named):
                errors.append(f"profiles[{i}].schedulerName: Required value")
            elif p.scheduler_name in seen:
                errors.append(f'profiles[{i}].schedulerName: Duplicate value: '
                              f'"profiles[{seen[p.scheduler_name]}].schedulerName"')
            seen.setdefault(p.scheduler_name, i)
            errors += self._plugin_errors(i, p)
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            errors.append("podMaxBackoffSeconds must be >= podInitialBackoffSeconds")
        if errors:
            raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return self

    def _plugin_errors(self, i: int, profile: SchedulerProfile) -> list[str]:
        """kube's validatePluginConfig: removed plugins (at the points and in pluginConfig)
        and a plugin configured twice."""
        errors: list[str] = []
        version = getattr(self, "api_version", "")
        kind = getattr(self, "kind", "") or "KubeSchedulerConfiguration"

        def removed(path: str, name: str) -> None:
            if name in REMOVED_PLUGINS:
                errors.append(f'{path}: Invalid value: "{name}": was invalid in version '
                              f'"{REMOVED_PLUGINS[name]}" ({kind} is version "{version}")')

        for point in Plugins.model_fields:
            if point == "multi_point":  # as kube: only the named points are checked here
                continue
            ps: PluginSet = getattr(profile.plugins, point)
            camel = Plugins.model_fields[point].alias or point
            for k, ref in enumerate(ps.enabled):
                removed(f"profiles[{i}].plugins.{camel}.enabled[{k}]", ref.name)
        configured: set[str] = set()
        for j, pc in enumerate(profile.plugin_config):
            path = f"profiles[{i}].pluginConfig[{j}]"
            if pc.name in configured:
                errors.append(f'{path}: Duplicate value: "{pc.name}"')
            configured.add(pc.name)
            removed(path, pc.name)
        return errors

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
