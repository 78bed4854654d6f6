"""RuntimeClass on the embedded cluster: the kind's validation, and the API server's
RuntimeClass admission plugin for pods (plugin/pkg/admission/runtimeclass, on by default in
kube-apiserver 1.36).

On pod create only (updates are not looked at):
- a pod naming a RuntimeClass that does not exist is refused, 403 Forbidden:
  `pods "p" is forbidden: pod rejected: RuntimeClass "x" not found`;
- mutation: `spec.overhead` := the class's `overhead.podFixed` (a pod that sets a different
  overhead itself is refused); the class's `scheduling.nodeSelector` is merged into the
  pod's (the same key with another value is refused, naming both); its
  `scheduling.tolerations` are appended, keeping only the broadest of overlapping ones
  (`merge_tolerations`, pkg/util/tolerations);
- validation, after every mutation and the pod's own validation: the pod's overhead must
  equal its class's (none without a class, or when the class has none).

So a scheduler never needs to know about RuntimeClasses: the pod it sees carries them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from phalanx.api.core import Pod
from phalanx.api.pod import Toleration
from phalanx.api.quantity import parse_quantity
from phalanx.api.runtimeclass import RuntimeClass

from .client import Forbidden
from .podresources import overhead_errors
from .podvalidation.fielderrors import FieldErrors, dns_label_errors, duplicate, each_invalid
from .podvalidation.labelselector import label_map_errors
from .podvalidation.tolerations import toleration_errors
from .storage import raise_errors

if TYPE_CHECKING:
    from .memory import MemoryCluster

# --- the kind ------------------------------------------------------------------------------


def validate_runtime_class(rc: RuntimeClass) -> FieldErrors:
    """pkg/apis/node/validation ValidateRuntimeClass (the name is checked for every kind)."""
    errs: FieldErrors = []
    if not rc.handler:
        errs.append(("handler", "Required value"))
    else:
        errs += each_invalid("handler", rc.handler, dns_label_errors(rc.handler))
    if rc.overhead is not None and rc.overhead.pod_fixed:
        errs += overhead_errors(rc.overhead.pod_fixed, "overhead")
    if rc.scheduling is not None:
        errs += label_map_errors(rc.scheduling.node_selector, "scheduling.nodeSelector")
        tolerations = rc.scheduling.tolerations or []
        errs += toleration_errors(tolerations, "scheduling.tolerations")
        seen: set[tuple[str, str, str, str]] = set()
        for i, t in enumerate(tolerations):
            list_key = (t.key or "", t.operator or "", t.value or "", t.effect or "")
            if list_key in seen:
                errs.append(duplicate(f"scheduling.tolerations[{i}]", t.to_dict()))
            seen.add(list_key)
    return errs


def validate_runtime_class_update(old: RuntimeClass, new: RuntimeClass) -> FieldErrors:
    """Only the metadata is checked on update (as kube), and the handler is immutable."""
    if old.handler != new.handler:
        return [("handler", f'Invalid value: "{new.handler}": field is immutable')]
    return []


# --- tolerations merge (pkg/util/tolerations) ---------------------------------------------


def _fields(t: Toleration) -> tuple[str, str, str, str, int | None]:
    """A toleration's value as Go compares it (unset strings are empty)."""
    return (t.key or "", t.operator or "", t.value or "", t.effect or "", t.toleration_seconds)


def is_superset(ss: Toleration, t: Toleration) -> bool:
    """Whether `ss` tolerates every taint `t` tolerates."""
    s_key, s_op, s_value, s_effect, s_seconds = _fields(ss)
    t_key, t_op, t_value, t_effect, t_seconds = _fields(t)
    if (s_key, s_op, s_value, s_effect, s_seconds) == (t_key, t_op, t_value, t_effect,
                                                        t_seconds):
        return True
    if t_key != s_key and (s_key or s_op != "Exists"):
        return False  # only an empty key with Exists matches every key
    if t_effect != s_effect and s_effect:
        return False  # an empty effect matches every effect
    if s_effect == "NoExecute" and s_seconds is not None and (
            t_seconds is None or t_seconds > s_seconds):
        return False  # a bounded NoExecute toleration covers only shorter ones
    if s_op in ("Equal", ""):
        return t_op == "Equal" and t_value == s_value
    return s_op == "Exists"


