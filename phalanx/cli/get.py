"""`phalanx get KIND [NAME]`: objects of a saved run, printed as kubectl prints them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import UserError

DEFAULT_RUN = Path(".phalanx/last-run.json")


@app.command("get")
def get(
    kind: Annotated[str, typer.Argument(
        help="What to show: a kind, plural or short name as kubectl takes it (pods, pcs, "
             "podcliques, pcsg, podgangs, nodes, podgroups, events, ...).",
        show_default=False)],
    name: Annotated[str | None, typer.Argument(
        help="Only this object (by name).", show_default=False)] = None,
    at: Annotated[str | None, typer.Option(
        "--at", help="A virtual time such as 90s or 2m: the latest snapshot at or before it "
                     "(snapshots are taken just before each scenario step and every "
                     "Scenario snapshotEvery). Default: the end of the run.",
        show_default=False)] = None,
    output: Annotated[str, typer.Option(
        "--output", "-o", help="table (kubectl's columns), wide (pods: also NODE), yaml or "
                               "json (the objects, a List when several).")] = "table",
    namespace: Annotated[str | None, typer.Option(
        "--namespace", "-n", help="Only objects in this namespace (default: all).",
        show_default=False)] = None,
    selector: Annotated[str | None, typer.Option(
        "--selector", "-l", help="Only objects whose labels match, e.g. "
                                 "app.kubernetes.io/part-of=workload1.",
        show_default=False)] = None,
    run: Annotated[Path, typer.Option(
        "--run", help="The saved run to read (written by `phalanx run --save`).")
    ] = DEFAULT_RUN,
) -> None:
    """Print objects of a saved run as `kubectl get` would, at the end of the run or at an
    earlier virtual time (`--at`)."""
    from phalanx.api.duration import parse_duration
    from phalanx.report.get import OUTPUTS, GetError, find, render
    from phalanx.sim.record import RecordError, load_record

    if output not in OUTPUTS:
        raise UserError(f"--output: {output!r} is not one of {', '.join(OUTPUTS)}")
    t: float | None = None
    if at is not None:
        try:
            t = parse_duration(at)
        except ValueError as e:
            raise UserError(f"--at: {e}") from None
        if t < 0:
            raise UserError("--at: must not be negative")
    try:
        record = load_record(run)
    except RecordError as e:
        raise UserError(str(e)) from None
    try:
        found = find(record, kind, name, at=t, namespace=namespace, selector=selector)
    except GetError as e:
        raise UserError(str(e)) from None
    typer.echo(render(record, found, output, single=name is not None), nl=False)
