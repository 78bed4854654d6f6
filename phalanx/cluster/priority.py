"""The API server's Priority admission plugin, built into the embedded cluster.

kube-apiserver resolves a new pod's `priorityClassName` into `spec.priority` (and
`preemptionPolicy`), uses the `globalDefault` PriorityClass when none is named, and rejects
a pod naming a class that does not exist. The scheduler's queue order and preemption read
`spec.priority`, so MemoryCluster does the same for every pod it admits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.api.core import Pod, PriorityClass

from .client import Invalid

if TYPE_CHECKING:
    from .memory import MemoryCluster

# Built-in classes every cluster has (values as in Kubernetes).
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


def install_priority_admission(cluster: MemoryCluster) -> None:
    """Register the plugin. It reads PriorityClasses from the cluster's own store, so a pod
    create costs a dict look-up, not an API list."""

    def classes() -> dict[str, PriorityClass]:
        return cluster._store(PriorityClass).objects  # type: ignore[return-value]

    def resolve(pod: Pod, _old: Pod | None) -> None:
        spec = pod.spec
        name = spec.priority_class_name
        if name in SYSTEM_CLASSES:
            spec.priority = SYSTEM_CLASSES[name]
            return
        if name:
            pc = classes().get(name)
            if pc is None:
                raise Invalid(f"no PriorityClass with name {name} was found",
                              kind="Pod", name=pod.name, field="spec.priorityClassName")
        else:
            defaults = [c for c in classes().values() if c.global_default]
            if not defaults:
                if spec.priority is None:
                    spec.priority = 0
                return
            pc = max(defaults, key=lambda c: c.value)
            spec.priority_class_name = pc.name
        spec.priority = pc.value
        if pc.preemption_policy and spec.preemption_policy is None:
            spec.preemption_policy = pc.preemption_policy

    # Priority is set once, at creation.
    cluster.register_admission(Pod, mutate=resolve, operations=("CREATE",))
