"""`phalanx bench e2e | trace | trace-gen`: the whole-stack benchmarks, on the `bench` group.

Imported by phalanx/cli/bench.py once `bench_app` exists; heavy modules load inside the
commands so `phalanx --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from phalanx.cli.bench import DEFAULT_OUT, bench_app, require_profiler
from phalanx.cli.errors import UserError


def _duration(text: str, flag: str) -> float:
    from phalanx.api.duration import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as e:
        raise UserError(f"{flag}: {e}") from None
    if seconds < 0:
        raise UserError(f"{flag}: must not be negative, got {text!r}")
    return seconds


def _write(result: dict[str, Any], out: Path, name: str) -> Path:
    from phalanx.bench.results import write_result

    try:
        return write_result(result, out, name)
    except OSError as e:
        raise UserError(f"--out: cannot write results to {out}: {e.strerror or e}") from None


@bench_app.command("e2e")
def e2e(
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (8 GPUs, 128 cpu, 2Ti each).")] = 5000,
    pods: Annotated[int, typer.Option(min=1, help="Pods in total (rounded down to whole PodCliqueSets).")] = 10_000,
    pods_per_pcs: Annotated[int, typer.Option(min=1, help="Pods per PodCliqueSet (one gang each).")] = 8,
    gpus_per_pod: Annotated[int, typer.Option(min=0, max=8, help="GPUs each pod asks for.")] = 1,
    schedulers: Annotated[str, typer.Option(help="schedulerName of the pods, comma-separated names "
                                            "(round-robin over PodCliqueSets), or 'all'.")] = "phalanx-scheduler",
    start_delay: Annotated[str, typer.Option(help="Simulated kubelet: bound to Running (virtual).")] = "0s",
    events: Annotated[bool, typer.Option(help="Scheduler writes Scheduled/FailedScheduling Events.")] = True,
    tune_gc: Annotated[bool, typer.Option(help="Freeze startup objects, collect less often (see "
                                          "phalanx/services/gctune.py), as `phalanx run` does.")] = True,
    profile: Annotated[bool, typer.Option(help="Run under pyinstrument; write the profile next to the JSON.")] = False,
    pod_scheduling_gate: Annotated[bool, typer.Option(help="Create pods with Grove's scheduling gate "
                                                      "(--no-pod-scheduling-gate: phalanx-scheduler "
                                                      "holds them instead).")] = True,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """Create PodCliqueSets back to back on the embedded stack (operator + scheduler +
    simulated kubelets) and time, in wall-clock seconds, until every pod is bound and Running."""
    from phalanx.bench.e2e import E2EConfig, run_e2e_bench

    if pods < pods_per_pcs:
        raise UserError(f"--pods ({pods}) must be at least --pods-per-pcs ({pods_per_pcs})")
    require_profiler(profile)
    cfg = E2EConfig(nodes=nodes, pods=pods, pods_per_pcs=pods_per_pcs, gpus_per_pod=gpus_per_pod,
                    schedulers=schedulers, start_delay=_duration(start_delay, "--start-delay"),
                    events=events, tune_gc=tune_gc, profile=profile,
                    pod_scheduling_gate=pod_scheduling_gate)
    try:
        cfg.scheduler_names()
    except ValueError as e:
        raise UserError(f"--{e}") from None
    n_pcs = pods // pods_per_pcs
    typer.echo(f"end to end: {n_pcs} PodCliqueSets x {pods_per_pcs} pods on {nodes} nodes ...")
    r = run_e2e_bench(cfg)
    variant = "" if schedulers == "phalanx-scheduler" else "-" + schedulers.replace(",", "+")
    variant += "" if tune_gc else "-default-gc"
    variant += "" if pod_scheduling_gate else "-gate-free"
    path = _write(r, out, f"e2e-{nodes}n-{r['pods']}p{variant}")
    if not r["completed"]:
        s = r["final_state"]
        raise UserError(f"not every pod ran: {s['running']}/{r['pods']} Running, {s['bound']} bound, "
                        f"{s['pods']} created (results in {path})")
    lat = r["pcs_create_to_running_seconds"]
    typer.echo(
        f"  all {r['pods']} pods created {r['all_pods_created_seconds']:.2f}s, bound "
        f"{r['all_pods_bound_seconds']:.2f}s, Running {r['all_pods_running_seconds']:.2f}s (wall)\n"
        f"  {r['podcliquesets_per_second']:.1f} PodCliqueSets/s, {r['pods_per_second_to_running']:.0f} pods/s; "
        f"PodCliqueSet create->Running p50 {lat['p50']:.2f}s p99 {lat['p99']:.2f}s\n"
        f"  {r['api_writes_per_pod']:.2f} API writes/pod ({r['operator_writes_per_pod']:.2f} by the "
        f"operator, Events aside); CPU {r['cpu_seconds']:.1f}s "
        f"({r['cpu_us_per_pod']:.0f} us/pod); peak RSS {r['peak_rss_mb']:.0f} MB; "
        f"load {r['load_average_1m'][0]:.1f}->{r['load_average_1m'][1]:.1f}\n"
        f"  wrote {path}"
    )
    if profile:
        typer.echo(f"  profile: {path.with_suffix('.profile.txt')}")


@bench_app.command("trace")
def trace(
    trace_file: Annotated[Path, typer.Argument(help="CSV: job_id, submit_time, gang_size, "
                                               "gpus_per_pod, duration (seconds).", show_default=False)],
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (8 GPUs each).")] = 64,
    start_delay: Annotated[str, typer.Option(help="Simulated kubelet: bound to Running (virtual).")] = "5s",
    scheduler: Annotated[str, typer.Option(help="schedulerName of every job's pods.")] = "phalanx-scheduler",
    max_duration: Annotated[str, typer.Option(help="Stop after this much virtual time.")] = "720h",
    scoring: Annotated[str, typer.Option(help="NodeResourcesFit scoring: MostAllocated (default, GPU "
                                         "bin-packing) or LeastAllocated (spread, kube-scheduler's default).")] = "MostAllocated",
    reservation: Annotated[bool, typer.Option(help="GangReservation: the longest-waiting gang reserves "
                                              "room, others backfill around it.")] = True,
    label: Annotated[str, typer.Option(help="Suffix for the result file name (to keep runs apart).")] = "",
    queues: Annotated[Path | None, typer.Option(help="YAML of KAI Queues (scheduling.run.ai/v2) for "
                                                "the trace's `queue` column: created first, jobs "
                                                "run in theirs.", show_default=False)] = None,
    pairs: Annotated[int, typer.Option(min=0, help="With --queues: run the trace this many times "
                                       "with the queues and without them, alternating, and report "
                                       "each queue's share against its fair share side by side "
                                       "(0: one run with the queues).")] = 0,
    ignore_queues: Annotated[bool, typer.Option(help="Replay a trace with a `queue` column "
                                                "without any queues.")] = False,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """Replay a trace of job arrivals on the virtual clock through the whole stack; report GPU
    utilisation, queueing delay (also per gang size), fragmentation and throughput; with
    --queues, each queue's share of the GPUs against its fair share and reclaim evictions."""
    from phalanx.bench.replay import ReplayConfig, replay_trace
    from phalanx.bench.trace import TraceError, load_trace
    from phalanx.bench.workload import ALL_SCHEDULERS

    if scheduler not in ALL_SCHEDULERS:
        raise UserError(f"--scheduler: unknown {scheduler!r}; use one of {', '.join(ALL_SCHEDULERS)}")
    try:
        jobs = load_trace(trace_file)
    except TraceError as e:
        raise UserError(str(e)) from None
    if scoring not in ("MostAllocated", "LeastAllocated"):
        raise UserError(f"--scoring: unknown {scoring!r}; use MostAllocated or LeastAllocated")
    cfg = ReplayConfig(nodes=nodes, start_delay=_duration(start_delay, "--start-delay"),
                       scheduler=scheduler, max_duration=_duration(max_duration, "--max-duration"),
                       scoring=scoring, reservation=reservation)
    named = sorted({j.queue for j in jobs if j.queue})
    if queues is None and named and not ignore_queues:
        raise UserError(f"{trace_file} names queues ({', '.join(named[:5])}): give their Queue "
                        "objects with --queues FILE, or --ignore-queues to replay without queues")
    if queues is None and pairs:
        raise UserError("--pairs compares runs with and without queues: give --queues FILE")
    if queues is not None:
        _trace_with_queues(jobs, cfg, trace_file, queues, pairs, label, out)
        return
    typer.echo(f"replaying {len(jobs)} jobs from {trace_file} on {nodes} nodes ({nodes * 8} GPUs) ...")
    r = replay_trace(jobs, cfg)
    path = _write(r, out, f"trace-{trace_file.stem}-{nodes}n" + (f"-{label}" if label else ""))
    q = r["queueing_delay_seconds"]
    skipped = r["skipped_never_fit"]
    typer.echo(
        f"  {r['jobs_finished']}/{r['jobs_replayed']} jobs finished in {r['makespan_seconds'] / 3600:.1f}h "
        f"(virtual) = {r['wall_seconds']:.1f}s wall\n"
        f"  GPU utilisation {r['gpu_utilisation']:.1%}; queueing delay p50 {q['p50']:.0f}s, "
        f"p90 {q['p90']:.0f}s, p99 {q['p99']:.0f}s, mean {q['mean']:.0f}s\n"
        f"  largest gangs ({r['largest_gang_class']} pods) wait p99 {r['largest_gang_class_wait_p99_seconds'] or 0:.0f}s; "
        f"stranded free GPUs {r['stranded_free_gpu_share']:.1%}\n"
        f"  throughput {r['throughput_jobs_per_hour']:.1f} jobs/h, {r['throughput_pods_per_hour']:.0f} pods/h\n"
        f"  {r['jobs_blocked_for_room']} jobs blocked for room: room freed -> bound p50 "
        f"{r['room_freed_to_bound_seconds']['p50']:.1f}s, p99 {r['room_freed_to_bound_seconds']['p99']:.1f}s"
        + (f"\n  skipped {len(skipped)} job(s) that can never fit: {', '.join(skipped[:5])}" if skipped else "")
        + f"\n  wrote {path}"
    )


