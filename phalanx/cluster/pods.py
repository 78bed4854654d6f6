"""Pod rules the API server enforces: the validation of a new pod's spec (`podvalidation/`,
container resources in `podresources.py`), spec immutability and what updates may change,
scheduling gates, binding.

Written against the shape of core/v1 Pod (`spec.schedulingGates[].name`, `spec.nodeName`,
`status.conditions`) so it works on `phalanx.api.core.Pod` and on any model of that shape.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any, get_args

from phalanx.api.base import Resource
from phalanx.api.pod import PodSpec

from . import rules
from .client import Conflict, Invalid
from .pod_affinity_keys import apply_match_label_keys
from .pod_spread_keys import apply_spread_match_label_keys
from .podresources import resource_errors
from .podvalidation import FieldErrors, pod_create_errors
from .podvalidation.affinity import affinity_errors
from .podvalidation.labelselector import label_map_errors
from .podvalidation.tolerations import toleration_errors

POD_GVK = ("v1", "Pod")
NODE_GVK = ("v1", "Node")

# kube-apiserver's PodTopologyLabels admission (beta, on by default since 1.35): a pod bound
# to a node, by the binding subresource or by a create with spec.nodeName, carries the
# node's zone and region labels, replacing the pod's own values of them (kube-apiserver
# 1.36 measured: a pod created with zone "mine" on a node of zone "z1" is stored with "z1").
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")

# Spec fields a pod update may change at any time, and (additions only) while gated.
_IMAGE_LISTS = ("containers", "initContainers", "ephemeralContainers")
_ALWAYS_MUTABLE = ("activeDeadlineSeconds", "terminationGracePeriodSeconds")


def is_pod(cls: type[Resource]) -> bool:
    return (cls.API_VERSION, cls.KIND) == POD_GVK


def gate_names(pod: Resource) -> list[str]:
    spec = getattr(pod, "spec", None)
    gates = getattr(spec, "scheduling_gates", None) or []
    return [g if isinstance(g, str) else g.name for g in gates]


def node_name(pod: Resource) -> str | None:
    return getattr(getattr(pod, "spec", None), "node_name", None) or None


DEFAULT_SCHEDULER = "default-scheduler"


def apply_defaults(pod: Resource) -> None:
    """The defaults the API server fills in on every write: `spec.schedulerName`."""
    spec = getattr(pod, "spec", None)
    if spec is not None and hasattr(spec, "scheduler_name") and not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER
    if not pod.metadata.resource_version:  # a create (updates carry the stored version)
        apply_match_label_keys(pod)
        apply_spread_match_label_keys(pod)


def validate_create(pod: Resource) -> None:
    """Refuse what kube-apiserver refuses on pod creation (`podvalidation`), listing every
    problem; `Invalid.field` is the first one's path, as the API server orders them."""
    spec = getattr(pod, "spec", None)
    if isinstance(spec, PodSpec):
        errs = pod_create_errors(pod)
    else:  # a pod-shaped model of another kind: the rules that need no PodSpec
        errs = [("spec.nodeName", "Forbidden: cannot be set until all schedulingGates have "
                                  "been cleared")] if gate_names(pod) and node_name(pod) else []
        if spec is not None and hasattr(spec, "containers"):
            errs = resource_errors(spec) + errs
    if errs:
        raise invalid_pod(pod, errs)


def invalid_pod(pod: Resource, errs: FieldErrors) -> Invalid:
    """One Invalid for all of `errs` ([(field, why)]), worded as the API server does."""
    detail = "; ".join(f"{field}: {why}" for field, why in errs)
    return Invalid(f'Pod "{pod.name}" is invalid: ' + (detail if len(errs) == 1
                                                       else f"[{detail}]"),
                   kind="Pod", name=pod.name, field=errs[0][0])


