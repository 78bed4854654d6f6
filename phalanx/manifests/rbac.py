"""Least-privilege RBAC for the operator and the scheduler.

The operator gets write access to Grove's kinds and the pods/services it creates, plus
exactly the scheduler objects of the backends enabled in its OperatorConfiguration
(`phalanx.backends.rbac.rbac_rules`): an operator configured only for kube-scheduler has no
permission on KAI or Volcano objects. The scheduler reads pods, nodes and PodGangs and may
bind, evict (preemption) and report status; nothing else. Leases and the webhook certificate
Secret are namespaced Roles in the install namespace only. As Grove's, the operator may also
write ServiceAccounts, Secrets, Roles and RoleBindings in any namespace: each PodCliqueSet's
startup waiter gets its own (pods read-only) identity next to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.api.base import Resource

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "get", "list", "patch", "update", "watch"]
EVENTS = [
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"],
     "verbs": ["create", "patch", "update"]},
]


def _group(cls: type[Resource]) -> str:
    return cls.API_VERSION.rpartition("/")[0]


def operator_rules(
    owned: list[type[Resource]], read_only: list[type[Resource]], backend_rules: list[dict],
    *, webhook_configurations: list[str], status_of: Sequence[type[Resource]] = (),
) -> list[dict[str, Any]]:
    """`status_of`: read-only kinds whose status the operator writes (the
    ClusterTopologyBinding's SchedulerTopologyDrift)."""
    rules: list[dict[str, Any]] = []
    by_group: dict[str, list[str]] = {}
    for cls in owned:
        by_group.setdefault(_group(cls), []).append(cls.PLURAL)
    for group, plurals in sorted(by_group.items()):
        rules.append({"apiGroups": [group], "resources": sorted(plurals), "verbs": WRITE})
        sub = sorted(f"{p}/{s}" for p in plurals for s in ("status", "finalizers"))
        rules.append({"apiGroups": [group], "resources": sub,
                      "verbs": ["get", "patch", "update"]})
    for cls in read_only:
        rules.append({"apiGroups": [_group(cls)], "resources": [cls.PLURAL], "verbs": READ})
    for cls in status_of:
        rules.append({"apiGroups": [_group(cls)], "resources": [f"{cls.PLURAL}/status"],
                      "verbs": ["get", "patch", "update"]})
    rules += [
        {"apiGroups": [""], "resources": ["pods", "services"], "verbs": WRITE},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
         "verbs": WRITE},  # one per autoscaled clique / scaling group (operator/hpa.py)
        {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": READ},
        # The webhook checks that a PriorityClass a PodCliqueSet names exists
        # (operator/admission_priority.py).
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": READ},
        # The startup waiter's identity per PodCliqueSet (operator/serviceaccount.py,
        # satokensecret.py, role.py, rolebinding.py), as Grove's operator has.
        {"apiGroups": [""], "resources": ["secrets", "serviceaccounts"], "verbs": WRITE},
        # Held so the operator may grant it in those Roles (RBAC's escalation check).
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": READ},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"],
         "verbs": WRITE},
        # resource sharing (operator/resourceclaim.py) and auto-MNNVL (computedomain.py)
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": WRITE},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaimtemplates"],
         "verbs": READ},
        {"apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"],
         "verbs": WRITE},
        *EVENTS,
        *backend_rules,
    ]
    if webhook_configurations:
        # resourceNames cannot limit list/watch/create: only get and update of ours.
        rules.append({
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "resourceNames": sorted(webhook_configurations),
            "verbs": ["get", "patch", "update"],
        })
    return rules


def scheduler_rules(podgang: type[Resource], scheduler_objects: list[dict],
                    read_only: Sequence[type[Resource]] = ()) -> list[dict]:
    """`read_only`: further kinds its informers watch (ClusterTopologyBindings and legacy
    ClusterTopologies, whose levels the topology plugins read); without them its caches
    never sync."""
    group = _group(podgang)
    return [
        *({"apiGroups": [_group(cls)], "resources": [cls.PLURAL], "verbs": READ}
          for cls in read_only),
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", *READ]},  # preemption
        {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
        {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": READ},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": READ},
        # VolumeBinding pre-binds PVs and annotates claims (as kube-scheduler's ClusterRole).
        {"apiGroups": [""], "resources": ["persistentvolumes", "persistentvolumeclaims"],
         "verbs": [*READ, "patch", "update"]},
        {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": READ},
        # NodeVolumeLimits: per-node CSI limits, drivers, and attached volumes.
        {"apiGroups": ["storage.k8s.io"],
         "resources": ["csinodes", "csidrivers", "volumeattachments"], "verbs": READ},
        # DynamicResources: reads devices and classes, allocates and reserves claims (as
        # kube-scheduler's ClusterRole: the finalizer by update, the rest by status).
        {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses", "resourceslices"],
         "verbs": READ},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
         "verbs": [*READ, "patch", "update"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
         "verbs": ["patch", "update"]},
        {"apiGroups": [group], "resources": [podgang.PLURAL], "verbs": READ},
        {"apiGroups": [group], "resources": [f"{podgang.PLURAL}/status"],
         "verbs": ["patch", "update"]},
        *scheduler_objects,
        *EVENTS,
    ]


def namespaced_rules(*, secret: str | None, leases: bool = True) -> list[dict[str, Any]]:
    """Leader-election Leases (with `leases`) and the webhook certificate Secret, for a Role
    in one namespace.

    KubeCluster's `update` is a merge patch with a resourceVersion precondition, so every
    object the services update needs `patch` too (without it a leader could acquire its
    Lease but never renew it)."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "verbs": ["create", "get", "list", "patch", "update", "watch"]},
    ] if leases else []
    if secret:
        rules.append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]})
        rules.append({"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret],
                      "verbs": ["get", "patch", "update"]})
    return rules
