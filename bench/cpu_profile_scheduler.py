"""Where `phalanx bench scheduler`'s CPU goes, sampled on the process's CPU clock.

`phalanx bench scheduler --profile` (pyinstrument) samples wall time. On a machine shared with
other work, the time the process spends waiting for a CPU then lands on whatever line it was
preempted at, mostly system calls and page faults (`time.process_time`, `call_later` when the
timer heap grows), so its report overstates those. Here SIGPROF fires every `--interval` of the
process's own CPU time (setitimer ITIMER_PROF), from the first scheduling cycle to the end of
the run: samples are proportional to CPU spent, however busy the machine. A garbage-collection
pause is charged to the line that allocated when it started (`gc_cpu_seconds_scheduling` in
the result has the collector's total).

    python bench/cpu_profile_scheduler.py --nodes 5000 --pods 50000 [--spread 0.333] \
        [--no-service-gc] --out bench/results/scheduler-5000n-50000p-cpu-profile.json

The collector runs as in `phalanx bench scheduler` (the services' settings) unless
`--no-service-gc`.

The JSON has the bench's own result, the sample count, and per function (file:name) the
samples where it was running (self) and where it was on the stack (cumulative).
"""

from __future__ import annotations

import argparse
import collections
import json
import signal
from pathlib import Path
from types import CodeType, FrameType


def _where(code: CodeType) -> str:
    name = code.co_filename
    for marker in ("/site-packages/", "/phalanx/", "/lib/python3"):
        if marker in name:
            name = name[name.index(marker) + 1:]
            break
    return f"{name}:{code.co_name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--spread", type=float, default=0.0)
    parser.add_argument("--interval", type=float, default=0.002, help="CPU seconds between samples")
    parser.add_argument("--service-gc", action=argparse.BooleanOptionalAction, default=True,
                        help="the collector settings `phalanx bench scheduler` measures with by "
                             "default (the services'); --no-service-gc: CPython's")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from phalanx.scheduler import bench
    from phalanx.services.gctune import SERVICE_THRESHOLDS

    own: collections.Counter[str] = collections.Counter()
    cumulative: collections.Counter[str] = collections.Counter()
    state = {"on": False, "samples": 0}

    def sample(signum: int, frame: FrameType | None) -> None:
        if not state["on"] or frame is None:
            return
        state["samples"] += 1
        own[_where(frame.f_code)] += 1
        seen: set[str] = set()
        f: FrameType | None = frame
        while f is not None:
            key = _where(f.f_code)
            if key not in seen:
                seen.add(key)
                cumulative[key] += 1
            f = f.f_back

    # Sampling starts with the first scheduling cycle (the bench's own window start).
    pre_filter = bench.BenchRecorder.pre_filter

    def first_cycle(self, state_, pod, snap):  # type: ignore[no-untyped-def]
        state["on"] = True
        return pre_filter(self, state_, pod, snap)

    bench.BenchRecorder.pre_filter = first_cycle  # type: ignore[method-assign]
    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, args.interval, args.interval)
    try:
        result = bench.run_scheduler_bench(bench.BenchConfig(
            nodes=args.nodes, pods=args.pods, spread_fraction=args.spread,
            gc_freeze=args.service_gc,
            gc_thresholds=SERVICE_THRESHOLDS if args.service_gc else None))
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        bench.BenchRecorder.pre_filter = pre_filter  # type: ignore[method-assign]
    keep = ("pods_bound", "pods_per_second", "pods_per_second_uncontended", "cpu_us_per_pod",
            "cycle_cpu_us_per_attempt", "schedule_seconds", "on_cpu_seconds", "runqueue_wait_seconds",
            "gc_seconds_scheduling", "gc_cpu_seconds_scheduling", "attempts", "failures",
            "loadavg_before_after", "config")
    out = {"benchmark": "scheduler-cpu-profile", "interval_cpu_seconds": args.interval,
           "samples": state["samples"], "result": {k: result.get(k) for k in keep},
           "self": own.most_common(80), "cumulative": cumulative.most_common(200)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"samples": state["samples"], "pods_per_second": result["pods_per_second"],
                      "cpu_us_per_pod": result["cpu_us_per_pod"], "out": str(args.out)}))


if __name__ == "__main__":
    main()
