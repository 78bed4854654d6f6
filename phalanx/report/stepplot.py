"""What the report's step-line plots over virtual time share (replicas of autoscaled
objects, queue allocation against fair share): collecting a value series from the run's
object history, and drawing each series as a step line held to the end of the run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from phalanx.sim.record import RunRecord

from .plots import _style, _svg, _time_axis

P = TypeVar("P", bound=tuple[Any, ...])  # (t, value, ...)


def add_point(series: list[P], point: P) -> None:
    """Append `point`; one at the same time replaces the last, one that changes no value is
    dropped (the line already holds it)."""
    if series and series[-1][0] == point[0]:
        series[-1] = point
    elif not series or series[-1][1:] != point[1:]:
        series.append(point)


@dataclass
class StepLine:
    label: str
    points: Sequence[tuple[float, float]]  # (t, value), in time order, not empty
    colour: str
    style: dict[str, Any] = field(default_factory=lambda: {"lw": 1.8})


def step_lines_svg(record: RunRecord, lines: list[StepLine], *, ylabel: str, salt: str,
                   height: float, label: str) -> str:
    """One step line each, integer y axis from 0, virtual time on x up to the run's end."""
    end = max(record.meta.duration, max((p[0] for line in lines for p in line.points),
                                        default=0.0))
    with _style(salt):
        fig = Figure(figsize=(11.5, height))
        ax = fig.subplots()
        for line in lines:
            ts = [p[0] for p in line.points] + [end]
            ys = [p[1] for p in line.points] + [line.points[-1][1]]
            ax.step(ts, ys, where="post", color=line.colour, label=line.label, **line.style)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="y")
        ax.set_xlabel("virtual time since start")
        _time_axis(ax, end)
        if lines:
            ax.legend(loc="upper center", ncols=min(4, len(lines)),
                      bbox_to_anchor=(0.5, -0.25))
        return _svg(fig, label)
