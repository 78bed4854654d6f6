"""`phalanx bench kubediff`, on the `bench` group (imported by phalanx/cli/bench.py); heavy
modules load inside the command so `phalanx --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.bench import DEFAULT_OUT, bench_app
from phalanx.cli.errors import UserError

H_CASES = "Cases to run (seeds --seed, --seed + 1, ...)."
H_SEED = "Seed of the first case; a case's seed alone reproduces it (with the same --features)."
H_FEATURES = ("Features the cases may use, comma-separated (resources, taints, unschedulable, "
              "node_affinity, pod_affinity, preferred, spread, host_ports, volumes, "
              "match_label_keys), 'all', or 'auto': the ones phalanx-scheduler implements.")
H_OUTPUT = "JSON report (default: bench/results/kubediff-CASES.json)."
H_TIMEOUT = "How long a scheduler may take to place one pod."
H_CHECK = "Exit with code 1 when any case disagrees."
H_KEEP = "Keep the control plane's work folder (logs) afterwards."


@bench_app.command("kubediff")
def kubediff(
    cases: Annotated[int, typer.Option(min=1, help=H_CASES)] = 100,
    seed: Annotated[int, typer.Option(help=H_SEED)] = 0,
    features: Annotated[str, typer.Option(help=H_FEATURES)] = "auto",
    # --out as every other bench command; --output kept as an alias.
    output: Annotated[Path | None, typer.Option("--out", "--output", help=H_OUTPUT)] = None,
    timeout: Annotated[str, typer.Option(help=H_TIMEOUT)] = "20s",
    check: Annotated[bool, typer.Option(help=H_CHECK)] = False,
    keep: Annotated[bool, typer.Option(help=H_KEEP)] = False,
) -> None:
    """Place seeded random pods with kube-scheduler 1.36 and with phalanx-scheduler on one
    real API server, and compare: schedulable or not, and the per-reason node counts of
    `0/N nodes are available: ...`; phalanx's chosen node is re-checked by kube-scheduler.

    Starts etcd, kube-apiserver and kube-scheduler (binaries: KUBEBUILDER_ASSETS or
    ../shared/kube) and stops them at the end, also on Ctrl-C."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from phalanx.bench.cli import _duration
    from phalanx.envtest import BinariesNotFound

    from .features import parse_features
    from .report import summary_lines, write_report
    from .session import KubeDiffConfig, run_kubediff

    try:
        wanted = parse_features(features)
    except ValueError as e:
        raise UserError(f"--features: {e}") from None
    cfg = KubeDiffConfig(cases=cases, seed=seed, features=wanted,
                         timeout=_duration(timeout, "--timeout"), keep=keep)
    try:
        cfg.validate()
    except ValueError as e:
        raise UserError(str(e)) from None
    path = output or DEFAULT_OUT / f"kubediff-{cases}.json"
    if path.is_dir():
        raise UserError(f"--out: {path} is a directory; give a file name such as "
                        f"{path / f'kubediff-{cases}.json'}")
    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=True)
    task = bar.add_task("kubediff", total=cases)
    tally = {"agree": 0, "disagree": 0}

    def on_case(run: object) -> None:
        tally["agree" if getattr(run, "agrees", False) else "disagree"] += 1
        bar.update(task, advance=1, description=f"kubediff: {tally['agree']} agree, "
                                                f"{tally['disagree']} disagree")

    try:
        with bar:
            report = run_kubediff(cfg, on_case)
    except BinariesNotFound as e:
        raise UserError(str(e)) from None
    except (TimeoutError, RuntimeError) as e:
        raise UserError(f"kubediff failed: {e}") from None
    except KeyboardInterrupt:
        console.print("interrupted: every process kubediff started is stopped")
        raise typer.Exit(130) from None
    try:
        write_report(report, path)
    except OSError as e:
        raise UserError(f"--out: cannot write {path}: {e.strerror or e}") from None
    for line in summary_lines(report):
        typer.echo(line)
    typer.echo(f"wrote {path}")
    if check and report["summary"]["agree"] != report["cases"]:
        raise typer.Exit(1)
