"""Gang sources: adapters from each backend's scheduler objects to the one Gang model.

`default_sources()` maps every schedulerName of the embedded cluster (contracts.md) to the
sources its pods are read with, so one scheduler serves every backend's pods.
"""

from __future__ import annotations

from phalanx.api import labels

from .base import GangSource, Levels, LevelsProvider
from .coscheduling import CoschedulingSource
from .kai import KaiSource
from .podgang import PodGangSource
from .volcano import VolcanoSource
from .workload import WorkloadSource


def default_sources(levels: LevelsProvider | None = None) -> dict[str, list[GangSource]]:
    """schedulerName -> sources, per the cross-team contract."""
    podgang = PodGangSource()
    return {
        labels.SCHEDULER_PHALANX: [podgang],
        labels.SCHEDULER_DEFAULT: [WorkloadSource()],
        labels.SCHEDULER_KAI: [KaiSource()],
        labels.SCHEDULER_VOLCANO: [VolcanoSource(levels)],
        labels.SCHEDULER_KOORDINATOR: [CoschedulingSource(levels)],
    }


__all__ = [
    "CoschedulingSource",
    "GangSource",
    "KaiSource",
    "Levels",
    "LevelsProvider",
    "PodGangSource",
    "VolcanoSource",
    "WorkloadSource",
    "default_sources",
]