def set_gated_condition(pod: Resource, now: datetime) -> None:
    """As kube-apiserver does on create: a pod created with scheduling gates and no
    PodScheduled condition gets PodScheduled=False, reason SchedulingGated (what
    `kubectl get pods` shows as its STATUS until a scheduler tries the pod)."""
    if not gate_names(pod) or not hasattr(pod, "set_condition"):
        return
    if pod.get_condition("PodScheduled") is None:  # type: ignore[attr-defined]
        pod.set_condition("PodScheduled", False, "SchedulingGated",  # type: ignore[attr-defined]
                          "Scheduling is blocked due to non-empty scheduling gates", now)


def validate_update(old: Resource, new: Resource, spec_fields: set[str] | None = None) -> None:
    """Allow only the pod spec changes Kubernetes allows; raise Invalid naming the field.
    `spec_fields`: the spec fields that differ (`rules.spec_field_changes`), when known."""
    if spec_fields is None:
        spec_fields = rules.spec_field_changes(old, new)
    old_spec, new_spec = getattr(old, "spec", None), getattr(new, "spec", None)
    same = old_spec == new_spec if spec_fields is None else not spec_fields
    if same:
        return
    # Only the fields whose values differ are dumped: an update (a gate lift) usually
    # changes one field of some forty.
    before = old_spec.model_dump(by_alias=True, exclude_none=True, mode="json",
                                 include=spec_fields)
    after = new_spec.model_dump(by_alias=True, exclude_none=True, mode="json",
                                include=spec_fields)
    gated = bool(gate_names(old))
    for field in sorted(before.keys() | after.keys()):
        a, b = before.get(field), after.get(field)
        if a == b:
            continue
        path = f"spec.{field}"
        if field == "schedulingGates":
            added = sorted({g["name"] for g in b or []} - {g["name"] for g in a or []})
            if added:
                raise _invalid(new, path, f"only deletion is allowed, but found new scheduling "
                                          f"gate(s) {added}")
        elif field in _IMAGE_LISTS:
            if _without_images(a) != _without_images(b):
                raise _invalid(new, path, "only container images may change on a pod")
        elif field in _ALWAYS_MUTABLE:
            continue
        elif field == "tolerations":
            kept = [_without_seconds(t) for t in b or []]
            if any(_without_seconds(t) not in kept for t in a or []):
                raise _invalid(new, path, "existing tolerations may not be changed or removed "
                                          "(except their tolerationSeconds); only additions "
                                          "are allowed")
        elif field == "nodeSelector" and gated:
            if any((b or {}).get(k) != v for k, v in (a or {}).items()):
                raise _invalid(new, path, "while the pod is gated only additions to "
                                          "nodeSelector are allowed")
        elif field == "affinity" and gated:
            # Kubernetes allows narrowing node affinity while gated; we accept any change.
            continue
        elif field == "nodeName":
            raise _invalid(new, path, "is set through the binding subresource, not by update")
        else:
            extra = " (nodeSelector and affinity may change only while the pod is gated)" \
                if field in ("nodeSelector", "affinity") else ""
            raise _invalid(new, path, "pod updates may not change fields other than container "
                                      "images, activeDeadlineSeconds, tolerations (additions) "
                                      f"and schedulingGates (removals){extra}")
    if isinstance(new_spec, PodSpec):
        _validate_changed(new, new_spec, before, after)


def _validate_changed(new: Resource, spec: PodSpec, before: dict[str, Any],
                      after: dict[str, Any]) -> None:
    """The fields an update may change must still be valid, as on create."""
    errs: FieldErrors = []
    if before.get("nodeSelector") != after.get("nodeSelector"):
        errs += label_map_errors(spec.node_selector, "spec.nodeSelector")
    if before.get("affinity") != after.get("affinity") and spec.affinity is not None:
        errs += affinity_errors(spec.affinity, "spec.affinity")
    if before.get("tolerations") != after.get("tolerations"):
        errs += toleration_errors(spec.tolerations or (), "spec.tolerations")
    if errs:
        raise invalid_pod(new, errs)


