"""The API server's Priority admission plugin, built into the embedded cluster.

kube-apiserver resolves a new pod's `priorityClassName` into `spec.priority` (and
`preemptionPolicy`), uses the `globalDefault` PriorityClass when none is named, and rejects
a pod naming a class that does not exist. The scheduler's queue order and preemption read
`spec.priority`, so MemoryCluster does the same for every pod it admits.

As kube's plugin (plugin/pkg/admission/priority), a pod may not choose its own priority:
a written `spec.priority` or `spec.preemptionPolicy` that differs from what the class
gives (value 0 and PreemptLowerPriority when no class applies) is Forbidden. A
PriorityClass's `preemptionPolicy` defaults to PreemptLowerPriority, as the API's
defaulting does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from phalanx.api.core import Pod, PriorityClass

from .client import Forbidden, Invalid

if TYPE_CHECKING:
    from .memory import MemoryCluster

# Built-in classes every cluster has (values as in Kubernetes).
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


def install_priority_admission(cluster: MemoryCluster) -> None:
    """Register the plugin. It reads PriorityClasses from the cluster's own store, so a pod
    create costs a dict look-up, not an API list."""

    def classes() -> dict[str, PriorityClass]:
        return cluster._store(PriorityClass).objects  # type: ignore[return-value]

    def resolve(pod: Pod, _old: Pod | None) -> None:
        spec = pod.spec
        try:
            name, value, policy = establish_priority(classes(), spec.priority_class_name)
        except LookupError as err:
            raise Invalid(str(err), kind="Pod", name=pod.name,
                          field="spec.priorityClassName") from None
        refused = written_priority_error(spec.priority, spec.preemption_policy, value, policy)
        if refused is not None:
            raise Forbidden(f'pods "{pod.name}" is forbidden: {refused[1]}', kind="Pod",
                            name=pod.name)
        spec.priority_class_name = name or None
        spec.priority = value
        spec.preemption_policy = policy  # type: ignore[assignment]

    def default_policy(pc: PriorityClass, _old: PriorityClass | None) -> None:
        if pc.preemption_policy is None:  # SetDefaults_PriorityClass
            pc.preemption_policy = PREEMPT_LOWER_PRIORITY

    # Priority is set once, at creation.
    cluster.register_admission(Pod, mutate=resolve, operations=("CREATE",))
    cluster.register_admission(PriorityClass, mutate=default_policy)


def establish_priority(classes: Mapping[str, PriorityClass], name: str | None
                       ) -> tuple[str, int, str]:
    """(class name, priority, preemption policy) a pod naming `name` gets, as the plugin's
    establishPriority computes them: the named class; with none named, the globalDefault
    class with the lowest value; with no default class, ("", 0, PreemptLowerPriority).
    A class without a preemptionPolicy has the API default, PreemptLowerPriority. Raises
    LookupError (kube's message) when the named class does not exist."""
    if name:
        if name in SYSTEM_CLASSES and name not in classes:
            return name, SYSTEM_CLASSES[name], PREEMPT_LOWER_PRIORITY
        pc = classes.get(name)
        if pc is None:
            raise LookupError(f"no PriorityClass with name {name} was found")
        return name, pc.value, pc.preemption_policy or PREEMPT_LOWER_PRIORITY
    default: PriorityClass | None = None
    for pc in classes.values():
        if pc.global_default and (default is None or pc.value < default.value):
            default = pc
    if default is None:
        return "", 0, PREEMPT_LOWER_PRIORITY
    return default.name, default.value, default.preemption_policy or PREEMPT_LOWER_PRIORITY


def written_priority_error(priority: int | None, policy: str | None, computed: int,
                           computed_policy: str) -> tuple[str, str] | None:
    """(the pod spec field, why) when a pod's own `priority` / `preemptionPolicy` is refused
    (kube's words), else None."""
    if priority is not None and priority != computed:
        return "priority", (
            f"the integer value of priority ({priority}) must not be provided in pod spec; "
            f"priority admission controller computed {computed} from the given "
            "PriorityClass name")
    if policy is not None and policy != computed_policy:
        return "preemptionPolicy", (
            f"the string value of PreemptionPolicy ({policy}) must not be provided in pod "
            f"spec; priority admission controller computed {computed_policy} from the given "
            "PriorityClass name")
    return None
