"""`phalanx run WORKLOAD.yaml`: the workload on an embedded, simulated cluster, end to end."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from phalanx.cli.app import app, version_text
from phalanx.cli.errors import EXIT_CODES_HELP, ExitCode, UserError, err_console, fail
from phalanx.cli.preflight import MAX_PODS_HELP

DEFAULT_SAVE = Path(".phalanx/last-run.json")
HISTORY_MAX_PODS = 10_000  # above: `get --at` answers from snapshots only (snapshotEvery)


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


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    workload: Annotated[list[Path], typer.Argument(
        help="Workload YAML files: PodCliqueSets, PriorityClasses, ClusterTopology, and "
             "optionally a Scenario (steps at virtual times) and a ClusterSpec.",
        show_default=False)],
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", help="ClusterSpec YAML (node pools, topology). Default: one in the "
                          "workload files, else 64 nodes x 8 GPUs in 8 racks.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="OperatorConfiguration YAML (scheduler backend profiles). "
                               "Default: one in the workload files, else every backend "
                               "enabled, phalanx-scheduler for pods naming none.")] = None,
    scheduler_config: Annotated[Path | None, typer.Option(
        "--scheduler-config", help="KubeSchedulerConfiguration YAML for the embedded "
        "scheduler (plugins, pluginConfig, backoff): each of its profiles replaces the "
        "embedded one of that schedulerName. Default: one in the workload files, else "
        "Phalanx's defaults.")] = None,
    until: Annotated[str, typer.Option(
        help="'settled' (nothing left to happen) or a virtual duration such as 30m.")
    ] = "settled",
    report: Annotated[Path | None, typer.Option(
        "--report", help="Write a self-contained HTML report (plots and tables) here.")] = None,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="table for people; json or yaml for scripts.")] = Output.table,
    save: Annotated[Path, typer.Option(
        "--save", help="Where to save the run for `phalanx get`, `describe` and `diff`.")
    ] = DEFAULT_SAVE,
    no_save: Annotated[bool, typer.Option("--no-save", help="Do not save the run.")] = False,
    max_duration: Annotated[str, typer.Option(
        help="With --until settled: give up after this much virtual time.")] = "24h",
    max_pods: Annotated[int, typer.Option("--max-pods", min=0, help=MAX_PODS_HELP)] = 50_000,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only check: admission of every object (as `phalanx validate`), "
                          "and the size of the work; nothing is run or written.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    fail_on_pending: Annotated[bool, typer.Option(
        "--fail-on-pending",
        help=f"Exit with code {int(ExitCode.PENDING)} when PodGangs are still pending at "
             "the end of the run (say, a gang the cluster can never hold). Without it such "
             "gangs are reported as pending, with the reason, and the run exits 0.")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help=f"Exit with code {int(ExitCode.STEP_FAILED)} when a Scenario step "
                         "fails (say, it deletes an object that does not exist). Without it "
                         "failed steps are reported, with a warning, and the run exits 0.")
    ] = False,
) -> None:
    """Run a workload on an embedded, simulated cluster and show what happened.

    Starts an in-process cluster with simulated GPU nodes, the operator (with the configured
    scheduler backends), the Phalanx scheduler and simulated kubelets; applies WORKLOAD;
    runs on virtual time until everything settled (or --until); then prints the
    PodCliqueSets, PodGangs (placement, topology domain, time to schedule), pending gangs
    with the reason, and the Events that matter.
    """
    from phalanx.api.duration import parse_duration
    from phalanx.cli import preflight
    from phalanx.cli.confignotes import run_notes
    from phalanx.cli.paths import check_writable, write_error
    from phalanx.cli.progress import RunProgress
    from phalanx.cluster.clock import run_virtual
    from phalanx.report.terminal import machine_output, print_tables
    from phalanx.services.gctune import tuned_gc
    from phalanx.sim.record import save_record, write_atomic
    from phalanx.sim.runner import RunFailed, RunOptions, Simulation
    from phalanx.sim.workload import (
        load_cluster_spec,
        load_config,
        load_scheduler_config,
        load_workload,
    )

    until_s = _parse_until(until)
    try:
        cap = parse_duration(max_duration)
    except ValueError as e:
        raise UserError(f"--max-duration: {e}") from None
    if not dry_run:
        if report is not None:
            check_writable(report, "--report", "report.html")
        if not no_save:
            check_writable(save, "--save", "run.json")
    preflight.check_files(list(workload), max_pods, quiet=quiet)
    wl = load_workload(list(workload))
    spec, spec_source = load_cluster_spec(cluster, wl)
    cfg, cfg_source = load_config(config, wl)
    sched_cfg, sched_source = load_scheduler_config(scheduler_config, wl)
    run_notes(wl, cfg, cfg_source, config=config, cluster=cluster,
              scheduler_config=scheduler_config)
    options = RunOptions(until=until_s, max_duration=cap, phalanx_version=version_text())
    sim = Simulation(wl, spec, cfg, options, cluster_source=spec_source,
                     config_source=cfg_source, scheduler_config=sched_cfg,
                     scheduler_config_source=sched_source)
    try:
        extra = sim.prepare()
    except RunFailed as e:
        raise fail(str(e), ExitCode.REJECTED) from None
    size = preflight.check_size(wl, sim.nodes, max_pods, quiet=quiet)
    # Every object's history (for `get --at` any time) costs memory and file size per pod;
    # only a saved run (`get --at`) and the HTML report (its plots over time) read it.
    options.history = size.pods <= HISTORY_MAX_PODS and (not no_save or report is not None)
    if dry_run:
        raise typer.Exit(preflight.dry_run(wl, cfg, sim.nodes, extra))
    # Like kubectl, never wrap or cut table rows: long lines stay long.
    out = Console(highlight=False, width=None if sys.stdout.isatty() else 10_000)
    show_progress = not quiet and output == Output.table and sys.stderr.isatty()
    try:
        # The services' collector settings: a large run keeps millions of model objects
        # alive, and CPython's defaults would walk them all again and again.
        with tuned_gc():
            if show_progress:
                with RunProgress(err_console) as bar:
                    sim.progress, sim.create_progress = bar, bar.creating
                    record = run_virtual(sim.run())
            else:
                record = run_virtual(sim.run())
    except RunFailed as e:
        raise fail(str(e), ExitCode.REJECTED) from None
    # The tables first: a file that cannot be written must not cost the user the results.
    page = None
    if report is not None:
        from phalanx.report.html import render_html  # matplotlib: only when asked for

        page = render_html(record)
    if output == Output.table:
        print_tables(record, out)
    else:
        sys.stdout.write(machine_output(record, output.value))
    try:
        if not no_save:
            save_record(record, save)
    except OSError as e:
        raise write_error("--save", save, e) from None
    try:
        if report is not None and page is not None:
            report.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(report, page)
    except OSError as e:
        raise write_error("--report", report, e) from None  # type: ignore[arg-type]
    if output == Output.table:
        notes = [f"report: {report}"] if report is not None else []
        if not no_save:
            notes.append(f"saved run: {save} (phalanx describe podgang NAME)")
        if notes:
            out.print("[dim]" + escape("; ".join(notes)) + "[/dim]")
    _finish(record, until_s, max_duration, strict=strict, fail_on_pending=fail_on_pending)


def _finish(record, until_s, max_duration, *,  # type: ignore[no-untyped-def]
            strict, fail_on_pending):
    """Warnings and the exit code of a run that produced a result."""
    from phalanx.report.format import fmt_duration
    from phalanx.report.summary import summarize

    if not record.meta.settled and until_s is None:
        err_console.print(f"[yellow]warning:[/yellow] the run did not settle within "
                          f"{max_duration} of virtual time; results are as of then "
                          "(see --until / --max-duration)")
    failed = [s for s in record.steps if not s.ok]
    if failed:
        steps = "; ".join(f"at {fmt_duration(s.t)}: {s.description}: {s.error}" for s in failed)
        what = f"{len(failed)} Scenario step(s) failed ({steps})"
        if strict:
            raise fail(f"{what} (--strict)", ExitCode.STEP_FAILED)
        err_console.print(f"[yellow]warning:[/yellow] {escape(what)}; the run exits 0 "
                          f"(pass --strict to exit {int(ExitCode.STEP_FAILED)})",
                          soft_wrap=True)
    if fail_on_pending:
        pending = summarize(record, event_limit=0).pending
        if pending:
            names = ", ".join(f"{p.name} ({p.explanation})" for p in pending)
            raise fail(f"{len(pending)} PodGang(s) still pending at the end of the run "
                       f"(--fail-on-pending): {names}", ExitCode.PENDING)
