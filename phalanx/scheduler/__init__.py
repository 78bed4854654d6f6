"""Phalanx's gang scheduler: a kube-scheduler-style framework with NumPy node columns.

    scheduler = Scheduler(client)          # one profile per schedulerName (contracts.md)
    await scheduler.start()
    await scheduler.wait_idle()
    scheduler.diagnosis("ns/pod")          # why a pod is not scheduled
    await scheduler.stop()
"""

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
from phalanx.scheduler.scheduler import Scheduler

__all__ = [
    "Code",
    "CycleState",
    "Diagnosis",
    "PodInfo",
    "Scheduler",
    "SchedulerConfiguration",
    "SchedulerProfile",
    "Status",
    "default_configuration",
    "register_plugin",
]
