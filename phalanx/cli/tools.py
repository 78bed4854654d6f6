"""`phalanx validate`, `phalanx export` and `phalanx diff`: working with workload files and
saved runs without running anything."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import EXIT_CODES_HELP, ExitCode, err_console, fail
from phalanx.cli.get import load_run

FilesArg = Annotated[list[Path], typer.Argument(
    help="Workload YAML files, as `phalanx run` takes them.", show_default=False)]


@app.command("validate", epilog=EXIT_CODES_HELP)
def validate(
    workload: FilesArg,
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", help="ClusterSpec YAML (the nodes a ClusterTopology is checked "
                          "against). Default: the built-in cluster.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="OperatorConfiguration YAML (which scheduler backends are "
                               "enabled). Default: every backend.")] = None,
    scheduler_config: Annotated[Path | None, typer.Option(
        "--scheduler-config", help="KubeSchedulerConfiguration YAML, checked as the "
        "scheduler would load it (as `phalanx run --scheduler-config`).")] = None,
) -> None:
    """Check workload files without running them: every field (file, line, field path), and
    admission of every object, as `phalanx run` and the operator's webhook would admit it
    (the same as `phalanx run --dry-run`). Exits 0 when all is valid."""
    from phalanx.cli import preflight
    from phalanx.cli.confignotes import run_notes
    from phalanx.sim.runner import RunFailed, Simulation
    from phalanx.sim.workload import (
        load_cluster_spec,
        load_config,
        load_scheduler_config,
        load_workload,
    )

    wl = load_workload(list(workload))
    spec, _ = load_cluster_spec(cluster, wl)
    cfg, cfg_source = load_config(config, wl)
    load_scheduler_config(scheduler_config, wl)  # raises, naming the field
    run_notes(wl, cfg, cfg_source, config=config, cluster=cluster,
              scheduler_config=scheduler_config)
    sim = Simulation(wl, spec, cfg)
    try:
        extra = sim.prepare()
    except RunFailed as e:
        raise fail(str(e), ExitCode.REJECTED) from None
    raise typer.Exit(preflight.dry_run(wl, cfg, sim.nodes, extra))


@app.command("export")
def export(workload: FilesArg) -> None:
    """Print the workload of `phalanx run` files, ready for `kubectl apply -f -`: without the
    simulation-only documents (Scenario, ClusterSpec, OperatorConfiguration,
    KubeSchedulerConfiguration) and the sim.phalanx.dev annotations; objects a Scenario
    applies later are included."""
    from rich.markup import escape

    from phalanx.sim.export import export_workload
    from phalanx.sim.workload import load_workload

    text, notes = export_workload(load_workload(list(workload)))
    typer.echo(text, nl=False)
    for note in notes:
        err_console.print(f"[dim]# {escape(note)}[/dim]", soft_wrap=True)


class DiffOutput(StrEnum):
    table = "table"
    json = "json"


@app.command("diff")
def diff(
    run_a: Annotated[Path, typer.Argument(help="A saved run (phalanx run --save A.json).",
                                          show_default=False)],
    run_b: Annotated[Path, typer.Argument(help="Another saved run.", show_default=False)],
    output: Annotated[DiffOutput, typer.Option("--output", "-o", help="table or json.")
                      ] = DiffOutput.table,
) -> None:
    """Compare two saved runs (say, one workload under two configurations): the totals
    (gangs scheduled and pending, time to schedule, preemptions, GPU use), then every
    PodGang whose phase, time to schedule, domain or nodes differ."""
    from phalanx.report.diff import diff_dict, diff_records, render_diff

    d = diff_records(load_run(run_a), load_run(run_b))
    if output == DiffOutput.json:
        typer.echo(json.dumps(diff_dict(d), indent=2))
    else:
        typer.echo(render_diff(d, str(run_a), str(run_b)), nl=False)
