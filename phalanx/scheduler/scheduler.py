"""The Scheduler: queue -> scheduling cycle -> binding cycle, one Framework per profile.

SKELETON (first commit): public API and docstrings are stable; the loop lands next.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from phalanx.scheduler.framework.config import SchedulerConfiguration, SchedulerProfile, default_configuration
from phalanx.scheduler.framework.types import Diagnosis

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

log = logging.getLogger(__name__)


class Scheduler:
    """A gang-aware kube-scheduler for one cluster.

    `profiles`: a SchedulerConfiguration, a list of SchedulerProfile, or None for one default
    profile per schedulerName in contracts.md (default-scheduler, kai-scheduler, volcano,
    koord-scheduler, phalanx-scheduler). Pods whose spec.schedulerName no profile serves are
    ignored (another scheduler owns them).
    """

    def __init__(
        self,
        client: Client,
        profiles: SchedulerConfiguration | Sequence[SchedulerProfile] | None = None,
    ) -> None:
        self.client = client
        if profiles is None:
            self.config = default_configuration()
        elif isinstance(profiles, SchedulerConfiguration):
            self.config = profiles
        else:
            self.config = SchedulerConfiguration(profiles=list(profiles))
        self._diagnoses: dict[str, Diagnosis] = {}

    async def start(self) -> None:
        """Start informers, wait for their sync, then run the scheduling loop in the background."""
        raise NotImplementedError("scheduler loop lands in the next commit")

    async def stop(self) -> None:
        """Stop the loop, cancel binding cycles (their reservations are released) and informers."""
        raise NotImplementedError("scheduler loop lands in the next commit")

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait (virtual time) until activeQ and backoffQ are empty, no cycle runs and no pod
        waits at Permit or binds. Returns False on timeout."""
        raise NotImplementedError("scheduler loop lands in the next commit")

    def diagnosis(self, pod_key: str) -> Diagnosis | None:
        """Why `namespace/name` last failed to schedule (per-filter node counts), or None."""
        return self._diagnoses.get(pod_key)
