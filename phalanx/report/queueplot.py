"""Each leaf queue's GPU allocation against its fair share over a run (issue 26 item 3), from
the run's object history: the status phalanx-scheduler writes on every Queue (allocated) and
its `phalanx.dev/fair-share` annotation (fair share)."""

from __future__ import annotations

from phalanx.api.quantity import parse_quantity
from phalanx.scheduler.queues.status import parse_fair_share
from phalanx.sim.record import RunRecord

from .stepplot import StepLine, add_point, step_lines_svg

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
        add_point(out.setdefault(change.key, []),
                  (change.t, allocated, _gpus(fair.get("fairShare"))))
    return out


def queue_shares_svg(record: RunRecord, series: dict[str, Series] | None = None) -> str:
    """Solid: GPUs allocated; dashed: fair share; one colour per leaf queue."""
    series = queue_series(record) if series is None else series
    lines: list[StepLine] = []
    for i, (name, points) in enumerate(sorted(series.items())):
        colour = f"C{i % 10}"
        lines.append(StepLine(f"{name} allocated", [(p[0], p[1]) for p in points], colour))
        lines.append(StepLine(f"{name} fair share", [(p[0], p[2]) for p in points], colour,
                              {"lw": 1.2, "ls": "--"}))
    return step_lines_svg(record, lines, ylabel="GPUs", salt="queues", height=3.6,
                          label="queue allocation against fair share over time")