def _without_seconds(toleration: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}


def check_bindable(pod: Resource, target: str) -> None:
    if not target:
        raise _invalid(pod, "target.name", "the node name to bind to is required")
    gates = gate_names(pod)
    if gates:  # kube-apiserver answers 409, as for a pod already bound
        raise Conflict(f'Operation cannot be fulfilled on pods/binding "{pod.name}": pod '
                       f"{pod.name} has non-empty .spec.schedulingGates {gates}",
                       kind="Pod", name=pod.name)
    bound = node_name(pod)
    if bound:
        raise Conflict(f'Operation cannot be fulfilled on pods/binding "{pod.name}": pod '
                       f"{pod.key} is already assigned to node {bound!r}",
                       kind="Pod", name=pod.name)
    if pod.metadata.deletion_timestamp is not None:
        raise _invalid(pod, "metadata.deletionTimestamp",
                       f"pod {pod.key} is being deleted and cannot be bound")


def node_topology_labels(node: Resource | None) -> dict[str, str]:
    """What PodTopologyLabels copies from `node` (none when the node does not exist)."""
    if node is None:
        return {}
    labels = node.metadata.labels
    return {k: labels[k] for k in TOPOLOGY_LABELS if k in labels}


def with_topology_labels(labels: dict[str, str], topology: dict[str, str]) -> dict[str, str]:
    """`labels` with the node's topology labels set; the same dict when nothing changes."""
    if all(labels.get(k) == v for k, v in topology.items()):
        return labels
    return {**labels, **topology}


def set_topology_labels(pod: Resource, topology: dict[str, str]) -> None:
    """On a pod being created on a node: its labels with the node's `topology` labels."""
    meta = pod.metadata
    labels = with_topology_labels(meta.labels, topology)
    if labels is not meta.labels:
        meta.labels = labels


def bound_copy(pod: Resource, target: str, now: datetime,
               topology: dict[str, str] | None = None) -> Resource:
    """A new stored pod with spec.nodeName set, condition PodScheduled=True and the node's
    `topology` labels, as the binding subresource does. Shares unchanged parts with `pod`
    (stored objects are never mutated)."""
    meta = pod.metadata
    labels = with_topology_labels(meta.labels, topology or {})
    # metadata is copied because committing sets its resourceVersion.
    parts: dict[str, Any] = {
        "metadata": meta.model_copy(update={"labels": labels}) if labels is not meta.labels
        else meta.model_copy(),
        "spec": pod.spec.model_copy(update={"node_name": target}),  # type: ignore[attr-defined]
    }
    status = getattr(pod, "status", None)
    if status is not None and "conditions" in type(status).model_fields:
        parts["status"] = _with_scheduled_condition(status, now)
    return pod.model_copy(update=parts)


def _with_scheduled_condition(status: Any, now: datetime) -> Any:
    """`status` with PodScheduled=True (replacing any PodScheduled condition, in place).
    The new condition is built directly and the others are shared: no dump and re-validation
    of the whole status on every bind."""
    cond = _condition_class(type(status))(type="PodScheduled", status="True",
                                          last_transition_time=now)
    conditions = list(status.conditions)
    for i, c in enumerate(conditions):
        if c.type == "PodScheduled":
            conditions[i] = cond
            break
    else:
        conditions.append(cond)
    return status.model_copy(update={"conditions": conditions})


@cache
def _condition_class(status_cls: type) -> Any:
    """The item model of `status_cls.conditions` (PodCondition for a PodStatus)."""
    return get_args(status_cls.model_fields["conditions"].annotation)[0]


def _without_images(containers: Any) -> Any:
    return [{k: v for k, v in c.items() if k != "image"} for c in containers or []]


def _invalid(pod: Resource, field: str, why: str) -> Invalid:
    return Invalid(f'Pod "{pod.name}" is invalid: {field}: {why}', kind="Pod",
                   name=pod.name, field=field)
