"""The scheduling.k8s.io Workload API versions Phalanx knows, and what each lets the
default-scheduler backend promise (kept apart from the kinds in `workloads.py`, which
register themselves, so that the operator configuration's checks can read it)."""

from __future__ import annotations

SCHEDULING_GROUP = "scheduling.k8s.io"
V1ALPHA1 = f"{SCHEDULING_GROUP}/v1alpha1"  # Kubernetes 1.35
V1ALPHA2 = f"{SCHEDULING_GROUP}/v1alpha2"  # 1.36
V1BETA1 = f"{SCHEDULING_GROUP}/v1beta1"  # 1.37
# Oldest first; the default-scheduler backend writes the newest one the server serves.
WORKLOAD_API_VERSIONS = (V1ALPHA1, V1ALPHA2, V1BETA1)
# What the gate-free default-scheduler path needs (gate_free_problem; the backend's start-up
# check against what the server serves).
NEEDS_PODGROUP_API = ("needs the PodGroup API (scheduling.k8s.io/v1alpha2 or later, "
                      "Kubernetes 1.36+)")


def gate_free_problem(gang_scheduling: bool, workload_api_version: str | None) -> str | None:
    """Why default-scheduler's pods cannot go without Grove's gate, or None when they can:
    only kube-scheduler's GangScheduling on standalone PodGroups (1.36+, the version Phalanx
    checked against the real scheduler) holds a pod until its gang's objects exist."""
    if not gang_scheduling:
        return ("needs gangScheduling: true: without the Workload API kube-scheduler "
                "schedules each pod as soon as it is created")
    version = workload_api_version or ""
    if (version if "/" in version else f"{SCHEDULING_GROUP}/{version}") == V1ALPHA1:
        return f"{NEEDS_PODGROUP_API}, not workloadAPIVersion {V1ALPHA1}"
    return None
