"""API write failures, optimistic-lock conflicts and dropped watches, at 1-10% each, while
the operator materialises and the scheduler places a thousand gangs across every backend;
then while all of it is deleted.

Must hold once things settle: every pod Running, every PodGang Running and fully bound (never
partly), no clique with a duplicate pod, no object whose owner is gone; and after deletion,
nothing derived left (no orphaned PodGang, PodGroup or Workload).
"""

from __future__ import annotations

import asyncio
import random

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueSet, PodGang
from phalanx.bench.stack import Connect, EmbeddedStack
from phalanx.bench.tracker import PodTracker
from phalanx.bench.workload import (
    ALL_SCHEDULERS,
    gpu_cluster,
    job_podcliqueset,
    scheduler_queues,
)
from phalanx.cluster.client import Conflict, ServerError
from phalanx.cluster.clock import run_virtual, wait_for_condition
from phalanx.cluster.memory import MemoryCluster

from .invariants import (
    create_retrying,
    delete_retrying,
    derived_left,
    duplicate_pods,
    env_int,
    everything,
    gang_binding,
    orphans,
)

GANGS = env_int("PHALANX_RELIABILITY_GANGS", 1000)
SEED = env_int("PHALANX_RELIABILITY_SEED", 7)
PODS_PER_GANG = 2