def _trace_with_queues(jobs: list[Any], cfg: Any, trace_file: Path, queues: Path, pairs: int,
                       label: str, out: Path) -> None:
    from phalanx.bench.queuetrace import QueueFileError, compare, load_queue_file, run_one

    try:
        docs = load_queue_file(queues, jobs)
    except QueueFileError as e:
        raise UserError(str(e)) from None
    stem = f"trace-{trace_file.stem}-{cfg.nodes}n-queues" + (f"-{label}" if label else "")
    names = ", ".join(d["metadata"]["name"] for d in docs)
    if not pairs:
        typer.echo(f"replaying {len(jobs)} jobs from {trace_file} on {cfg.nodes} nodes "
                   f"({cfg.nodes * 8} GPUs) in queues {names} ...")
        r = run_one(jobs, cfg, docs, True)
        path = _write(r, out, stem)
        typer.echo(_queue_lines(r) + f"\n  wrote {path}")
        return
    typer.echo(f"replaying {len(jobs)} jobs from {trace_file} on {cfg.nodes} nodes, {pairs} "
               f"pair(s) with queues ({names}) and without, alternating ...")
    r = compare(jobs, cfg, docs, pairs, progress=lambda m: typer.echo(f"  {m}"))
    path = _write(r, out, f"{stem}-{pairs}pairs")
    table = [("", "with queues", "without")]
    rows = (("GPU utilisation", "gpu_utilisation", "{:.1%}"),
            ("largest shortfall (share of the cluster)", "largest_shortfall", "{:.1%}"),
            ("worst time >10% under fair share, waiting", "time_over_10pct_under_worst", "{:.1%}"),
            ("  ... while a waiting job fits its share", "time_over_10pct_under_job_fits_worst",
             "{:.1%}"),
            ("reclaim evictions (pods)", "reclaim_evicted_pods", "{:.0f}"),
            ("job restarts", "job_restarts", "{:.0f}"),
            ("largest gangs' wait p99 (s)", "largest_gang_class_wait_p99_seconds", "{:.0f}"),
            ("wall (s)", "wall_seconds", "{:.1f}"))
    summary = r["summary"]
    for title, key, fmt in rows:
        cells = []
        for side in ("with_queues", "without_queues"):
            v = summary[side].get(key)
            cells.append("-" if v is None else fmt.format(v["median"]) +
                         ("" if v["min"] == v["max"] else
                          f" ({fmt.format(v['min'])}-{fmt.format(v['max'])})"))
        table.append((title, *cells))
    width = max(len(t[0]) for t in table)
    for t in table:
        typer.echo(f"  {t[0]:<{width}}  {t[1]:>22}  {t[2]:>22}")
    for name, q in summary["with_queues"]["queues"].items():
        w = summary["without_queues"]["queues"].get(name, {})
        typer.echo(f"  {name}: held {q['mean_share']:.1%} of the GPUs against a fair share of "
                   f"{q['mean_fair_share']:.1%} (without queues {w.get('mean_share', 0):.1%} "
                   f"against {w.get('mean_fair_share', 0):.1%}); >10% under for "
                   f"{q['time_over_10pct_under']:.0%} of its waiting time "
                   f"(without: {w.get('time_over_10pct_under', 0):.0%}), "
                   f"{q['time_over_10pct_under_job_fits']:.0%} while a waiting job fitted its "
                   f"share (without: {w.get('time_over_10pct_under_job_fits', 0):.0%})")
    typer.echo(f"  medians of {pairs} pair(s), ranges in brackets; wrote {path}")


