"""Seeded random scheduling cases: nodes, pods already bound to them, and one pod to place.

    case = generate_case(seed=7, features=BASE_FEATURES, prefix="kd7")

Everything is a plain manifest (camelCase dicts, exactly what is sent to the API server), so
a case means the same to kube-scheduler and phalanx-scheduler. The same (seed, features,
prefix) always gives the same case: one `random.Random(seed)`, lists only (never a set's
order). Names derive from `prefix` (the runner makes it unique per run, as nodes are
cluster-scoped); `Case.uses` lists the enabled features a case really exercises, which is
what the report counts agreement by.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import features as F

from .draparts import DraParts
from .podparts import (  # noqa: F401  (re-exported: the names a case uses)
    APPS,
    CASE_LABEL,
    DISKS,
    EXISTING_SCHEDULER,
    HOSTNAME,
    PAUSE_IMAGE,
    POOLS,
    TAINTS,
    TIERS,
    ZONE,
    ZONES,
    PodParts,
)

NODE_LABEL = "kubediff.phalanx.io/node"  # = node name; pins the re-check pod to a node
GPU = "example.com/gpu"
NODE_CPU = ("1", "2", "4", "8")
NODE_MEMORY = ("2Gi", "4Gi", "8Gi", "16Gi")
POD_CPU = ("100m", "250m", "500m", "1", "1500m", "3")
POD_MEMORY = ("128Mi", "512Mi", "1Gi", "2Gi", "6Gi")


@dataclass
class Case:
    seed: int
    prefix: str
    features: tuple[str, ...]  # enabled when generated
    nodes: list[dict[str, Any]] = field(default_factory=list)
    existing: list[dict[str, Any]] = field(default_factory=list)  # pods bound at creation
    volumes: list[dict[str, Any]] = field(default_factory=list)  # StorageClass, PV, PVC
    pod: dict[str, Any] = field(default_factory=dict)  # the pod to place: metadata + spec
    devices: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # node -> GPUs (DRA)
    claim: dict[str, Any] | None = None  # the pod's ResourceClaim spec (DRA), driver as DRIVER
    uses: list[str] = field(default_factory=list)  # features it exercises, in ALL_FEATURES order

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    def pod_named(self, name: str, scheduler_name: str) -> dict[str, Any]:
        """The pod to place as a full manifest (a deep copy) under `name`."""
        import copy

        pod = copy.deepcopy(self.pod)
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        pod["metadata"]["name"] = name
        pod["spec"]["schedulerName"] = scheduler_name
        return pod

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "prefix": self.prefix, "features": list(self.features),
                "uses": self.uses, "nodes": self.nodes, "existing": self.existing,
                "volumes": self.volumes, "pod": self.pod, "devices": self.devices,
                "claim": self.claim}


class _Gen(PodParts, DraParts):
    def __init__(self, seed: int, features: tuple[str, ...], prefix: str) -> None:
        self.rng = random.Random(seed)
        self.on = set(features)
        self.case = Case(seed=seed, prefix=prefix, features=F.ordered(features))
        self._used: dict[str, None] = {}
        self.lean = False

    def use(self, feature: str) -> None:
        self._used[feature] = None

    # --- nodes --------------------------------------------------------------------------

    def nodes(self) -> None:
        # A lean case has roomy, untainted, schedulable nodes, so the late filters (pod
        # affinity, spread, ports, volumes) decide more often than the early ones.
        self.lean = self.chance(0.3)
        count = self.rng.randint(1, 16)
        zones = list(ZONES[: self.rng.randint(1, 3)])
        for i in range(count):
            name = f"{self.case.prefix}-n{i}"
            labels = {HOSTNAME: name, CASE_LABEL: self.case.prefix, NODE_LABEL: name}
            if not self.chance(0.1):  # a few nodes have no zone
                labels[ZONE] = self.pick(zones)
            if self.chance(0.6):
                labels["disk"] = self.pick(DISKS)
            if self.chance(0.7):
                labels["gen"] = str(self.rng.randint(1, 8))
            if self.chance(0.5):
                labels["pool"] = self.pick(POOLS)
            alloc = {"cpu": self.pick(NODE_CPU), "memory": self.pick(NODE_MEMORY),
                     "pods": "110", "ephemeral-storage": "100Gi"}
            if self.lean:
                alloc.update(cpu="16", memory="32Gi")
            elif F.RESOURCES in self.on:
                if self.chance(0.15):
                    alloc["pods"] = str(self.rng.randint(1, 3))
                if self.chance(0.3):
                    alloc[GPU] = str(self.rng.randint(1, 4))
            spec: dict[str, Any] = {}
            if F.TAINTS in self.on and not self.lean and self.chance(0.3):
                taints = []
                for key, value, effect in self.sample(TAINTS, self.rng.randint(1, 2)):
                    if any(t["key"] == key for t in taints):
                        continue  # (key, effect) pairs must be unique; keep it simple
                    taints.append({"key": key, **({"value": value} if value else {}),
                                   "effect": effect})
                spec["taints"] = taints
            if F.UNSCHEDULABLE in self.on and not self.lean and self.chance(0.1):
                spec["unschedulable"] = True
                self.use(F.UNSCHEDULABLE)
            self.node_devices(name)
            self.case.nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"capacity": dict(alloc), "allocatable": alloc},
            })

    # --- pods ---------------------------------------------------------------------------

    def labels(self) -> dict[str, str]:
        labels = {CASE_LABEL: self.case.prefix}
        if self.chance(0.8):
            labels["app"] = self.pick(APPS)
        if self.chance(0.5):
            labels["tier"] = self.pick(TIERS)
        return labels

    def requests(self, scale: float = 1.0) -> dict[str, Any]:
        req: dict[str, str] = {}
        if self.chance(0.85 * scale):
            req["cpu"] = self.pick(POD_CPU)
        if self.chance(0.7 * scale):
            req["memory"] = self.pick(POD_MEMORY)
        lim: dict[str, str] = {}
        if F.RESOURCES in self.on and self.chance(0.15):
            lim[GPU] = req[GPU] = str(self.rng.randint(1, 2))  # extended: limits == requests
        out: dict[str, Any] = {}
        if req:
            out["requests"] = req
        if lim:
            out["limits"] = lim
        return out

    def container(self, name: str, scale: float = 1.0) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "image": PAUSE_IMAGE}
        res = self.requests(scale)
        if res:
            c["resources"] = res
        return c

    def existing_pods(self) -> None:
        nodes = self.case.node_names
        for i in range(self.rng.randint(0, (3 if self.lean else 2) * len(nodes))):
            labels = self.labels()
            container = self.container("c", scale=0.8)
            spec: dict[str, Any] = {
                "schedulerName": EXISTING_SCHEDULER, "nodeName": self.pick(nodes),
                "containers": [container], "terminationGracePeriodSeconds": 0,
            }
            if F.POD_AFFINITY in self.on and self.chance(0.2):
                spec["affinity"] = {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [self.pod_term(labels)]}}
                self.use(F.POD_AFFINITY)
            if F.PREFERRED in self.on and self.chance(0.15):
                kind = self.pick(("podAffinity", "podAntiAffinity"))
                aff = spec.setdefault("affinity", {}).setdefault(kind, {})
                aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": self.rng.randint(1, 100), "podAffinityTerm": self.pod_term(labels)}]
                self.use(F.PREFERRED)
            if F.HOST_PORTS in self.on and self.chance(0.25):
                container["ports"] = [self.host_port()]
                self.use(F.HOST_PORTS)
            self.case.existing.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{self.case.prefix}-e{i}", "labels": labels},
                "spec": spec,
            })

    # --- the pod to place ---------------------------------------------------------------

    def pod(self) -> None:
        labels = self.labels()
        main = self.container("main")
        spec: dict[str, Any] = {"containers": [main], "terminationGracePeriodSeconds": 0}
        if main.get("resources") or any(n["status"]["allocatable"]["pods"] != "110"
                                        for n in self.case.nodes):
            self.use(F.RESOURCES)
        if F.RESOURCES in self.on and self.chance(0.15):
            # The effective request is max(sum of containers, largest init container).
            spec["initContainers"] = [self.container("init")]
        if F.RESOURCES in self.on and self.chance(0.15):
            spec["containers"].append(self.container("side", scale=0.5))
        if F.TAINTS in self.on:
            self.tolerations(spec)
        if F.NODE_AFFINITY in self.on:
            self.node_affinity(spec)
        if F.POD_AFFINITY in self.on:
            self.pod_affinity(spec, labels)
        if F.PREFERRED in self.on:
            self.preferred(spec, labels)
        if F.SPREAD in self.on and self.chance(0.6 if self.lean else 0.4):
            self.spread(spec, labels)
        if F.HOST_PORTS in self.on and self.chance(0.35):
            ports = []
            for _ in range(self.rng.randint(1, 2)):
                p = self.host_port()
                if all((q["containerPort"], q["protocol"]) != (p["containerPort"], p["protocol"])
                       for q in ports):
                    ports.append(p)
            main["ports"] = ports
            self.use(F.HOST_PORTS)
        if F.VOLUMES in self.on and self.chance(0.35):
            self.volumes(spec)
        self.claim(spec)
        self.case.pod = {"metadata": {"labels": labels}, "spec": spec}

    def build(self) -> Case:
        self.nodes()
        self.existing_pods()
        self.pod()
        self.case.uses = list(F.ordered(self._used))
        return self.case


def generate_case(seed: int, features: tuple[str, ...] = F.BASE_FEATURES,
                  prefix: str | None = None) -> Case:
    """The case of `seed` with only `features` in play; names start with `prefix`
    (default `kd<seed>`; a DNS label, at most 40 characters)."""
    prefix = prefix or f"kd{seed}"
    if len(prefix) > 40:
        raise ValueError(f"prefix {prefix!r} is longer than 40 characters")
    return _Gen(seed, tuple(features), prefix).build()


def generate_cases(seed: int, count: int, features: tuple[str, ...] = F.BASE_FEATURES,
                   prefix: str = "kd") -> list[Case]:
    """Cases `seed`, `seed + 1`, ... (each reproducible alone with its own seed)."""
    return [generate_case(s, features, f"{prefix}{s}") for s in range(seed, seed + count)]
