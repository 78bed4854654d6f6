"""Victims a preemption or reclaim attempt had to spare, and when they may go.

Victim filters (KAI's preemptibility and minimum runtimes, Volcano's `preemptable`) tell this
scheduler-wide record which lower-priority pods they kept out of an attempt, and until when
(None: for good). DefaultPreemption (and QueueReclaim, built on it) reads it when the attempt
fails: the reason says the pods were protected rather than absent, and the pod is retried the
moment the first protection ends, as KAI's next session would try again, instead of at the
next periodic flush of unschedulable pods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROTECTIONS_KEY = "phalanx.scheduler.victim_protection"


@dataclass(slots=True)
class Protections:
    spared: int = 0  # lower-priority pods a victim filter kept out of this attempt
    until: float | None = None  # the earliest end of a protection that ends (clock time)

    def reset(self) -> None:
        self.spared, self.until = 0, None

    def spare(self, until: float | None = None) -> None:
        self.spared += 1
        if until is not None:
            self.until = until if self.until is None else min(self.until, until)


def protections(handle: Any) -> Protections:
    """The scheduler-wide record (one per scheduler, shared by its profiles)."""
    shared = getattr(handle, "shared", None)
    return shared(PROTECTIONS_KEY, Protections) if callable(shared) else Protections()
