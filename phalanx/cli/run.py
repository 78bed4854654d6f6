"""`phalanx run WORKLOAD.yaml`: the workload on an embedded, simulated cluster, end to end."""

from __future__ import annotations

import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from phalanx.cli.app import app
from phalanx.cli.errors import UserError, err_console


class Output(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def _parse_until(text: str) -> float | None:
    if text.strip().lower() == "settled":
        return None
    from phalanx.api.duration import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as e:
        raise UserError(f"--until: {e}, or 'settled'") from None
    if seconds <= 0:
        raise UserError("--until: must be a positive duration, or 'settled'")
    return seconds


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("phalanx")
    except PackageNotFoundError:
        return "dev"


class _Progress:
    """A transient bar on virtual time, redrawn from the event loop (no refresh thread:
    the embedded cluster runs without threads)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]simulating[/bold]"), BarColumn(), TextColumn("{task.description}"),
            TimeElapsedColumn(), console=console, transient=True, auto_refresh=False,
        )
        self._task = self._progress.add_task("t=0s", total=None)
        self._last = 0.0

    def __enter__(self) -> _Progress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, t: float, total: float | None) -> None:
        now = time.monotonic()
        if now - self._last < 0.08:
            return
        self._last = now
        from phalanx.report.format import fmt_duration

        label = f"t={fmt_duration(t)}" + (f" of {fmt_duration(total)}" if total else "")
        self._progress.update(self._task, completed=t, total=total, description=label)
        self._progress.refresh()


@app.command("run")
def run(
    workload: Annotated[list[Path], typer.Argument(
        help="Workload YAML files: PodCliqueSets, PriorityClasses, ClusterTopology, and "
             "optionally a Scenario (steps at virtual times) and a ClusterSpec.",
        show_default=False)],
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", "-c", help="ClusterSpec YAML (node pools, topology). Default: 64 nodes x "
                                "8 GPUs in 8 racks.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="OperatorConfiguration YAML (scheduler backend profiles). Default: "
                         "every backend enabled, phalanx-scheduler for pods naming none.")] = None,
    until: Annotated[str, typer.Option(
        help="'settled' (nothing left to happen) or a virtual duration such as 30m.")
    ] = "settled",
    report: Annotated[Path | None, typer.Option(
        "--report", help="Write a self-contained HTML report (plots and tables) here.")] = None,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="table for people; json or yaml for scripts.")] = Output.table,
    save: Annotated[Path, typer.Option(
        "--save", help="Where to save the run for `phalanx explain` and reports.")
    ] = Path(".phalanx/last-run.json"),
    no_save: Annotated[bool, typer.Option("--no-save", help="Do not save the run.")] = False,
    max_duration: Annotated[str, typer.Option(
        help="With --until settled: give up after this much virtual time.")] = "24h",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    fail_on_pending: Annotated[bool, typer.Option(
        "--fail-on-pending",
        help="Exit with code 3 when PodGangs are still pending at the end of the run (say, "
             "a gang the cluster can never hold). Without it such gangs are reported as "
             "pending, with the reason, and the run exits 0.")] = False,
) -> None:
    """Run a workload on an embedded, simulated cluster and show what happened.

    Starts an in-process cluster with simulated GPU nodes, the operator (with the configured
    scheduler backends), the Phalanx scheduler and simulated kubelets; applies WORKLOAD;
    runs on virtual time until everything settled (or --until); then prints the
    PodCliqueSets, PodGangs (placement, topology domain, time to schedule), pending gangs
    with the reason, and the Events that matter.
    """
    from phalanx.api.duration import parse_duration
    from phalanx.report.terminal import machine_output, print_tables
    from phalanx.sim.record import save_record, write_atomic
    from phalanx.sim.runner import RunFailed, RunOptions, Simulation
    from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

    from phalanx.cluster.clock import run_virtual

    until_s = _parse_until(until)
    try:
        cap = parse_duration(max_duration)
    except ValueError as e:
        raise UserError(f"--max-duration: {e}") from None
    if report is not None and report.is_dir():
        raise UserError(f"--report: {report} is a directory; give a file name such as "
                        "report.html")
    wl = load_workload(list(workload))
    spec, spec_source = load_cluster_spec(cluster, wl)
    cfg, cfg_source = load_config(config, wl)
    options = RunOptions(until=until_s, max_duration=cap, phalanx_version=_version())
    # Like kubectl, never wrap table rows when piped; use the terminal's width otherwise.
    out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    show_progress = not quiet and output == Output.table and sys.stderr.isatty()
    sim = Simulation(wl, spec, cfg, options, cluster_source=spec_source,
                     config_source=cfg_source)
    try:
        if show_progress:
            with _Progress(err_console) as bar:
                sim.progress = bar
                record = run_virtual(sim.run())
        else:
            record = run_virtual(sim.run())
    except RunFailed as e:
        err_console.print(f"[bold red]error:[/bold red] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(RunFailed.exit_code) from None
    # Everything rendered before anything is written: a failure leaves no partial files.
    page = None
    if report is not None:
        from phalanx.report.html import render_html  # matplotlib: only when asked for

        page = render_html(record)
    if not no_save:
        save_record(record, save)
    if report is not None and page is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(report, page)
    if output == Output.table:
        print_tables(record, out)
        notes = []
        if report is not None:
            notes.append(f"report: {report}")
        if not no_save:
            notes.append(f"saved run: {save} (phalanx explain podgang NAME)")
        if notes:
            out.print("[dim]" + escape("; ".join(notes)) + "[/dim]")
    else:
        sys.stdout.write(machine_output(record, output.value))
    if not record.meta.settled and until_s is None:
        err_console.print(f"[yellow]warning:[/yellow] the run did not settle within "
                          f"{max_duration} of virtual time; results are as of then "
                          "(see --until / --max-duration)")
    if fail_on_pending:
        from phalanx.report.summary import summarize

        pending = summarize(record, event_limit=0).pending
        if pending:
            names = ", ".join(f"{p.name} ({p.explanation})" for p in pending)
            err_console.print(f"[bold red]error:[/bold red] {len(pending)} PodGang(s) still "
                              f"pending at the end of the run (--fail-on-pending): {escape(names)}",
                              soft_wrap=True)
            raise typer.Exit(RunFailed.exit_code)
