"""Multi-tenant trace replay: each queue's GPU share against its fair share, with queues and
without, on the same trace (`phalanx bench trace --queues FILE --pairs N`).

`QueueShareProbe` watches a replay's pods. A pod belongs to its job's trace queue (by its
PodCliqueSet, so the run without queues is measured the same way); it *holds* its GPUs
while bound and not ended, and *asks* for them while it exists and is not being deleted
(KAI's allocated and requested). Whenever what a queue asks for changes, the fair share is
divided again as the scheduler divides it (phalanx/scheduler/queues: the Queues' quotas
and over-quota weights, each queue's requests, the cluster's GPUs), so both runs are held to
the same reference: the fair share the queues' owners were promised. Queue creation times
are not known here, so ties in the division's last whole GPU go by name.

Per queue, over the replay (`queue_metrics`, pure, on the sampled history):
- the time-weighted mean share held and fair share (of the cluster's GPUs);
- the largest shortfall: max over time of (fair share - held) / cluster GPUs, counted only
  while the queue waits for GPUs (it asks for more than it holds); a queue with nothing
  waiting is not short of anything;
- the time spent more than 10% under: the share of the time the queue waited in which it
  held less than 90% of its fair share; and the same counting only the time when one of its
  waiting jobs would fit within its fair share (held + what the job still needs <= fair
  share). A gang larger than what is left of its queue's share cannot reclaim (KAI: the
  queue must stay within its fair share with the job), so the first figure includes waits
  no scheduler could shorten; the second is the time the scheduler left a queue short;
- a timeline of held and fair share (fractions of the cluster) for plotting.
Evictions are the scheduler's own counters: pods evicted by QueueReclaim (reclaim between
queues) and by DefaultPreemption (priority, within a queue).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.queue import Queue
from phalanx.scheduler.queues import tree
from phalanx.scheduler.queues.division import set_fair_share
from phalanx.scheduler.queues.share import GPU

from .replay import ReplayConfig, replay_trace
from .roomwait import pod_gpus
from .stack import EmbeddedStack
from .trace import TraceJob
from .tracker import PodTracker
from .workload import GPUS_PER_NODE

UNDER = 0.9  # "more than 10% under its fair share"
TIMELINE_POINTS = 48


@dataclass(slots=True)
class Sample:
    """From `t` until the next sample: per queue (in `names` order) GPUs held, asked for,
    and the fair share."""

    t: float
    held: tuple[float, ...]
    asked: tuple[float, ...]
    fair: tuple[float, ...]
    # the smallest GPUs a waiting job of the queue still needs (0: none waits)
    need: tuple[float, ...] = ()


def fair_shares(objects: dict[str, Queue], asked: dict[str, float], capacity: float
                ) -> dict[str, float]:
    """Each queue's GPU fair share, divided as the scheduler divides it."""
    shares = tree.build(objects)
    requests = {q: (0.0, 0.0, gpus) for q, gpus in asked.items()}
    tree.account(shares, requests, {}, requests)
    set_fair_share(shares, [0.0, 0.0, float(capacity)])
    return {name: q.fair_share()[GPU] for name, q in shares.items()}


def queue_metrics(samples: Sequence[Sample], names: Sequence[str], capacity: float,
                  end: float) -> dict[str, dict[str, Any]]:
    """Per queue: mean held and fair share, the largest shortfall while waiting, and the
    share of its waiting time spent more than 10% under its fair share (see module doc)."""
    out: dict[str, dict[str, Any]] = {}
    span = max(end - samples[0].t, 1e-9) if samples else 0.0
    for i, name in enumerate(names):
        held_area = fair_area = waiting = under = under_fitting = 0.0
        shortfall = 0.0
        for k, s in enumerate(samples):
            dt = (samples[k + 1].t if k + 1 < len(samples) else end) - s.t
            if dt <= 0:
                continue
            held, fair = s.held[i], s.fair[i]
            held_area += held * dt
            fair_area += fair * dt
            if s.asked[i] > held + 1e-9:  # it waits for GPUs
                waiting += dt
                if held < UNDER * fair - 1e-9:
                    under += dt
                    need = s.need[i] if s.need else 0.0
                    if need and held + need <= fair + 1e-9:
                        under_fitting += dt
                shortfall = max(shortfall, (fair - held) / capacity)
        out[name] = {
            "mean_share": round(held_area / (capacity * span), 4) if span else 0.0,
            "mean_fair_share": round(fair_area / (capacity * span), 4) if span else 0.0,
            "largest_shortfall": round(shortfall, 4),
            "waiting_hours": round(waiting / 3600, 2),
            "time_over_10pct_under": round(under / waiting, 4) if waiting else 0.0,
            "time_over_10pct_under_job_fits": round(under_fitting / waiting, 4) if waiting
            else 0.0,
            "timeline": _timeline(samples, i, capacity, end),
        }
    return out


