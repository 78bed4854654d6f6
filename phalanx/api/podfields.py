"""Which pod spec fields decide where a pod may run, and which scheduler plugin reads each.

Every field a user can write in a PodSpec (and in its containers) is listed here exactly once:
either in `PLACEMENT_FIELDS`, with the kube-scheduler 1.36 plugin that honours it, or in
`NOT_PLACEMENT_FIELDS`, with why no scheduler reads it. A test walks the PodSpec model and
fails on a field in neither, so a field added to the model cannot be ignored in silence.

The scheduler refuses a pod that uses a placement field whose plugin its profile lacks
(`phalanx.scheduler.plugins.unsupportedfields`), and admission reports the same fields of a
PodCliqueSet's pod templates against the backend's scheduler (`phalanx.backends.features`).
`uses(spec)` answers which placement fields a spec sets, with their paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from phalanx.api.pod import Container, PodSpec

# The plugin names kube-scheduler 1.36 gives them (and phalanx-scheduler reuses).
SCHEDULING_GATES = "SchedulingGates"
PRIORITY_SORT = "PrioritySort"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_NAME = "NodeName"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
NODE_RESOURCES_FIT = "NodeResourcesFit"
INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
NODE_PORTS = "NodePorts"
VOLUME_BINDING = "VolumeBinding"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
DYNAMIC_RESOURCES = "DynamicResources"
# Gangs: kube 1.36's GangScheduling plugin for spec.workloadRef / spec.schedulingGroup;
# phalanx-scheduler's Coscheduling reads the same objects.
COSCHEDULING = "Coscheduling"

# Volume sources that need a plugin, by source key (VolumeSource in core/v1).
PVC_SOURCES = ("persistentVolumeClaim", "ephemeral")
# Disks that one node at a time may mount read-write (VolumeRestrictions' conflicts).
EXCLUSIVE_DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
# In-tree sources NodeVolumeLimits reads through CSI migration: azureDisk, cinder and
# portworxVolume count against the node's CSINode limit of the driver they migrated to;
# vsphereVolume is read but, as in kube 1.36, never counted. (AWS EBS and GCE PD volumes are
# counted the same way; they are listed under VolumeRestrictions.)
ATTACH_LIMITED_SOURCES = ("azureDisk", "cinder", "vsphereVolume", "portworxVolume")
# Sources no scheduler plugin reads: node-local, or network filesystems any node can mount.
UNCONSTRAINED_SOURCES = (
    "hostPath", "emptyDir", "gitRepo", "secret", "nfs", "glusterfs", "flexVolume", "cephfs",
    "flocker", "downwardAPI", "fc", "azureFile", "configMap", "quobyte",
    "photonPersistentDisk", "projected", "scaleIO", "storageos", "csi", "image",
)
VOLUME_SOURCES = PVC_SOURCES + EXCLUSIVE_DISK_SOURCES + ATTACH_LIMITED_SOURCES + UNCONSTRAINED_SOURCES


@dataclass(frozen=True, slots=True)
class PlacementField:
    path: str  # camelCase, with [] for lists ("spec.containers[].ports[].hostPort")
    plugin: str  # the kube-scheduler plugin that honours it
    # The concrete paths a spec sets (with indexes), empty when unused.
    used: Callable[[PodSpec], list[str]]


def _set(path: str, attr: str, default: Any = None) -> Callable[[PodSpec], list[str]]:
    """`path` when the spec sets `attr` to anything but unset or `default` (the value the
    API server gives every pod)."""
    def used(spec: PodSpec) -> list[str]:
        value = getattr(spec, attr)
        return [path] if value not in (None, [], {}) and value != default else []

    return used


def _affinity(path: str, attr: str) -> Callable[[PodSpec], list[str]]:
    def used(spec: PodSpec) -> list[str]:
        a = spec.affinity
        return [path] if a is not None and getattr(a, attr) else []

    return used


def _all_containers(spec: PodSpec) -> Iterator[tuple[str, Container]]:
    for i, c in enumerate(spec.containers):
        yield f"spec.containers[{i}]", c
    for i, c in enumerate(spec.init_containers or ()):
        yield f"spec.initContainers[{i}]", c


def _host_ports(spec: PodSpec) -> list[str]:
    out = []
    for prefix, c in _all_containers(spec):
        for j, p in enumerate(c.ports or ()):
            if p.host_port:
                out.append(f"{prefix}.ports[{j}].hostPort")
    return out


def _container_claims(spec: PodSpec) -> list[str]:
    return [f"{prefix}.resources.claims" for prefix, c in _all_containers(spec)
            if c.resources is not None and c.resources.claims]


def _volumes(sources: tuple[str, ...]) -> Callable[[PodSpec], list[str]]:
    def used(spec: PodSpec) -> list[str]:
        return [f"spec.volumes[{i}].{key}" for i, v in enumerate(spec.volumes or ())
                for key in sources if isinstance(v, dict) and key in v]

    return used


PLACEMENT_FIELDS: tuple[PlacementField, ...] = (
    PlacementField("spec.schedulingGates", SCHEDULING_GATES, _set("spec.schedulingGates", "scheduling_gates")),
    PlacementField("spec.priority", PRIORITY_SORT, _set("spec.priority", "priority")),
    # Resolved into spec.priority by the Priority admission plugin (cluster/priority.py).
    PlacementField("spec.priorityClassName", PRIORITY_SORT,
                   _set("spec.priorityClassName", "priority_class_name")),
    # Priority admission gives every pod PreemptLowerPriority unless its class says Never,
    # so only Never is the pod's own choice.
    PlacementField("spec.preemptionPolicy", DEFAULT_PREEMPTION,
                   _set("spec.preemptionPolicy", "preemption_policy", "PreemptLowerPriority")),
    PlacementField("spec.nodeName", NODE_NAME, _set("spec.nodeName", "node_name")),
    PlacementField("spec.nodeSelector", NODE_AFFINITY, _set("spec.nodeSelector", "node_selector")),
    PlacementField("spec.affinity.nodeAffinity", NODE_AFFINITY,
                   _affinity("spec.affinity.nodeAffinity", "node_affinity")),
    PlacementField("spec.affinity.podAffinity", INTER_POD_AFFINITY,
                   _affinity("spec.affinity.podAffinity", "pod_affinity")),
    PlacementField("spec.affinity.podAntiAffinity", INTER_POD_AFFINITY,
                   _affinity("spec.affinity.podAntiAffinity", "pod_anti_affinity")),
    PlacementField("spec.tolerations", TAINT_TOLERATION, _set("spec.tolerations", "tolerations")),
    PlacementField("spec.topologySpreadConstraints", POD_TOPOLOGY_SPREAD,
                   _set("spec.topologySpreadConstraints", "topology_spread_constraints")),
    # Requests are read for every pod, so these are never "unused"; listed for the walk.
    PlacementField("spec.containers[].resources.requests", NODE_RESOURCES_FIT, lambda s: []),
    PlacementField("spec.containers[].resources.limits", NODE_RESOURCES_FIT, lambda s: []),
    PlacementField("spec.containers[].restartPolicy", NODE_RESOURCES_FIT, lambda s: []),
    PlacementField("spec.overhead", NODE_RESOURCES_FIT, lambda s: []),
    PlacementField("spec.resources", NODE_RESOURCES_FIT, lambda s: []),
    PlacementField("spec.containers[].ports[].hostPort", NODE_PORTS, _host_ports),
    # hostNetwork turns every container port into a host port (API server defaulting).
    PlacementField("spec.hostNetwork", NODE_PORTS,
                   lambda s: ["spec.hostNetwork"] if s.host_network and any(
                       c.ports for _, c in _all_containers(s)) else []),
    PlacementField("spec.resourceClaims", DYNAMIC_RESOURCES,
                   _set("spec.resourceClaims", "resource_claims")),
    PlacementField("spec.containers[].resources.claims", DYNAMIC_RESOURCES, _container_claims),
    PlacementField("spec.volumes[].persistentVolumeClaim", VOLUME_BINDING, _volumes(PVC_SOURCES)),
    PlacementField("spec.volumes[].gcePersistentDisk", VOLUME_RESTRICTIONS,
                   _volumes(EXCLUSIVE_DISK_SOURCES)),
    PlacementField("spec.volumes[].azureDisk", NODE_VOLUME_LIMITS, _volumes(ATTACH_LIMITED_SOURCES)),
    PlacementField("spec.workloadRef", COSCHEDULING, _set("spec.workloadRef", "workload_ref")),
    PlacementField("spec.schedulingGroup", COSCHEDULING,
                   _set("spec.schedulingGroup", "scheduling_group")),
)

# Field path -> why no scheduler plugin reads it (kube-scheduler 1.36 does not either).
NOT_PLACEMENT_FIELDS: dict[str, str] = {
    "spec.schedulerName": "chooses the scheduler profile itself",
    "spec.os": "checked by the kubelet's admission, not by kube-scheduler",
    "spec.runtimeClassName": "the API server's RuntimeClass admission plugin (also run by the "
                             "embedded cluster: phalanx.cluster.runtimeclass) refuses an unknown "
                             "class and merges the class's nodeSelector, tolerations and "
                             "overhead into the pod before any scheduler sees it",
    "spec.containers[].image": "kube-scheduler's ImageLocality only scores nodes that already "
                               "hold the image; phalanx-scheduler does not score images "
                               "(feasibility is unchanged; documented in the README)",
    "spec.ephemeralContainers": "added to running pods only; they may not request resources",
}
_RUNTIME_ONLY = (
    # Pod-level fields the kubelet, DNS or the API server use, never a scheduler.
    "spec.restartPolicy", "spec.terminationGracePeriodSeconds", "spec.activeDeadlineSeconds",
    "spec.serviceAccountName", "spec.serviceAccount", "spec.automountServiceAccountToken",
    "spec.hostname", "spec.subdomain", "spec.setHostnameAsFQDN", "spec.hostPID", "spec.hostIPC",
    "spec.hostUsers", "spec.shareProcessNamespace", "spec.hostAliases", "spec.dnsPolicy",
    "spec.dnsConfig", "spec.securityContext", "spec.imagePullSecrets", "spec.readinessGates",
    "spec.enableServiceLinks",
    # Container fields for the runtime.
    "spec.containers[].name", "spec.containers[].imagePullPolicy", "spec.containers[].command",
    "spec.containers[].args", "spec.containers[].workingDir", "spec.containers[].env",
    "spec.containers[].envFrom", "spec.containers[].resizePolicy",
    "spec.containers[].restartPolicyRules", "spec.containers[].volumeMounts",
    "spec.containers[].volumeDevices", "spec.containers[].livenessProbe",
    "spec.containers[].readinessProbe", "spec.containers[].startupProbe",
    "spec.containers[].lifecycle", "spec.containers[].terminationMessagePath",
    "spec.containers[].terminationMessagePolicy", "spec.containers[].securityContext",
    "spec.containers[].stdin", "spec.containers[].stdinOnce", "spec.containers[].tty",
    "spec.containers[].ports[].containerPort", "spec.containers[].ports[].name",
)
NOT_PLACEMENT_FIELDS.update({p: "read by the kubelet or the API server only" for p in _RUNTIME_ONLY})
# hostIP and protocol only qualify a hostPort (NodePorts reads them with it).
NOT_PLACEMENT_FIELDS["spec.containers[].ports[].hostIP"] = "part of a hostPort (NodePorts)"
NOT_PLACEMENT_FIELDS["spec.containers[].ports[].protocol"] = "part of a hostPort (NodePorts)"
NOT_PLACEMENT_FIELDS.update({f"spec.volumes[].{k}": "no scheduler plugin reads this volume source"
                             for k in UNCONSTRAINED_SOURCES})
# The table lists one representative per plugin for volume sources; the others are covered by
# the same rule.
COVERED_VOLUME_SOURCES: dict[str, str] = {
    **{k: VOLUME_BINDING for k in PVC_SOURCES},
    **{k: VOLUME_RESTRICTIONS for k in EXCLUSIVE_DISK_SOURCES},
    **{k: NODE_VOLUME_LIMITS for k in ATTACH_LIMITED_SOURCES},
}


@dataclass(frozen=True, slots=True)
class FieldUse:
    path: str  # concrete path, with indexes ("spec.volumes[2].persistentVolumeClaim")
    plugin: str


def uses(spec: PodSpec, plugins: Any = None) -> list[FieldUse]:
    """The placement fields `spec` sets, in table order; only those read by `plugins` (a
    container of plugin names) when given."""
    out: list[FieldUse] = []
    for f in PLACEMENT_FIELDS:
        if plugins is not None and f.plugin not in plugins:
            continue
        out.extend(FieldUse(p, f.plugin) for p in f.used(spec))
    return out


def plugins_needed() -> list[str]:
    """Every plugin some placement field needs, in table order."""
    return list(dict.fromkeys(f.plugin for f in PLACEMENT_FIELDS))
