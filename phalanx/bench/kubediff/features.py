"""The features a kubediff case may exercise, and which of them phalanx-scheduler implements.

A feature is generated only when enabled, so a run (or the CI test) can turn on a feature
once phalanx implements it: `available_features()` says which ones do now (a feature backed
by a plugin counts once that plugin is registered).
"""

from __future__ import annotations

from collections.abc import Iterable

RESOURCES = "resources"  # cpu, memory, pods, an extended resource, init containers
TAINTS = "taints"  # node taints (NoSchedule, NoExecute, PreferNoSchedule) and tolerations
UNSCHEDULABLE = "unschedulable"  # cordoned nodes (spec.unschedulable)
NODE_AFFINITY = "node_affinity"  # nodeSelector, required node affinity, matchFields
POD_AFFINITY = "pod_affinity"  # required pod (anti-)affinity, existing pods' anti-affinity
PREFERRED = "preferred"  # preferred node/pod (anti-)affinity terms (scoring only)
SPREAD = "spread"  # topologySpreadConstraints
HOST_PORTS = "host_ports"  # container hostPorts
VOLUMES = "volumes"  # PersistentVolumeClaims: bound (PV node affinity), unbound, missing
MATCH_LABEL_KEYS = "match_label_keys"  # matchLabelKeys / mismatchLabelKeys on terms
DRA = "dra"  # ResourceSlices of GPUs and a ResourceClaim on the pod (draparts.py)

ALL_FEATURES: tuple[str, ...] = (
    RESOURCES, TAINTS, UNSCHEDULABLE, NODE_AFFINITY, POD_AFFINITY, PREFERRED, SPREAD,
    HOST_PORTS, VOLUMES, MATCH_LABEL_KEYS, DRA,
)
# What phalanx-scheduler has had from the start (plugins NodeResourcesFit, TaintToleration,
# NodeUnschedulable, NodeAffinity, InterPodAffinity).
BASE_FEATURES: tuple[str, ...] = (
    RESOURCES, TAINTS, UNSCHEDULABLE, NODE_AFFINITY, POD_AFFINITY, PREFERRED,
)
# kube-apiserver 1.36 merges matchLabelKeys / mismatchLabelKeys into the label selectors when it
# creates a pod (pod affinity and topology spread alike), so on a real server both schedulers
# read the merged selectors: this only needs phalanx to read them right. (On the embedded
# cluster the merge is MemoryCluster admission's job, which kubediff does not exercise.)
SERVER_SIDE: tuple[str, ...] = (MATCH_LABEL_KEYS,)
# Features that need a phalanx plugin which is still being built: on once it is registered.
PLUGIN_OF: dict[str, str] = {
    SPREAD: "PodTopologySpread",
    HOST_PORTS: "NodePorts",
    VOLUMES: "VolumeBinding",
    DRA: "DynamicResources",
}


def parse_features(text: str) -> tuple[str, ...]:
    """`"all"`, `"auto"` (what phalanx implements now) or a comma-separated list; ValueError
    naming an unknown feature."""
    text = text.strip()
    if text == "all":
        return ALL_FEATURES
    if text in ("", "auto"):
        return available_features()
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL_FEATURES]
    if unknown:
        raise ValueError(f"unknown feature(s) {', '.join(unknown)}; known: "
                         f"{', '.join(ALL_FEATURES)}, or 'all', 'auto'")
    return ordered(names)


def ordered(names: Iterable[str]) -> tuple[str, ...]:
    wanted = set(names)
    return tuple(f for f in ALL_FEATURES if f in wanted)


def available_features() -> tuple[str, ...]:
    """BASE_FEATURES, SERVER_SIDE, and each plugin-backed feature whose plugin is
    registered."""
    from phalanx.scheduler.framework.registry import get_plugin

    extra = [f for f, plugin in PLUGIN_OF.items() if get_plugin(plugin) is not None]
    return ordered([*BASE_FEATURES, *SERVER_SIDE, *extra])