def _timeline(samples: Sequence[Sample], i: int, capacity: float, end: float
              ) -> list[list[float]]:
    """[seconds from the first sample, held share, fair share] at evenly spaced times."""
    if not samples:
        return []
    t0 = samples[0].t
    step = max(end - t0, 1e-9) / TIMELINE_POINTS
    out, k = [], 0
    for n in range(TIMELINE_POINTS + 1):
        t = t0 + n * step
        while k + 1 < len(samples) and samples[k + 1].t <= t:
            k += 1
        s = samples[k]
        out.append([round(n * step, 1), round(s.held[i] / capacity, 4),
                     round(s.fair[i] / capacity, 4)])
    return out


@dataclass
class QueueShareProbe:
    jobs: list[TraceJob]
    queues: Sequence[dict[str, Any]]
    capacity: float
    names: list[str] = field(init=False)
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.objects = {d["metadata"]["name"]: Queue.model_validate(d) for d in self.queues}
        self.names = sorted(self.objects)
        self._index = {n: i for i, n in enumerate(self.names)}
        self._job_queue = {j.pcs_name(): j.queue for j in self.jobs}
        # pod key -> (queue, gpus, held, asked, job)
        self._pods: dict[str, tuple[int, float, bool, bool, str]] = {}
        self._job_gap: dict[str, float] = {}  # job -> GPUs asked but not held (waiting jobs)
        self._held = [0.0] * len(self.names)
        self._asked = [0.0] * len(self.names)
        self._fair = tuple(0.0 for _ in self.names)
        self._t0 = 0.0
        self._stack: EmbeddedStack | None = None
        self._scheduler: Any = None

    def start(self, stack: EmbeddedStack, tracker: PodTracker, t0: float) -> None:
        self._stack, self._t0 = stack, t0
        self._scheduler = stack.scheduler  # stop() drops it from the stack
        tracker.informer.add_handler(self._on, lambda _old, new: self._on(new), self._gone)
        for pod in tracker.informer.list():
            self._on(pod)

    def _queue_of(self, pod: Pod) -> int | None:
        queue = self._job_queue.get(pod.metadata.labels.get(labels.LABEL_PART_OF, ""))
        return self._index.get(queue) if queue else None

    def _on(self, pod: Pod) -> None:
        job = pod.metadata.labels.get(labels.LABEL_PART_OF, "")
        q = self._queue_of(pod)
        if q is None:
            return
        gpus = pod_gpus(pod)
        ended = pod.is_terminal
        held = bool(pod.spec.node_name) and not ended
        asked = not ended and pod.metadata.deletion_timestamp is None or held
        self._set(pod.key, (q, gpus, held, asked, job))

    def _gone(self, pod: Pod) -> None:
        if pod.key in self._pods:
            self._set(pod.key, None)

    def _set(self, key: str, new: tuple[int, float, bool, bool, str] | None) -> None:
        old = self._pods.pop(key, None)
        if new is not None:
            self._pods[key] = new
        if old == new:
            return
        asked_before = list(self._asked)
        for entry, sign in ((old, -1.0), (new, 1.0)):
            if entry is None:
                continue
            q, gpus, held, asked, job = entry
            if held:
                self._held[q] += sign * gpus
            if asked:
                self._asked[q] += sign * gpus
            gap = (gpus if asked else 0.0) - (gpus if held else 0.0)
            if gap:
                left = self._job_gap.get(job, 0.0) + sign * gap
                if left > 1e-9:
                    self._job_gap[job] = left
                else:
                    self._job_gap.pop(job, None)
        if self._asked != asked_before:
            fair = fair_shares(self.objects, dict(zip(self.names, self._asked, strict=True)),
                               self.capacity)
            self._fair = tuple(fair.get(n, 0.0) for n in self.names)
        now = asyncio.get_running_loop().time() - self._t0
        need = [0.0] * len(self.names)
        for job, gap in self._job_gap.items():
            q = self._index.get(self._job_queue.get(job, ""))
            if q is not None and (not need[q] or gap < need[q]):
                need[q] = gap
        sample = Sample(now, tuple(self._held), tuple(self._asked), self._fair, tuple(need))
        if self.samples and self.samples[-1].t == now:
            self.samples[-1] = sample  # one sample per instant: the last state holds
        else:
            self.samples.append(sample)

    def evictions(self) -> dict[str, int]:
        """Pods evicted, by the scheduler plugin that evicted them."""
        out = {"QueueReclaim": 0, "DefaultPreemption": 0}
        sched = self._scheduler
        if sched is None:
            return out
        seen: set[int] = set()
        for fw in sched.frameworks.values():
            for plugin in fw.plugins.values():
                if id(plugin) in seen or plugin.NAME not in out:
                    continue
                seen.add(id(plugin))
                out[plugin.NAME] += int(getattr(plugin, "evictions", 0))
        return out

    def report(self, end: float) -> dict[str, Any]:
        per_queue = queue_metrics(self.samples, self.names, self.capacity, end)
        evicted = self.evictions()
        return {
            "queues": per_queue,
            "largest_shortfall": max((m["largest_shortfall"] for m in per_queue.values()),
                                     default=0.0),
            "time_over_10pct_under_worst": max(
                (m["time_over_10pct_under"] for m in per_queue.values()), default=0.0),
            "time_over_10pct_under_job_fits_worst": max(
                (m["time_over_10pct_under_job_fits"] for m in per_queue.values()), default=0.0),
            "reclaim_evicted_pods": evicted["QueueReclaim"],
            "preemption_evicted_pods": evicted["DefaultPreemption"],
        }