def merge_tolerations(first: Sequence[Toleration],
                      second: Sequence[Toleration]) -> list[Toleration]:
    """Both lists, in order, minus every toleration another one covers (of equal ones, the
    first is kept)."""
    every = [*first, *second]
    merged: list[Toleration] = []
    for i, t in enumerate(every):
        if any(is_superset(m, t) for m in merged):
            continue
        if any(_fields(t) != _fields(later) and is_superset(later, t)
               for later in every[i + 1:]):
            continue
        merged.append(t)
    return merged


# --- the admission plugin -----------------------------------------------------------------


def _forbidden(pod: Pod, why: str) -> Forbidden:
    return Forbidden(f'pods "{pod.name}" is forbidden: {why}', kind="Pod", name=pod.name)


def _same_resources(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """apimachinery's semantic equality: quantities by value, nil equal to empty."""
    a, b = a or {}, b or {}
    if a.keys() != b.keys():
        return False
    try:
        return all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except ValueError:
        return all(str(a[k]) == str(b[k]) for k in a)


def set_overhead(pod: Pod, rc: RuntimeClass | None) -> None:
    if rc is None or rc.overhead is None:
        return
    fixed = rc.overhead.pod_fixed
    if pod.spec.overhead and not _same_resources(fixed, pod.spec.overhead):
        raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                              "defined Overhead")
    pod.spec.overhead = dict(fixed) if fixed is not None else None
    pod.spec.invalidate_requests()


def set_scheduling(pod: Pod, rc: RuntimeClass | None) -> None:
    if rc is None or rc.scheduling is None:
        return
    wanted = rc.scheduling.node_selector or {}
    selector = pod.spec.node_selector
    if selector is None:
        selector = dict(wanted) if rc.scheduling.node_selector is not None else None
    else:
        for key in sorted(wanted):
            value = selector.get(key)
            if value is not None and value != wanted[key]:
                raise _forbidden(pod, f"conflict: runtimeClass.scheduling.nodeSelector[{key}]"
                                      f" = {wanted[key]}; pod.spec.nodeSelector[{key}] = "
                                      f"{value}")
            selector[key] = wanted[key]
    merged = merge_tolerations(pod.spec.tolerations or [],
                               [t.model_copy() for t in rc.scheduling.tolerations or ()])
    pod.spec.node_selector = selector
    pod.spec.tolerations = merged or None


def validate_overhead(pod: Pod, rc: RuntimeClass | None) -> None:
    if rc is not None and rc.overhead is not None:
        if not _same_resources(rc.overhead.pod_fixed, pod.spec.overhead):
            raise _forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                                  "defined Overhead")
    elif pod.spec.overhead is not None:
        raise _forbidden(pod, "pod rejected: Pod Overhead set without corresponding "
                              "RuntimeClass defined Overhead")


def install_runtimeclass_admission(cluster: MemoryCluster) -> None:
    """RuntimeClass validation, and the admission plugin on every pod create. Classes are
    read from the cluster's own store (a dict look-up per pod that names one)."""

    def lookup(pod: Pod) -> RuntimeClass | None:
        name = pod.spec.runtime_class_name
        if name is None:
            return None
        rc = cluster._store(RuntimeClass).objects.get(name)
        if rc is None:
            raise _forbidden(pod, f'pod rejected: RuntimeClass "{name}" not found')
        return rc  # type: ignore[return-value]

    def admit(pod: Pod, _old: Pod | None) -> None:
        rc = lookup(pod)
        set_overhead(pod, rc)
        set_scheduling(pod, rc)

    def validate(pod: Pod, _old: Pod | None) -> None:
        validate_overhead(pod, lookup(pod))

    def check(rc: RuntimeClass, old: RuntimeClass | None) -> None:
        raise_errors(rc, validate_runtime_class(rc) if old is None
                     else validate_runtime_class_update(old, rc))

    cluster.register_admission(RuntimeClass, validate=check)
    cluster.register_admission(Pod, mutate=admit, validate=validate, operations=("CREATE",))
