"""Condition types and reasons the operator writes, and the PodClique status computation.

PodClique `MinAvailableBreached` follows Grove: once a clique has had minAvailable pods
scheduled, it is breached whenever fewer than minAvailable of its pods are scheduled and up
(a failed pod, one that started and is not ready, and a replacement the scheduler cannot
place all count against it). A clique that was never scheduled is not breached: startup is
not a regression, and recreating it would only churn. A gang-terminated replica gets new
PodCliques, so this starts afresh and a cluster that cannot place the new gang does not make
it loop.

Whether a clique was ever scheduled is read from its own conditions (`ever_scheduled`), so
the status holds only Grove's fields: until then MinAvailableBreached stays False with the
reason InsufficientScheduledPods, which no later state uses.
"""

from __future__ import annotations

from datetime import datetime

from phalanx.api.base import get_condition, set_condition
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueStatus
from phalanx.api.podgang import PODGANG_BACKEND_SYNCED

from .context import copy_status

MIN_AVAILABLE_BREACHED = "MinAvailableBreached"
PODCLIQUE_SCHEDULED = "PodCliqueScheduled"
REASON_INSUFFICIENT_SCHEDULED = "InsufficientScheduledPods"
REASON_SUFFICIENT_SCHEDULED = "SufficientScheduledPods"
REASON_INSUFFICIENT_READY = "InsufficientReadyPods"
REASON_SCHEDULED_BELOW_MIN = "ScheduledReplicasBelowMinAvailable"
REASON_SUFFICIENT_READY = "SufficientReadyPods"

# PodCliqueScalingGroup reasons (Grove's).
REASON_PCSG_INSUFFICIENT_SCHEDULED = "InsufficientScheduledPodCliqueScalingGroupReplicas"
REASON_PCSG_INSUFFICIENT_AVAILABLE = "InsufficientAvailablePodCliqueScalingGroupReplicas"
REASON_PCSG_SUFFICIENT_AVAILABLE = "SufficientAvailablePodCliqueScalingGroupReplicas"

# PodCliqueScalingGroup: its PodCliques were deleted by a PodCliqueSet-replica gang
# termination that is still recovering (Grove's, set by gangtermination.py, cleared by the
# scaling group's status once it has minAvailable healthy replicas again).
GANG_TERMINATION_IN_PROGRESS = "GangTerminationInProgress"
REASON_GANG_TERMINATION_ACTIVE = "GangTerminationActive"

# PodGang: the backend controller's record that the scheduler objects exist.
BACKEND_SYNCED = PODGANG_BACKEND_SYNCED
REASON_SYNCED = "Synced"
REASON_SYNC_PENDING = "SyncPending"
REASON_SYNC_FAILED = "SyncFailed"
REASON_UNKNOWN_BACKEND = "UnknownBackend"

# PodGang phase-driving reasons.
REASON_PODS_SCHEDULED = "PodsScheduled"
REASON_PODS_UNSCHEDULED = "PodsUnscheduled"
REASON_PODS_READY = "PodsReady"
REASON_PODS_NOT_READY = "PodsNotReady"


def ever_scheduled(conditions: list) -> bool:
    """Whether a PodClique has had minAvailable pods scheduled at some point: it has left
    the startup state (MinAvailableBreached absent, or False/InsufficientScheduledPods)."""
    cond = get_condition(conditions, MIN_AVAILABLE_BREACHED)
    return cond is not None and not (cond.status == "False"
                                     and cond.reason == REASON_INSUFFICIENT_SCHEDULED)


def is_breached(pclq: PodClique) -> bool:
    cond = get_condition(pclq.status.conditions, MIN_AVAILABLE_BREACHED)
    return cond is not None and cond.status == "True"


def breached_since(pclq_conditions: list, type_: str = MIN_AVAILABLE_BREACHED
                   ) -> datetime | None:
    cond = get_condition(pclq_conditions, type_)
    if cond is None or cond.status != "True":
        return None
    return cond.last_transition_time


def pod_counts(pods: list[Pod]) -> dict[str, int]:
    """Counts over a PodClique's live (not deleting) pods."""
    replicas = ready = gated = scheduled = failed = started_not_ready = 0
    for p in pods:
        if p.metadata.deletion_timestamp is not None:
            continue
        replicas += 1
        phase = p.status.phase
        if p.spec.scheduling_gates:
            gated += 1
        if p.spec.node_name:
            scheduled += 1
        if phase == "Failed":
            failed += 1
        elif phase == "Running":
            if p.is_ready:
                ready += 1
            else:
                started_not_ready += 1
    return {"replicas": replicas, "ready": ready, "gated": gated, "scheduled": scheduled,
            "failed": failed, "started_not_ready": started_not_ready}


def podclique_status(pclq: PodClique, pods: list[Pod], now: datetime,
                     selector: str | None) -> PodCliqueStatus:
    """The PodClique's new status (a copy; compare with the old one to skip no-op writes)."""
    n = pod_counts(pods)
    status = copy_status(pclq.status)
    status.replicas = n["replicas"]
    status.ready_replicas = n["ready"]
    status.schedule_gated_replicas = n["gated"]
    status.scheduled_replicas = n["scheduled"]
    status.observed_generation = pclq.metadata.generation
    status.hpa_pod_selector = selector
    need = pclq.spec.min_available if pclq.spec.min_available is not None else pclq.spec.replicas
    sched = n["scheduled"]
    if sched < need:
        set_condition(status.conditions, PODCLIQUE_SCHEDULED, False,
                      REASON_INSUFFICIENT_SCHEDULED,
                      f"{sched} pods scheduled, need at least {need}", now=now)
    else:
        set_condition(status.conditions, PODCLIQUE_SCHEDULED, True, REASON_SUFFICIENT_SCHEDULED,
                      f"{sched} pods scheduled, need at least {need}", now=now)
    scheduled_once = sched >= need or ever_scheduled(pclq.status.conditions)
    up = sched - n["failed"] - n["started_not_ready"]
    if up >= need:
        set_condition(status.conditions, MIN_AVAILABLE_BREACHED, False, REASON_SUFFICIENT_READY,
                      f"{up} pods ready or starting, need at least {need}", now=now)
    elif not scheduled_once:
        set_condition(status.conditions, MIN_AVAILABLE_BREACHED, False,
                      REASON_INSUFFICIENT_SCHEDULED,
                      f"{sched} pods scheduled, need at least {need} (not scheduled yet: "
                      "startup is not a breach)", now=now)
    elif sched < need:
        set_condition(status.conditions, MIN_AVAILABLE_BREACHED, True, REASON_SCHEDULED_BELOW_MIN,
                      f"{sched} pods scheduled, need at least {need} "
                      f"({n['replicas'] - sched} not placed)", now=now)
    else:
        set_condition(status.conditions, MIN_AVAILABLE_BREACHED, True, REASON_INSUFFICIENT_READY,
                      f"{up} pods ready or starting, need at least {need} "
                      f"({n['failed']} failed, {n['started_not_ready']} not ready)", now=now)
    return status