def _queue_lines(r: dict[str, Any]) -> str:
    lines = [f"  {r['jobs_finished']}/{r['jobs_replayed']} jobs finished in "
             f"{r['makespan_seconds'] / 3600:.1f}h (virtual) = {r['wall_seconds']:.1f}s wall; "
             f"GPU utilisation {r['gpu_utilisation']:.1%}",
             f"  reclaim evicted {r['reclaim_evicted_pods']} pod(s), preemption "
             f"{r['preemption_evicted_pods']}; {r['job_restarts']} job restart(s); largest gangs "
             f"wait p99 {r['largest_gang_class_wait_p99_seconds'] or 0:.0f}s"]
    for name, q in r["queues"].items():
        lines.append(f"  {name}: held {q['mean_share']:.1%} of the GPUs, fair share "
                     f"{q['mean_fair_share']:.1%}; largest shortfall {q['largest_shortfall']:.1%}; "
                     f">10% under for {q['time_over_10pct_under']:.0%} of {q['waiting_hours']:.1f}h "
                     f"waiting ({q['time_over_10pct_under_job_fits']:.0%} while a waiting job "
                     "fitted its share)")
    return "\n".join(lines)


@bench_app.command("trace-gen")
def trace_gen(
    output: Annotated[Path, typer.Argument(help="CSV file to write.", show_default=False)],
    jobs: Annotated[int, typer.Option(min=1, help="Jobs in the trace.")] = 200,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (8 GPUs each) the trace is sized for.")] = 64,
    load: Annotated[float, typer.Option(min=0.01, max=10.0, help="Offered load: GPU-seconds asked "
                                        "per second over the cluster's GPUs.")] = 0.9,
    seed: Annotated[int, typer.Option(help="Same seed, same trace.")] = 0,
    queues: Annotated[int, typer.Option(min=0, max=26, help="Tenants: split the jobs among this "
                                        "many KAI queues (team-a, team-b, ...) with uneven quotas "
                                        "and bursty arrivals, and write their Queues next to the "
                                        "trace as <name>-queues.yaml (0: one tenant).")] = 0,
    max_gang_gpus: Annotated[int | None, typer.Option(min=1, help="The most GPUs one gang asks "
                                                      "for; larger gangs are halved until they "
                                                      "fit (default: the whole cluster).",
                                                      show_default=False)] = None,
) -> None:
    """Write a synthetic trace: Poisson arrivals, mostly small gangs, log-normal run times;
    with --queues, several tenants arriving in bursts."""
    from phalanx.bench.tracegen import (
        TraceGenConfig,
        generate,
        queue_documents,
        write_queues,
        write_trace,
    )

    cfg = TraceGenConfig(jobs=jobs, nodes=nodes, load=load, seed=seed, queues=queues,
                         max_gang_gpus=max_gang_gpus)
    generated = generate(cfg)
    if output.is_dir():
        raise UserError(f"{output} is a directory; give a file name such as trace.csv")
    queue_file = output.with_name(f"{output.stem}-queues.yaml")
    try:
        write_trace(generated, output)
        if queues:
            write_queues(queue_documents(cfg), queue_file)
    except OSError as e:
        raise UserError(f"cannot write {output}: {e.strerror or e}") from None
    if queues:
        typer.echo(f"wrote {queue_file}: {queues} KAI Queues")
    span = generated[-1].submit_time
    gpu_hours = sum(j.gpus * j.duration for j in generated) / 3600
    typer.echo(f"wrote {output}: {len(generated)} jobs over {span / 3600:.1f}h, "
               f"{gpu_hours:.0f} GPU-hours asked, sized for {nodes} nodes at load {load:g}")



