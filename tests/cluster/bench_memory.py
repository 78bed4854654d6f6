"""Measure MemoryCluster: create+get throughput, watch fan-out, memory per stored pod.

    python tests/cluster/bench_memory.py [--pods 100000] [--watchers 5] [--no-gc]

Not a test (no timing assertions). Times are process CPU seconds, so a busy machine skews
them less. `--no-gc` disables Python's cyclic GC to show what it costs (a simulation can
recover most of that with gc.freeze() after setup or a larger gen-0 threshold).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import tracemalloc
from collections.abc import Callable

from phalanx.api.base import Resource
from phalanx.api.core import ConfigMap, Pod
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def small_pod(i: int) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": f"pod-{i}", "namespace": "bench",
                     "labels": {"app": "bench", "gang": f"g{i // 8}"}},
        "spec": {"containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                 "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}]},
    })


def config_map(i: int) -> ConfigMap:
    return ConfigMap.model_validate({
        "metadata": {"name": f"cm-{i}", "namespace": "bench", "labels": {"app": "bench"}},
        "data": {"key": "value"},
    })


async def create_get(what: str, make: Callable[[int], Resource], n: int) -> None:
    c = MemoryCluster(history_size=10_000)
    objs = [make(i) for i in range(n)]
    kind, names = type(objs[0]), [o.name for o in objs]
    gc.collect()
    t0 = time.process_time()
    for o in objs:
        await c.create(o)
    t1 = time.process_time()
    for name in names:
        await c.get(kind, name, "bench")
    t2 = time.process_time()
    print(f"{what:<11} create {n / (t1 - t0):>8,.0f}/s   get {n / (t2 - t1):>8,.0f}/s   "
          f"create+get round trip {n / (t2 - t0):>8,.0f} objects/s   ({n:,} objects)")


async def fan_out(n: int, watchers: int) -> None:
    """Watch cost: creates with `watchers` consumers minus the same creates with none
    (best of three each). "batched": the writer never yields, consumers drain buffers;
    "interleaved": the writer yields after every create, so each event wakes each consumer."""
    pods = [small_pod(i) for i in range(n)]

    async def run(k: int, interleave: bool) -> float:
        c = MemoryCluster(history_size=1000)
        consumed = 0
        done = asyncio.Event()

        async def consume(stream):
            nonlocal consumed
            async for _ in stream:
                consumed += 1
                if consumed == n * k:
                    done.set()

        tasks = [asyncio.create_task(consume(c.watch(Pod, "bench"))) for _ in range(k)]
        await asyncio.sleep(0)
        gc.collect()
        t0 = time.process_time()
        for p in pods:
            await c.create(p)
            if interleave:
                await asyncio.sleep(0)
        if k:
            await done.wait()
        elapsed = time.process_time() - t0
        for t in tasks:
            t.cancel()
        return elapsed

    for interleave in (False, True):
        with_w = min([await run(watchers, interleave) for _ in range(3)])
        base = min([await run(0, interleave) for _ in range(3)])
        per = (with_w - base) / (n * watchers)
        print(f"watch fan-out ({'interleaved' if interleave else 'batched'}): {n:,} pod creates "
              f"x {watchers} watchers: {per * 1e6:.2f} us per event per watcher "
              f"({1 / per:,.0f} deliveries/s); creates alone {n / base:,.0f}/s, "
              f"with watchers {n / with_w:,.0f}/s")


async def memory(n: int) -> None:
    pods = [small_pod(i) for i in range(n)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    c = MemoryCluster(history_size=1)  # a long history keeps old versions alive
    for p in pods:
        await c.create(p)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"memory: {(after - before) / n:,.0f} bytes per stored pod ({n:,} pods, "
          "indexes included, watch history excluded)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--watchers", type=int, default=5)
    ap.add_argument("--no-gc", action="store_true")
    args = ap.parse_args()
    if args.no_gc:
        gc.disable()
    print(f"cyclic GC {'off' if args.no_gc else 'on'}")
    run_virtual(create_get("configmaps", config_map, args.pods))
    run_virtual(create_get("pods", small_pod, args.pods))
    run_virtual(fan_out(min(args.pods, 20_000), args.watchers))
    run_virtual(memory(min(args.pods, 20_000)))


if __name__ == "__main__":
    main()
