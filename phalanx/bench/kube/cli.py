"""`phalanx bench kube`, on the `bench` group (imported by phalanx/bench/cli.py); heavy
modules load inside the command so `phalanx --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.bench.cli import _duration, _write
from phalanx.cli.bench import DEFAULT_OUT, bench_app
from phalanx.cli.errors import UserError

from .config import SCHEDULERS, WORKLOADS, KubeBenchConfig, parse_names, result_name

H_NODES = "Fake Nodes on the API server (8 GPUs, 128 cpu, 2Ti each), shared by both schedulers."
H_PLAIN = "Pods of the 'plain' workload (no gang)."
H_GANG = "Pods of the 'gangs' workload, in gangs of --gang-min..--gang-max."
H_GPUS = "GPUs each pod asks for (with 1 cpu, 4Gi)."
H_QPS = ("Client QPS given to both schedulers (equal limits; 5000 is what kube-scheduler's "
         "scheduler_perf gives it).")
H_BURST = "Client burst given to both schedulers."
H_OWN = ("Give each scheduler its shipped client limits instead (kube-scheduler 50/100, "
         "phalanx 100/150).")
H_SCHED = "Schedulers to run, comma-separated, in this order."
H_WORK = "Workloads to run, comma-separated: plain, gangs."
H_PAIRS = ("Pairs of runs: each workload by each scheduler once per pair, the order alternating "
           "(kube-scheduler first, then phalanx first); ratios are taken within a pair and "
           "reported as median and range.")
H_SEED = "Seed of the gang sizes (the same for both schedulers)."
H_TIMEOUT = "How long one scheduler may take to bind one workload."
H_BACKGROUND = ("Idle window before the runs that measures the API server's own requests "
                "(leases, endpoints).")
H_ARGS = "More flags for `phalanx scheduler`, as one string (e.g. '--no-tune-gc')."
H_PROFILE = ("Run phalanx scheduler under cProfile, in CPU time (slower; the top functions go "
             "next to the JSON).")
H_KEEP = "Keep the control plane's work folder (logs) afterwards."


@bench_app.command("kube")
def kube(
    nodes: Annotated[int, typer.Option(min=1, help=H_NODES)] = 1000,
    plain_pods: Annotated[int, typer.Option(min=0, help=H_PLAIN)] = 2000,
    gang_pods: Annotated[int, typer.Option(min=0, help=H_GANG)] = 2000,
    gang_min: Annotated[int, typer.Option(min=1, help="Smallest gang.")] = 8,
    gang_max: Annotated[int, typer.Option(min=1, help="Largest gang.")] = 64,
    pod_gpus: Annotated[int, typer.Option(min=0, max=8, help=H_GPUS)] = 1,
    qps: Annotated[float, typer.Option(min=0.001, help=H_QPS)] = 5000.0,
    burst: Annotated[int, typer.Option(min=1, help=H_BURST)] = 5000,
    own_defaults: Annotated[bool, typer.Option(help=H_OWN)] = False,
    schedulers: Annotated[str, typer.Option(help=H_SCHED)] = "kube-scheduler,phalanx-scheduler",
    workloads: Annotated[str, typer.Option(help=H_WORK)] = "plain,gangs",
    seed: Annotated[int, typer.Option(help=H_SEED)] = 0,
    pairs: Annotated[int, typer.Option(min=1, help=H_PAIRS)] = 3,
    phase_timeout: Annotated[str, typer.Option(help=H_TIMEOUT)] = "10m",
    background: Annotated[str, typer.Option(help=H_BACKGROUND)] = "10s",
    phalanx_args: Annotated[str, typer.Option(help=H_ARGS)] = "",
    profile: Annotated[bool, typer.Option(help=H_PROFILE)] = False,
    keep: Annotated[bool, typer.Option(help=H_KEEP)] = False,
    out: Annotated[Path, typer.Option(help="Directory for the JSON results.")] = DEFAULT_OUT,
) -> None:
    """kube-scheduler 1.36 and `phalanx scheduler` side by side on one real kube-apiserver.

    Starts etcd and kube-apiserver (binaries: KUBEBUILDER_ASSETS or ../shared/kube), creates
    the fake nodes, then, --pairs times in alternating order, for each workload lets each
    scheduler bind the same pods (created before it starts), through its own gang API.
    Headline: pods/s from the scheduler's start (every pod exists) until every pod is bound
    and the scheduler's own API writes, Events included, are finished (audit log); beside it
    pods/s over the binds only, CPU and API requests per pod, gang time-to-bound, placement
    spread, and the ratio phalanx/kube-scheduler (median and range over the pairs). Stops
    everything it started, also on Ctrl-C."""
    import shlex
    import tempfile

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from phalanx.envtest import BinariesNotFound

    from .phase import Progress as Callbacks
    from .report import rich_tables
    from .runner import run_kube_bench

    try:
        cfg = KubeBenchConfig(
            nodes=nodes, plain_pods=plain_pods, gang_pods=gang_pods, gang_min=gang_min,
            gang_max=gang_max, pod_gpus=pod_gpus, qps=qps, burst=burst,
            own_defaults=own_defaults,
            schedulers=parse_names(schedulers, SCHEDULERS, "schedulers"),
            workloads=parse_names(workloads, WORKLOADS, "workloads"), seed=seed, pairs=pairs,
            phase_timeout=_duration(phase_timeout, "--phase-timeout"),
            background_seconds=_duration(background, "--background"), profile=profile,
            phalanx_args=tuple(shlex.split(phalanx_args)))
        cfg.validate()
    except ValueError as e:
        raise UserError(str(e)) from None
    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=True)
    task = bar.add_task("", total=1)
    callbacks = Callbacks(
        phase=lambda description, total: bar.reset(task, description=description, total=total),
        advance=lambda completed: bar.update(task, completed=completed))
    profile_dir = Path(tempfile.mkdtemp(prefix="phalanx-bench-profile-")) if profile else None
    name = result_name(cfg, phalanx_args)
    try:
        with bar:
            result = run_kube_bench(cfg, callbacks, profile_dir=profile_dir, keep=keep,
                                    on_pair=lambda so_far: _write(so_far, out, name))
    except BinariesNotFound as e:
        raise UserError(str(e)) from None
    except (TimeoutError, RuntimeError) as e:
        raise UserError(f"bench failed: {e}") from None
    except KeyboardInterrupt:
        console.print("interrupted: every process the bench started is stopped")
        raise typer.Exit(130) from None
    path = _write(result, out, name)
    if profile_dir is not None:
        from .profiling import summarize_profiles

        path.with_suffix(".profile.txt").write_text(summarize_profiles(profile_dir))
    table_console = Console()
    if not table_console.is_terminal:  # a log or a pipe: no wrapped, truncated columns
        table_console = Console(width=240)
    for table in rich_tables(result):
        table_console.print(table)
    typer.echo(f"load average {result['load_average_start'][0]:.2f} -> "
               f"{result['load_average_end'][0]:.2f} on {result['machine']['cpus']} CPUs; "
               f"wrote {path}")
