"""Benchmark: how long the operator alone takes to materialise a large PodCliqueSet on
MemoryCluster, and how many API writes that costs per pod.

    /work/venv/bin/python tests/operator/bench_materialize.py [--replicas 1000] [--full]

"Materialised" = every PodGang Initialized and BackendSynced, every pod created with its
gate lifted (the operator's whole job until a scheduler binds pods). `--full` also runs the
test binder and the simulated kubelet until every PodGang is Running, to show the writes the
operator makes for status on the way (binds and kubelet writes are listed apart).
Not a test: no assertions on time; it prints measured numbers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from op_harness import Binder, make_pcs  # noqa: E402

from phalanx.api.core import Pod  # noqa: E402
from phalanx.api.grove import PodGang  # noqa: E402
from phalanx.cluster.clock import run_virtual  # noqa: E402
from phalanx.cluster.memory import MemoryCluster  # noqa: E402
from phalanx.operator import OperatorManager  # noqa: E402
from phalanx.operator.conditions import BACKEND_SYNCED  # noqa: E402
from phalanx.sim.kubelet import Kubelet  # noqa: E402

NOT_OPERATOR = {("bind", "Pod"), ("update_status", "Pod"), ("create", "Node")}


async def bench(replicas: int, full: bool) -> None:
    cluster = MemoryCluster()
    op = OperatorManager(cluster)
    await op.start()
    binder = kubelet = None
    if full:
        binder, kubelet = Binder(cluster, nodes=64), Kubelet(cluster)
        await binder.start()
        await kubelet.start()
    loop_clock = cluster.clock
    pcs = make_pcs("bench", [("prefill", 8), ("decode", 8)], replicas=replicas)
    cluster.stats.reset()
    wall0, cpu0, virt0 = time.perf_counter(), time.process_time(), loop_clock.now()
    await cluster.create(pcs)
    while True:
        await op.wait_idle()
        if binder is None:
            break
        busy = binder.manager.busy() or kubelet.manager.busy()  # type: ignore[union-attr]
        if not busy:
            break
        await binder.manager.wait_idle()
        await kubelet.manager.wait_idle()  # type: ignore[union-attr]
    wall, virt = time.perf_counter() - wall0, loop_clock.now() - virt0
    cpu = time.process_time() - cpu0

    pods = (await cluster.list(Pod)).items
    gangs = (await cluster.list(PodGang)).items
    assert len(pods) == replicas * 16, len(pods)
    assert all(not p.spec.scheduling_gates for p in pods)
    assert all(g.is_initialized and g.is_condition_true(BACKEND_SYNCED) for g in gangs)
    if full:
        assert all(g.status.phase == "Running" for g in gangs)
    stats = cluster.stats
    op_writes = {k: n for k, n in stats.writes.items() if k not in NOT_OPERATOR}
    total = sum(op_writes.values())
    print(f"PodCliqueSet: {replicas} replicas x 16 pods = {len(pods)} pods, "
          f"{len(gangs)} PodGangs ({'operator + binder + kubelet' if full else 'operator alone'})")
    print(f"wall time: {wall:.2f}s (cpu {cpu:.2f}s)   virtual time: {virt:.2f}s   "
          f"({len(pods) / wall:.0f} pods/s)")
    print(f"operator API writes: {total} = {total / len(pods):.3f} per pod")
    for (verb, kind), n in sorted(op_writes.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"  {kind:<22} {verb:<14} {n:>7}  {n / len(pods):.3f}/pod")
    others = {k: n for k, n in stats.writes.items() if k in NOT_OPERATOR}
    if others:
        print("other components' writes: " + ", ".join(
            f"{kind} {verb} {n}" for (verb, kind), n in sorted(others.items())))
    print(f"no-op writes answered without a change: {sum(stats.noops.values())}")
    for c in op.controllers:
        print(f"  controller {c.name:<22} reconciles {c.reconciles:>6}  errors {c.errors}")
    if kubelet is not None:
        await kubelet.stop()
        await binder.stop()  # type: ignore[union-attr]
    await op.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    run_virtual(bench(args.replicas, args.full))


if __name__ == "__main__":
    main()
