"""Time-based fair share: each queue's past usage over the cluster's capacity, as KAI's
usage database reports it (docs/time-based-fairshare).

KAI keeps usage in Prometheus; Phalanx keeps it in the scheduler, from the same facts: the
resources each queue held, integrated over time, within a sliding window (`windowSize`),
each moment weighted by 0.5^(age / halfLifePeriod) when a half-life is set, and divided by
the capacity integrated the same way. A queue that held half the cluster for the whole
window has usage 0.5. The division lowers such a queue's over-quota weight by
kValue * (weight - usage) (division.share_weights).

Time is split into buckets (window / BUCKETS each) so the window slides without keeping
every change; the current bucket is counted in part.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

BUCKETS = 60


@dataclass(slots=True)
class _Bucket:
    start: float
    held: dict[str, list[float]] = field(default_factory=dict)  # queue -> integral per resource
    capacity: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


class UsageTracker:
    def __init__(self, window: float, half_life: float | None = None) -> None:
        if window <= 0:
            raise ValueError("windowSize must be positive")
        self.window = window
        self.half_life = half_life if half_life and half_life > 0 else None
        self.width = window / BUCKETS
        self._buckets: deque[_Bucket] = deque()
        self._last: float | None = None
        self._held: dict[str, list[float]] = {}
        self._capacity: list[float] = [0.0, 0.0, 0.0]

    def advance(self, now: float) -> None:
        """Integrate what was held since the last call up to `now`."""
        if self._last is None:
            self._last = now
            return
        t = self._last
        while t < now:
            b = self._bucket(t)
            end = min(now, b.start + self.width)
            dt = end - t
            for q, v in self._held.items():
                acc = b.held.setdefault(q, [0.0, 0.0, 0.0])
                for r in range(3):
                    acc[r] += v[r] * dt
            for r in range(3):
                b.capacity[r] += self._capacity[r] * dt
            t = end
        self._last = now
        while self._buckets and self._buckets[0].start + self.width <= now - self.window:
            self._buckets.popleft()

    def _bucket(self, t: float) -> _Bucket:
        if not self._buckets or t >= self._buckets[-1].start + self.width:
            start = (t // self.width) * self.width
            self._buckets.append(_Bucket(start))
        return self._buckets[-1]

    def set_state(self, held: Mapping[str, Sequence[float]], capacity: Sequence[float]) -> None:
        """What is held from now on (call `advance` first)."""
        self._held = {q: list(v) for q, v in held.items()}
        self._capacity = list(capacity)

    def usage(self, now: float) -> dict[str, list[float]]:
        """queue -> (cpu, memory, gpu) usage over capacity within the window, in [0, 1]."""
        self.advance(now)
        held: dict[str, list[float]] = {}
        cap = [0.0, 0.0, 0.0]
        for b in self._buckets:
            if b.start + self.width <= now - self.window:
                continue
            w = 1.0
            if self.half_life is not None:
                age = max(0.0, now - (b.start + self.width / 2))
                w = 0.5 ** (age / self.half_life)
            for q, v in b.held.items():
                acc = held.setdefault(q, [0.0, 0.0, 0.0])
                for r in range(3):
                    acc[r] += w * v[r]
            for r in range(3):
                cap[r] += w * b.capacity[r]
        return {q: [v[r] / cap[r] if cap[r] > 0 else 0.0 for r in range(3)]
                for q, v in held.items()}
