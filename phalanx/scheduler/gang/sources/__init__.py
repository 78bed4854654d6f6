"""Gang sources: adapters from each backend's scheduler objects to the one Gang model.

`default_sources()` maps every schedulerName of the embedded cluster (contracts.md) to the
sources its pods are read with, so one scheduler serves every backend's pods.
"""

from __future__ import annotations

from phalanx.api import labels
from phalanx.api.schedulerplugins import SCHEDULER_PLUGINS
from phalanx.api.workloads import WORKLOAD_KINDS

from .base import GangSource, Levels, LevelsProvider
from .coscheduling import CoschedulingSource
from .kai import KaiSource
from .podgang import PodGangSource
from .schedulerplugins import SchedulerPluginsSource
from .volcano import VolcanoSource
from .workload import PodGroupSource, WorkloadSource


def _standalone_podgroup_sources() -> list[GangSource]:
    """Kubernetes 1.36+ PodGroups, one source per Workload API version that has them."""
    return [PodGroupSource(pg) for _, pg in WORKLOAD_KINDS.values() if pg is not None]


def default_sources(levels: LevelsProvider | None = None) -> dict[str, list[GangSource]]:
    """schedulerName -> sources, per the cross-team contract."""
    podgang = PodGangSource()
    return {
        labels.SCHEDULER_PHALANX: [podgang],
        labels.SCHEDULER_DEFAULT: [WorkloadSource(), *_standalone_podgroup_sources()],
        labels.SCHEDULER_KAI: [KaiSource()],
        labels.SCHEDULER_VOLCANO: [VolcanoSource(levels)],
        labels.SCHEDULER_KOORDINATOR: [CoschedulingSource(levels)],
        SCHEDULER_PLUGINS: [SchedulerPluginsSource()],
    }


__all__ = [
    "CoschedulingSource",
    "GangSource",
    "KaiSource",
    "Levels",
    "LevelsProvider",
    "PodGangSource",
    "PodGroupSource",
    "SchedulerPluginsSource",
    "VolcanoSource",
    "WorkloadSource",
    "default_sources",
]
