"""Grove's SoakChurn (soak_test.go): scale a PodCliqueSet base -> peak -> base, cycle after
cycle, and watch the operator for leaks.

Each cycle waits until the peak's pods are Ready, holds the peak (Grove: 30 s), scales back
and waits until only the base's pods are left and Ready. After every cycle it samples the
operator's resident memory and event-loop tasks (its /metrics) and the API server's open
watches (`apiserver_longrunning_requests{verb="WATCH"}`, every client's). A leak shows as
growth from the first cycle's sample to the last, with the same objects alive each time.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from prometheus_client.parser import text_string_to_metric_families

from phalanx.api.grove import PodCliqueSet
from phalanx.bench.kube.apimetrics import only_metrics
from phalanx.envtest.ports import http_get

from .scenarios import Scenario, pods_for

if TYPE_CHECKING:
    from .runner import PodWatch


class SoakSampler:
    def __init__(self, plane: Any, operator: Any) -> None:
        self.plane, self.operator = plane, operator

    def sample(self) -> dict[str, float | None]:
        rss = self.operator.metric("process_resident_memory_bytes")
        return {
            "operator_rss_mb": None if rss is None else round(rss / 2**20, 1),
            "operator_asyncio_tasks": self.operator.metric("phalanx_asyncio_tasks"),
            "apiserver_watches": self._watches(),
        }

    def _watches(self) -> float | None:
        status, body = http_get(f"{self.plane.server}/metrics", token=self.plane.token,
                                timeout=10)
        if status != 200:
            return None
        total = 0.0
        text = only_metrics(body.decode(), "apiserver_longrunning_requests")
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == "apiserver_longrunning_requests" and s.labels.get("verb") == "WATCH":
                    total += s.value
        return total


async def run_soak(kube: Any, sc: Scenario, ns: str, name: str, watch: PodWatch,
                   sampler: SoakSampler, progress: Any, timeout: float) -> dict[str, Any]:
    base, peak = sc.initial, sc.target or sc.initial
    base_pods, peak_pods = pods_for(sc, base), pods_for(sc, peak)
    samples = [{"cycle": 0, **await asyncio.to_thread(sampler.sample)}]
    cycles = []
    for cycle in range(1, sc.soak_cycles + 1):
        t0 = time.perf_counter()
        await kube.patch(PodCliqueSet, name, {"spec": {"replicas": peak}}, ns)
        up = await watch.until(lambda t: t.running >= peak_pods and t.pods == peak_pods,
                               t0, timeout)
        await asyncio.sleep(sc.soak_hold)  # the hold at the peak is part of the scenario
        t1 = time.perf_counter()
        await kube.patch(PodCliqueSet, name, {"spec": {"replicas": base}}, ns)
        down = await watch.until(lambda t: t.pods == base_pods and t.running >= base_pods,
                                 t1, timeout)
        cycles.append({"cycle": cycle, "peak_ready_seconds": up, "base_again_seconds": down})
        samples.append({"cycle": cycle, **await asyncio.to_thread(sampler.sample)})
        progress(f"  cycle {cycle}/{sc.soak_cycles}: up {up}s, down {down}s, "
                 f"operator RSS {samples[-1]['operator_rss_mb']} MB, "
                 f"tasks {samples[-1]['operator_asyncio_tasks']}, "
                 f"watches {samples[-1]['apiserver_watches']}")
        if up is None or down is None:
            break
    return {"base_replicas": base, "peak_replicas": peak, "hold_seconds": sc.soak_hold,
            "cycles": cycles, "samples": samples, "growth": _growth(samples)}


def _growth(samples: list[dict[str, Any]]) -> dict[str, float | None]:
    """Last cycle's sample minus the first cycle's (cycle 0 is before any churn; the first
    cycle warms caches and pools, so growth is counted from it)."""
    if len(samples) < 3:
        return {}
    first, last = samples[1], samples[-1]
    out: dict[str, float | None] = {}
    for key in ("operator_rss_mb", "operator_asyncio_tasks", "apiserver_watches"):
        a, b = first.get(key), last.get(key)
        out[key] = None if a is None or b is None else round(b - a, 1)
    return out
