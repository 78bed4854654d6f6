"""Each leaf queue's GPU allocation against its fair share over a run (issue 26 item 3), from
the run's object history: the status phalanx-scheduler writes on every Queue (allocated) and
its `phalanx.dev/fair-share` annotation (fair share)."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from phalanx.api.quantity import parse_quantity
from phalanx.scheduler.queues.status import parse_fair_share
from phalanx.sim.record import RunRecord

from .plots import _style, _svg, _time_axis

GPU = "nvidia.com/gpu"
Series = list[tuple[float, float, float]]  # (t, allocated GPUs, fair-share GPUs)


def _gpus(values: object) -> float:
    raw = values.get(GPU) if isinstance(values, dict) else None
    try:
        return float(parse_quantity(str(raw))) if raw is not None else 0.0
    except ValueError:
        return 0.0


def queue_series(record: RunRecord) -> dict[str, Series]:
    """Leaf queue -> its (t, allocated, fair share) after every change the scheduler wrote;
    queues it never wrote a fair share for are left out."""
    parents = {q["metadata"]["name"] for q in record.objects.get("Queue", [])
               if (q.get("status") or {}).get("childQueues")}
    out: dict[str, Series] = {}
    for change in record.history:
        if change.kind != "Queue" or change.object is None or change.key in parents:
            continue
        fair = parse_fair_share(change.object)
        if not fair:
            continue
        allocated = _gpus((change.object.get("status") or {}).get("allocated"))
        point = (change.t, allocated, _gpus(fair.get("fairShare")))
        series = out.setdefault(change.key, [])
        if series and series[-1][0] == change.t:
            series[-1] = point
        elif not series or series[-1][1:] != point[1:]:
            series.append(point)
    return out


def queue_shares_svg(record: RunRecord, series: dict[str, Series] | None = None) -> str:
    """Solid: GPUs allocated; dashed: fair share; one colour per leaf queue."""
    series = queue_series(record) if series is None else series
    end = max(record.meta.duration, max((p[0] for s in series.values() for p in s),
                                        default=0.0))
    with _style("queues"):
        fig = Figure(figsize=(11.5, 3.6))
        ax = fig.subplots()
        for i, (name, points) in enumerate(sorted(series.items())):
            colour = f"C{i % 10}"
            ts = [p[0] for p in points] + [end]
            alloc = [p[1] for p in points] + [points[-1][1]]
            fair = [p[2] for p in points] + [points[-1][2]]
            ax.step(ts, alloc, where="post", color=colour, lw=1.8, label=f"{name} allocated")
            ax.step(ts, fair, where="post", color=colour, lw=1.2, ls="--",
                    label=f"{name} fair share")
        ax.set_ylabel("GPUs")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="y")
        ax.set_xlabel("virtual time since start")
        _time_axis(ax, end)
        if series:
            ax.legend(loc="upper center", ncols=min(4, 2 * len(series)),
                      bbox_to_anchor=(0.5, -0.25))
        return _svg(fig, "queue allocation against fair share over time")
