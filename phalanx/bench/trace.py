"""Job-arrival traces: the CSV format `phalanx bench trace` replays.

    job_id,submit_time,gang_size,gpus_per_pod,duration
    job-00000,0.000,4,8,1234.5

- `submit_time`: seconds from the start of the trace (any order; replayed sorted);
- `gang_size`: pods that must run together (one PodGang);
- `gpus_per_pod`: GPUs each pod asks for (0 for CPU-only pods; at most one node's GPUs);
- `duration`: seconds the job runs once all its pods are Running;
- `job_id` (optional column): a name; rows without one are numbered;
- `queue` (optional column): the KAI queue the job runs in (its pods carry the
  `kai.scheduler/queue` label); empty for none. `phalanx bench trace --queues FILE` gives
  the Queue objects.

Columns may come in any order; extra columns are ignored. Errors name the file, the line and
the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

REQUIRED = ("submit_time", "gang_size", "gpus_per_pod", "duration")
MAX_GANG = 100_000
_NAME_OK = re.compile(r"[^a-z0-9-]+")
# A Queue is cluster-scoped and named as any object: a DNS subdomain (lowercase).
_QUEUE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class TraceError(ValueError):
    """A trace file that cannot be replayed (the message names where and why)."""


@dataclass(slots=True, frozen=True)
class TraceJob:
    job_id: str
    submit_time: float
    gang_size: int
    gpus_per_pod: int
    duration: float
    queue: str = ""

    @property
    def gpus(self) -> int:
        return self.gang_size * self.gpus_per_pod

    def pcs_name(self) -> str:
        """A valid PodCliqueSet name for the job (DNS label, short enough for pod names)."""
        name = _NAME_OK.sub("-", self.job_id.lower()).strip("-")[:40].strip("-")
        return name if name and name[0].isalpha() else f"job-{name}".rstrip("-")


def load_trace(path: Path) -> list[TraceJob]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as err:
        raise TraceError(f"{path}: cannot read the trace ({type(err).__name__})") from None
    return parse_trace(text, str(path))


def parse_trace(text: str, source: str = "<trace>") -> list[TraceJob]:
    """Jobs sorted by submit time. Raises TraceError on the first bad row."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(f"{source}: line 1: missing column(s) {', '.join(missing)}; a trace "
                         f"needs {', '.join(REQUIRED)} (and optionally job_id, queue)")
    reader.fieldnames = header
    jobs: list[TraceJob] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        where = f"{source}: line {line}"
        if None in row:
            raise TraceError(f"{where}: more values than columns")
        job = _parse_row(row, where, len(jobs))
        name = job.pcs_name()
        if name in seen:
            raise TraceError(f"{where}: job {job.job_id!r} has the same name as the job on line "
                             f"{seen[name]} (job names must be unique)")
        seen[name] = line
        jobs.append(job)
    if not jobs:
        raise TraceError(f"{source}: the trace has no jobs")
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return jobs


def _parse_row(row: dict[str, str | None], where: str, index: int) -> TraceJob:
    def number(col: str, kind: type[int | float], low: float, high: float) -> float:
        raw = (row.get(col) or "").strip()
        if not raw:
            raise TraceError(f"{where}: {col} is empty")
        try:
            value = kind(raw) if kind is float else int(raw)
        except ValueError:
            raise TraceError(f"{where}: {col}: expected {'an integer' if kind is int else 'a number'},"
                             f" got {raw!r}") from None
        if math.isnan(value) or not low <= value <= high:
            raise TraceError(f"{where}: {col}: {raw} is out of range [{low:g}, {high:g}]")
        return value

    job_id = (row.get("job_id") or "").strip() or f"job-{index:05d}"
    queue = (row.get("queue") or "").strip()
    if queue and not _QUEUE_NAME.match(queue):
        raise TraceError(f"{where}: queue: {queue!r} is not a valid Queue name (lowercase "
                         "letters, digits, '-' and '.', starting and ending with a letter or "
                         "digit)")
    return TraceJob(
        job_id=job_id,
        submit_time=float(number("submit_time", float, 0.0, 365 * 24 * 3600.0)),
        gang_size=int(number("gang_size", int, 1, MAX_GANG)),
        gpus_per_pod=int(number("gpus_per_pod", int, 0, 1024)),
        duration=float(number("duration", float, 0.0, 365 * 24 * 3600.0)),
        queue=queue,
    )
