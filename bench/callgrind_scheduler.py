"""Instructions executed in `phalanx bench scheduler`'s scheduling window, under callgrind.

Wall-clock and CPU-time numbers on a shared 2-vCPU machine move by 5-10% from run to run;
instruction counts move by about 1%, so small changes can be compared. Callgrind runs about
50x slower, hence a small workload (default 5,000 nodes, 2,000 pods). Instrumentation is off
while the cluster is filled and the informers sync, on from `Scheduler.wait_idle` until it
returns (every cycle, bind, informer update and Event of the run, plus the garbage collector).

    python bench/callgrind_scheduler.py [--pods N] [--nodes N]    # prints {"instructions": ...}
    PYTHONPATH=<other checkout> python bench/callgrind_scheduler.py  # the same for another commit

Needs valgrind (Debian: valgrind) and PYTHONHASHSEED is fixed for repeatability.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from callgrind_window import count_window


def inner(nodes: int, pods: int, marks: Path) -> None:
    from phalanx.scheduler.bench import BenchConfig, run_scheduler_bench
    from phalanx.scheduler.scheduler import Scheduler

    wait_idle = Scheduler.wait_idle

    async def marked(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        (marks / "start").write_text(str(os.getpid()))
        try:
            return await wait_idle(self, *args, **kwargs)
        finally:
            (marks / "stop").write_text("")

    Scheduler.wait_idle = marked  # type: ignore[method-assign]
    r = run_scheduler_bench(BenchConfig(nodes=nodes, pods=pods))
    print(json.dumps({"pods_bound": r["pods_bound"], "attempts": r["attempts"]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inner:
        inner(a.nodes, a.pods, Path(a.inner))
        return
    instructions, result = count_window(__file__, ["--nodes", str(a.nodes), "--pods", str(a.pods)])
    print(json.dumps({"nodes": a.nodes, "pods": a.pods, "instructions": instructions, **result}))


if __name__ == "__main__":
    main()
