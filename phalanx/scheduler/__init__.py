"""Phalanx's gang scheduler: a kube-scheduler-style framework with NumPy node columns.

    scheduler = Scheduler(client)          # one profile per schedulerName (contracts.md)
    await scheduler.start()
    await scheduler.wait_idle()
    scheduler.diagnosis("ns/pod")          # why a pod is not scheduled
    gang_explain(scheduler, "ns", "my-pcs-0")  # a gang's counts, verdict, last failure
    await scheduler.stop()

Gangs (phalanx.scheduler.gang) are read from every backend's objects; their state is on the
gang object as the `GangScheduled` condition (CONDITION_GANG_SCHEDULED) and on the pods as
Events (GangIncomplete, GangNotFound, GangUnschedulable, GangScheduleTimeout).
"""

from typing import Any


from phalanx.scheduler.framework import (
    Code,
    CycleState,
    Diagnosis,
    PodInfo,
    SchedulerConfiguration,
    SchedulerProfile,
    Status,
    default_configuration,
    register_plugin,
)
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED
from phalanx.scheduler.scheduler import Scheduler


def gang_explain(scheduler: Scheduler, namespace: str, name: str) -> list[dict[str, Any]]:
    """What the scheduler knows about the gang(s) named `name` (a PodGang, PodGroup or
    Workload): counts, mode, representative, verdict and the failed member's diagnosis."""
    from phalanx.scheduler.gang.runtime import SHARED_KEY

    runtime = scheduler.shared(SHARED_KEY, lambda: None)
    return runtime.explain(namespace, name) if runtime is not None else []

__all__ = [
    "CONDITION_GANG_SCHEDULED",
    "Code",
    "CycleState",
    "Diagnosis",
    "PodInfo",
    "Scheduler",
    "SchedulerConfiguration",
    "SchedulerProfile",
    "Status",
    "default_configuration",
    "gang_explain",
    "register_plugin",
]