# --- input ----------------------------------------------------------------------------------


class QueueFileError(ValueError):
    """A Queue file that cannot be used (the message names the file, object and field)."""


def load_queue_file(path: Path, jobs: Sequence[TraceJob]) -> list[dict[str, Any]]:
    """The KAI Queues of `path` as `kubectl apply -f` takes them, admitted in file order by
    an API server's rules (a cycle, a child's quota over its parent's, a negative or
    non-numeric quota, a limit below the quota are refused, naming the field), and covering
    every queue the trace names."""
    from phalanx.api.errors import ManifestError
    from phalanx.api.loader import load_file

    if not path.is_file():
        raise QueueFileError(f"--queues: {path}: no such file")
    try:
        objects = load_file(path)
    except ManifestError as e:
        raise QueueFileError(f"--queues: {e}") from None
    docs: list[dict[str, Any]] = []
    for obj in objects:
        if not isinstance(obj, Queue):
            raise QueueFileError(f"--queues: {path}: {obj.KIND} {obj.name!r} is not a "
                                 f"{Queue.API_VERSION} Queue")
        docs.append(obj.to_dict())
    if not docs:
        raise QueueFileError(f"--queues: {path}: no Queue in the file")
    problem = asyncio.run(_admission_problem(docs))
    if problem:
        raise QueueFileError(f"--queues: {path}: {problem}")
    named = {d["metadata"]["name"] for d in docs}
    missing = sorted({j.queue for j in jobs if j.queue and j.queue not in named})
    if missing:
        raise QueueFileError(f"--queues: {path}: the trace names queue(s) {', '.join(missing)}, "
                             "which the file does not define")
    return docs


async def _admission_problem(docs: Sequence[dict[str, Any]]) -> str:
    from phalanx.api import registry
    from phalanx.cluster.client import ApiError
    from phalanx.cluster.memory import MemoryCluster

    cluster = MemoryCluster()
    for doc in docs:
        try:
            await cluster.create(registry.from_dict(doc))
        except ApiError as e:
            return f"Queue {doc['metadata']['name']}: {e}"
    return ""


# --- side by side ---------------------------------------------------------------------------

HEADLINE = ("gpu_utilisation", "largest_shortfall", "time_over_10pct_under_worst",
            "time_over_10pct_under_job_fits_worst",
            "reclaim_evicted_pods", "preemption_evicted_pods", "job_restarts",
            "largest_gang_class_wait_p99_seconds", "wall_seconds", "cpu_seconds")


def run_one(jobs: list[TraceJob], cfg: ReplayConfig, queues: Sequence[dict[str, Any]],
            with_queues: bool) -> dict[str, Any]:
    """One replay, with the Queues created and jobs naming theirs, or with neither; the
    probe measures both against the same queues' fair shares."""
    run_cfg = replace(cfg, queues=tuple(queues) if with_queues else ())
    probe = QueueShareProbe(jobs, queues, cfg.nodes * GPUS_PER_NODE)
    return replay_trace(jobs, run_cfg, probe) | {"with_queues": with_queues}


def compare(jobs: list[TraceJob], cfg: ReplayConfig, queues: Sequence[dict[str, Any]],
            pairs: int, progress: Any = None) -> dict[str, Any]:
    """`pairs` pairs of runs, with queues and without, the order alternating (with first in
    even pairs); per side, every run and the median and range of the headline figures."""
    runs: dict[str, list[dict[str, Any]]] = {"with_queues": [], "without_queues": []}
    for p in range(pairs):
        order = (True, False) if p % 2 == 0 else (False, True)
        for with_queues in order:
            side = "with_queues" if with_queues else "without_queues"
            if progress is not None:
                progress(f"pair {p + 1}/{pairs}: {side.replace('_', ' ')} ...")
            runs[side].append(run_one(jobs, cfg, queues, with_queues))
    return {
        "benchmark": "trace-queues",
        "pairs": pairs,
        "queues": list(queues),
        "summary": {side: summarise(rs) for side, rs in runs.items()},
        "runs": runs,
    }


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in HEADLINE:
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            out[key] = {"median": round(statistics.median(values), 4),
                        "min": round(min(values), 4), "max": round(max(values), 4)}
    per_queue: dict[str, Any] = {}
    for name in runs[0].get("queues", {}) if runs else ():
        per_queue[name] = {
            key: round(statistics.median(r["queues"][name][key] for r in runs), 4)
            for key in ("mean_share", "mean_fair_share", "largest_shortfall",
                        "time_over_10pct_under", "time_over_10pct_under_job_fits")}
    out["queues"] = per_queue
    return out
