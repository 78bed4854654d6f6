"""The API server's Priority admission plugin, for the embedded cluster.

A real kube-apiserver resolves a new pod's `priorityClassName` into `spec.priority` (and
`preemptionPolicy`), uses the `globalDefault` PriorityClass when none is named, and rejects
a pod naming a class that does not exist. The scheduler's queue order and preemption read
`spec.priority`, so the simulated cluster must do the same.
"""

from __future__ import annotations

from phalanx.api.core import Pod, PriorityClass
from phalanx.cluster.client import Client, Invalid, NotFound
from phalanx.cluster.memory import MemoryCluster

# Built-in classes every cluster has (values as in Kubernetes).
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


def install_priority_admission(cluster: MemoryCluster) -> None:
    client: Client = cluster

    async def resolve(pod: Pod, old: Pod | None) -> None:
        if old is not None:
            return  # priority is set once, at creation
        name = pod.spec.priority_class_name
        if name in SYSTEM_CLASSES:
            pod.spec.priority = SYSTEM_CLASSES[name]
            return
        if name:
            try:
                pc = await client.get(PriorityClass, name)
            except NotFound:
                raise Invalid(f'no PriorityClass with name {name} was found',
                              kind="Pod", name=pod.name,
                              field="spec.priorityClassName") from None
        else:
            default = [c for c in (await client.list(PriorityClass)).items
                       if c.global_default]
            if not default:
                if pod.spec.priority is None:
                    pod.spec.priority = 0
                return
            pc = max(default, key=lambda c: c.value)
            pod.spec.priority_class_name = pc.name
        pod.spec.priority = pc.value
        if pc.preemption_policy and pod.spec.preemption_policy is None:
            pod.spec.preemption_policy = pc.preemption_policy

    cluster.register_admission(Pod, mutate=resolve)