# kube-scheduler and phalanx scheduler on one real API server (phalanx/bench/kube/cli.py).
from phalanx.bench.kube import cli as _kube_cli  # noqa: E402,F401  (registers on bench_app)


@bench_app.command("rollout")
def rollout(
    replicas: Annotated[int, typer.Option(min=1, help="PodCliqueSet replicas (embedded: 7 pods "
                                          "each; --real: Grove's workload1, 10 pods each).")] = 100,
    nodes: Annotated[int, typer.Option(min=0, help="Nodes (embedded: 8-GPU nodes, 0: one per "
                                       "replica; --real: 0 means 30).")] = 0,
    repeat: Annotated[int, typer.Option(min=1, help="Runs; the JSON has their median and spread.")] = 3,
    real: Annotated[bool, typer.Option("--real", help="On kube-apiserver 1.36 with "
                                       "kube-controller-manager, the scheduler, `phalanx operator` "
                                       "and the stand-in kubelet, beside the floor.")] = False,
    scheduler: Annotated[str, typer.Option(help="--real: kube-scheduler or "
                                           "phalanx-scheduler.")] = "kube-scheduler",
    floor: Annotated[bool, typer.Option(help="--real: measure the floor in each run.")] = True,
    timeout: Annotated[str, typer.Option(help="--real: longest wait for one milestone.")] = "15m",
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """Roll a running many-replica PodCliqueSet to a new image (RollingRecreate); time the
    roll and count API writes per pod (issue 23). Embedded stack by default; with --real, on
    a real API server: pods replaced (each once, by the audit log), writes per pod by writer,
    operator CPU, and the floor (a minimal client replacing the same pods replica by replica)."""
    if real:
        _rollout_real(replicas, nodes or 30, repeat, scheduler, floor,
                      _duration(timeout, "--timeout"), out)
        return
    only_real = [flag for flag, used in (("--scheduler", scheduler != "kube-scheduler"),
                                         ("--no-floor", not floor), ("--timeout", timeout != "15m"))
                 if used]
    if only_real:
        raise UserError(f"{', '.join(only_real)}: only with --real (the embedded stack has "
                        "its own scheduler, no floor and no wall-clock waits)")
    from phalanx.bench.rollout import RolloutConfig, run_rollout_bench, summarize

    runs = [run_rollout_bench(RolloutConfig(replicas=replicas, nodes=nodes))
            for _ in range(repeat)]
    result = summarize(runs)
    path = _write(result, out, f"rollout-{replicas}r")
    typer.echo(f"{replicas} replicas, {result['pods']} pods: roll wall median "
               f"{result['wall_seconds']['median']:.2f}s (cpu {result['cpu_seconds']['median']:.2f}s), "
               f"{result['api_writes_per_pod']} API writes per pod -> {path}")


def _rollout_real(replicas: int, nodes: int, runs: int, scheduler: str, floor: bool,
                  timeout: float, out: Path) -> None:
    from phalanx.bench.rollout_real import (
        KUBE_SCHEDULER, PHALANX_SCHEDULER, RealRolloutConfig, run_real_rollout,
    )
    from phalanx.envtest import BinariesNotFound

    if scheduler not in (KUBE_SCHEDULER, PHALANX_SCHEDULER):
        raise UserError(f"--scheduler: {scheduler!r} is not kube-scheduler or phalanx-scheduler")
    cfg = RealRolloutConfig(replicas=replicas, runs=runs, nodes=nodes, scheduler=scheduler,
                            floor=floor, timeout=timeout)
    try:
        r = run_real_rollout(cfg, progress=lambda line: typer.echo(line, err=True))
    except BinariesNotFound as e:
        raise UserError(str(e)) from None
    except TimeoutError as e:
        raise UserError(f"the rollout did not complete: {e}") from None
    except KeyboardInterrupt:
        typer.echo("interrupted: every process the bench started is stopped", err=True)
        raise typer.Exit(130) from None
    variant = "" if scheduler == KUBE_SCHEDULER else "-phalanx-scheduler"
    path = _write(r, out, f"rollout-real-{replicas}r{variant}")
    w, spr = r["wall_seconds"], r["seconds_per_replica"]
    typer.echo(f"{replicas} replicas, {r['pods']} pods, {r['runs_count']} runs: roll median "
               f"{w['median']}s ({w['min']}-{w['max']}), {spr['median']}s a replica; "
               f"{r['pods_recreated_twice']} pods recreated twice; "
               f"{r['api_writes_per_pod']['median']} writes per pod; operator CPU "
               f"{r['operator_cpu_seconds']['median']}s")
    if "ratio_to_floor" in r:
        typer.echo(f"  floor median {r['floor_seconds']['median']}s; ratio to floor "
                   f"{r['ratio_to_floor']['median']} ({r['ratio_to_floor']['min']}-"
                   f"{r['ratio_to_floor']['max']})")
    typer.echo(f"  wrote {path}")
    tracebacks = [t for run in r["runs"] for t in run["tracebacks"]]
    typer.echo(f"  one at a time: {r['pcs_replicas_overlapping']} replica and "
               f"{r['group_replicas_overlapping']} scaling-group replica overlaps")
    if r["pods_recreated_twice"] or r["replacements_deleted"] or tracebacks or \
            r["pcs_replicas_overlapping"] or r["group_replicas_overlapping"]:
        raise UserError(f"the rollout did not complete cleanly (results in {path})")