def nodes_for(gangs: int) -> int:
    """CPU-only pods of 4 cpu: 32 fit a 128-cpu node. A quarter of spare room."""
    return max(4, (gangs * PODS_PER_GANG * 5 // 4) // 32 + 1)


class PartialWatch:
    """The longest time (virtual) any gang spent with some but not all pods bound."""

    def __init__(self, tracker: PodTracker) -> None:
        self.bound: dict[str, dict[str, None]] = {}
        self.since: dict[str, float] = {}
        self.longest = 0.0
        tracker.informer.add_handler(self._on, lambda old, new: self._on(new), self._on)

    def _on(self, pod: Pod) -> None:
        gang = pod.metadata.labels.get(labels.LABEL_PODGANG)
        if not gang:
            return
        members = self.bound.setdefault(gang, {})
        if pod.spec.node_name and pod.metadata.deletion_timestamp is None:
            members[pod.key] = None
        else:
            members.pop(pod.key, None)
        now = asyncio.get_running_loop().time()
        if 0 < len(members) < PODS_PER_GANG:
            self.since.setdefault(gang, now)
        elif gang in self.since:
            self.longest = max(self.longest, now - self.since.pop(gang))


def _rates(seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    return {"server_errors": rng.uniform(0.01, 0.10), "conflicts": rng.uniform(0.01, 0.10),
            "watch_drops": rng.uniform(0.01, 0.10)}


async def converge_under_faults(cluster: MemoryCluster, gangs: int, rates: dict[str, float],
                                connect: Connect | None = None) -> dict[str, object]:
    """The scenario; `connect` gives each component its own client (default: `cluster`)."""
    stack = EmbeddedStack(gpu_cluster(nodes_for(gangs)), cluster=cluster, connect=connect)
    await stack.start()
    tracker = PodTracker(cluster)
    partial = PartialWatch(tracker)
    await tracker.start()
    faults = cluster.faults
    faults.fail_writes(rates["server_errors"], error=ServerError)
    faults.fail_writes(rates["conflicts"], verbs={"update", "update_status", "patch"},
                       error=Conflict)
    faults.drop_watches(rates["watch_drops"])
    loop = asyncio.get_running_loop()
    t0 = loop.time()

    names = [f"gang-{i:05d}" for i in range(gangs)]
    for queue in scheduler_queues(list(ALL_SCHEDULERS)):  # KAI's pods name one
        await create_retrying(cluster, queue)
    for i, name in enumerate(names):
        await create_retrying(cluster, job_podcliqueset(
            name, PODS_PER_GANG, 0, scheduler=ALL_SCHEDULERS[i % len(ALL_SCHEDULERS)]))
    pods = gangs * PODS_PER_GANG
    assert await tracker.wait(lambda t: t.running >= pods, timeout=6 * 3600), (
        f"only {tracker.running}/{pods} pods Running ({tracker.bound} bound, "
        f"{tracker.pods} created) after 6h of virtual time")
    running_at = loop.time() - t0

    async def statuses_converged() -> bool:
        podgangs = (await cluster.list(PodGang)).items
        sets = (await cluster.list(PodCliqueSet)).items
        return (len(podgangs) == gangs and all(g.status.phase == "Running" for g in podgangs)
                and all(s.status.available_replicas == s.spec.replicas for s in sets))

    assert await wait_for_condition(statuses_converged, timeout=3600, interval=30), \
        "PodGang phases / PodCliqueSet availableReplicas did not converge within 1h"
    state = await everything(cluster)
    assert orphans(state) == []
    assert duplicate_pods(state[Pod], state[PodClique]) == []  # type: ignore[arg-type]
    partly, unbound = gang_binding(state[Pod], state[PodGang])  # type: ignore[arg-type]
    assert partly == [] and unbound == []
    assert len(state[Pod]) == pods

    # Delete everything, still under faults: nothing derived may be left behind.
    for name in names:
        await delete_retrying(cluster, PodCliqueSet, name, "default")

    async def all_gone() -> bool:
        return not derived_left(await everything(cluster))

    gone = await wait_for_condition(all_gone, timeout=2 * 3600, interval=30)
    left = derived_left(await everything(cluster))
    assert gone, f"after deleting every PodCliqueSet: {left}"
    injected, summary = faults.total, faults.summary()
    faults.clear()
    await tracker.stop()
    await stack.stop()
    return {"injected": injected, "summary": summary, "running_at": running_at,
            "longest_partial": partial.longest, "virtual": loop.time() - t0}


def _report_counts(report, out: dict[str, object], gangs: int, rates: dict[str, float],
                   **extra: object) -> None:
    print(out["summary"])
    report(gangs=gangs, pods=gangs * PODS_PER_GANG, backends=len(ALL_SCHEDULERS),
           faults_injected=out["injected"],
           rates=", ".join(f"{k} {v:.1%}" for k, v in rates.items()),
           all_running_after_virtual_s=round(float(out["running_at"]), 1),  # type: ignore[arg-type]
           longest_partly_bound_virtual_s=round(float(out["longest_partial"]), 2),  # type: ignore[arg-type]
           virtual_s=round(float(out["virtual"]), 1), **extra)  # type: ignore[arg-type]


def test_faults_during_materialisation_scheduling_and_deletion_converge(report) -> None:
    rates = _rates(SEED)
    out = run_virtual(converge_under_faults(MemoryCluster(seed=SEED), GANGS, rates))
    _report_counts(report, out, GANGS, rates)


def test_faults_through_the_wire_client_converge(report) -> None:
    """The same, with every component on its own KubeCluster (the real-cluster client) over
    HTTP to a REST facade of the faulty MemoryCluster: injected errors arrive as metav1.Status
    replies, dropped watches as ended chunked streams."""
    from phalanx.cluster.kube import KubeCluster, connection_for
    from tests.cluster.kube.facade import start_facade

    gangs = max(5, GANGS // 20)
    rates = _rates(SEED + 1)

    async def main() -> dict[str, object]:
        cluster = MemoryCluster(seed=SEED + 1)
        _, runner, url = await start_facade(cluster)

        def connect(name: str) -> KubeCluster:
            kube = KubeCluster.from_connection(connection_for(url), field_manager=name,
                                               qps=1e6, burst=1_000_000)
            kube._clock = cluster.clock  # the facade's virtual clock
            return kube

        try:
            return await converge_under_faults(cluster, gangs, rates, connect)
        finally:
            await runner.cleanup()

    out = run_virtual(main)
    _report_counts(report, out, gangs, rates, client="KubeCluster over HTTP")
