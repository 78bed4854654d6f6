"""Instructions executed in `phalanx bench e2e`'s window, under callgrind.

Wall-clock and CPU-time figures of the whole stack on a shared 2-vCPU machine move by 10% and
more from run to run; instruction counts move by about 1%, so two trees can be compared.
Callgrind runs about 50x slower, hence a small workload (default 1,000 nodes, 1,000 pods in
PodCliqueSets of 8, gate-free). Instrumentation is off while the cluster is built and the
components start; it is on from the moment the bench resets its counters (just before the
first PodCliqueSet is created) until the bench stops its pod tracker (every pod Running and
the API quiet): the operator, the scheduler, the simulated kubelets, the embedded API server
and the garbage collector.

    python bench/callgrind_e2e.py [--nodes N] [--pods N] [--gated]   # prints {"instructions": ...}
    PYTHONPATH=<other checkout> python bench/callgrind_e2e.py         # the same for another tree

Needs valgrind (Debian: valgrind); PYTHONHASHSEED is fixed for repeatability.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from callgrind_window import count_window


def inner(nodes: int, pods: int, gated: bool, marks: Path) -> None:
    from phalanx.bench.e2e import E2EConfig, run_e2e_bench
    from phalanx.bench.tracker import PodTracker
    from phalanx.cluster.stats import ClusterStats

    reset, stop = ClusterStats.reset, PodTracker.stop
    started = False

    def marked_reset(self: ClusterStats) -> None:
        nonlocal started
        reset(self)
        if not started:  # the bench's reset just before its first create: the window opens
            started = True
            (marks / "start").write_text(str(os.getpid()))
            while not (marks / "on").exists():  # blocks the loop: nothing runs meanwhile
                time.sleep(0.05)

    async def marked_stop(self: PodTracker) -> None:
        (marks / "stop").write_text("")
        while not (marks / "off").exists():  # blocks the loop on purpose, as above
            time.sleep(0.05)  # noqa: ASYNC251
        await stop(self)

    ClusterStats.reset = marked_reset  # type: ignore[method-assign]
    PodTracker.stop = marked_stop  # type: ignore[method-assign]
    r = run_e2e_bench(E2EConfig(nodes=nodes, pods=pods, pod_scheduling_gate=gated))
    print(json.dumps({"completed": r["completed"], "api_writes": r["api_writes"]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--gated", action="store_true", help="pods created with Grove's scheduling gate")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inner:
        inner(a.nodes, a.pods, a.gated, Path(a.inner))
        return
    instructions, result = count_window(__file__, [
        "--nodes", str(a.nodes), "--pods", str(a.pods), *(["--gated"] if a.gated else [])])
    print(json.dumps({"nodes": a.nodes, "pods": a.pods, "gated": a.gated,
                      "instructions": instructions, **result}))


if __name__ == "__main__":
    main()
