"""Prometheus metrics of the operator and scheduler processes.

One registry per process (not prometheus_client's global one, so tests and embedded runs
stay isolated). Counters and histograms are updated by the code that observes the event;
gauges that mirror state (queue depth, leadership) are sampled at scrape time through
`add_sampler`, so nothing polls in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# Scheduling latencies run from sub-millisecond cycles to gangs waiting minutes.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
WAIT_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

Sample = tuple[dict[str, str], float]  # (labels, value)


class _SampledGauges(Collector):
    def __init__(self) -> None:
        self._gauges: dict[str, tuple[str, tuple[str, ...], Callable[[], Iterable[Sample]]]] = {}

    def add(self, name: str, doc: str, labels: tuple[str, ...],
            sample: Callable[[], Iterable[Sample]]) -> None:
        self._gauges[name] = (doc, labels, sample)

    def collect(self) -> Iterable[Metric]:
        for name, (doc, labels, sample) in self._gauges.items():
            family = GaugeMetricFamily(name, doc, labels=list(labels))
            try:
                values = list(sample())
            except Exception:  # a broken sampler must not break the whole scrape
                continue
            for label_values, value in values:
                family.add_metric([label_values.get(k, "") for k in labels], value)
            yield family


class PhalanxMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        # Reconcile counts and queue depths are sampled from the controllers at scrape time
        # (runtime.bind_controller_metrics): phalanx_controller_reconciles_total,
        # phalanx_workqueue_depth.
        self.scheduling_attempts = Counter(
            "phalanx_scheduling_attempts_total", "Scheduling attempts by profile and result "
            "(scheduled, unschedulable, error).", ["profile", "result"], registry=r)
        self.scheduling_seconds = Histogram(
            "phalanx_scheduling_attempt_duration_seconds", "Scheduling attempt latency by "
            "profile and result.", ["profile", "result"], buckets=LATENCY_BUCKETS, registry=r)
        self.gang_wait_seconds = Histogram(
            "phalanx_gang_wait_seconds", "Time from a PodGang's creation until all of its "
            "pods are bound.", ["scheduler"], buckets=WAIT_BUCKETS, registry=r)
        self.admission = Counter(
            "phalanx_admission_requests_total", "Admission webhook requests.",
            ["hook", "kind", "allowed"], registry=r)
        self.admission_seconds = Histogram(
            "phalanx_admission_duration_seconds", "Admission webhook latency.", ["hook"],
            buckets=LATENCY_BUCKETS, registry=r)
        self.is_leader = Gauge("phalanx_leader", "1 while this replica holds the lease.",
                               ["lease"], registry=r)
        self._sampled = _SampledGauges()
        r.register(self._sampled)
        # What a leak shows in (process_resident_memory_bytes, open fds; and the tasks of the
        # event loop the metrics endpoint is served from, which is the service's one loop).
        ProcessCollector(registry=r)
        self.add_sampler("phalanx_asyncio_tasks", "Tasks alive on the service's event loop.",
                         (), lambda: [({}, float(len(asyncio.all_tasks())))])

    def add_sampler(self, name: str, doc: str, labels: tuple[str, ...],
                    sample: Callable[[], Iterable[Sample]]) -> None:
        """A gauge whose values are read at scrape time (e.g. work-queue depths)."""
        self._sampled.add(name, doc, labels, sample)

    def observe_admission(self, hook: str, kind: str, allowed: bool, seconds: float) -> None:
        self.admission.labels(hook, kind, "true" if allowed else "false").inc()
        self.admission_seconds.labels(hook).observe(seconds)
