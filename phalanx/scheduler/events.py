"""The scheduler's Event recorder: the shared phalanx.cluster.events.EventRecorder, configured
as kube-scheduler's events behave.

One Event per (pod, reason) whose count and message follow the latest call (a pod's
FailedScheduling Event shows the current "0/N nodes are available ..."), at most one write per
Event per `min_interval` seconds with a trailing write so it ends up showing the latest
message. No per-object token bucket (min_interval already bounds each Event) and one attempt
per write: Events are best effort and must never hold up scheduling or its shutdown.

Written by `concurrency` writers at once, as kube-scheduler's broadcaster writes each Event
from a goroutine of its own: one writer at a time (a round trip each) fell behind the binds,
so that at 5,000 pods about 20 s of Event writes came after the last bind; with 16 writers
still 11-16 s (bench/README.md, `bench kube`); with 64 they keep pace with the binds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.cluster.events import EventRecorder

if TYPE_CHECKING:
    from phalanx.cluster.client import Client

__all__ = ["COMPONENT", "EventRecorder", "new_event_recorder"]

COMPONENT = "phalanx-scheduler"


CONCURRENCY = 64  # Event writes in flight (the client's rate limit still applies)


def new_event_recorder(client: Client, *, min_interval: float = 10.0,
                       max_pending: int = 100_000, host: str | None = None,
                       concurrency: int = CONCURRENCY) -> EventRecorder:
    return EventRecorder(client, COMPONENT, host=host, per_reason=True, burst=None,
                         min_interval=min_interval, max_pending=max_pending, max_attempts=1,
                         concurrency=concurrency)
