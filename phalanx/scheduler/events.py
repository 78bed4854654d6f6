"""The scheduler's Event recorder: the shared phalanx.cluster.events.EventRecorder, configured
as kube-scheduler's events behave.

One Event per (pod, reason) whose count and message follow the latest call (a pod's
FailedScheduling Event shows the current "0/N nodes are available ..."), at most one write per
Event per `min_interval` seconds with a trailing write so it ends up showing the latest
message. No per-object token bucket (min_interval already bounds each Event) and one attempt
per write: Events are best effort and must never hold up scheduling or its shutdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.cluster.events import EventRecorder

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

__all__ = ["COMPONENT", "EventRecorder", "new_event_recorder"]

COMPONENT = "phalanx-scheduler"


def new_event_recorder(client: Client, *, min_interval: float = 10.0,
                       max_pending: int = 100_000, host: str | None = None) -> EventRecorder:
    return EventRecorder(client, COMPONENT, host=host, per_reason=True, burst=None,
                         min_interval=min_interval, max_pending=max_pending, max_attempts=1)
