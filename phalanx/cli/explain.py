"""`phalanx explain podgang|pod NAME`: why it is where it is, or why it waits (saved run)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import UserError

explain_app = typer.Typer(
    help="Explain a PodGang or a pod of a saved run (`phalanx run` saves one): where it "
         "was placed and why, or why it is still waiting.",
    no_args_is_help=True,
)
app.add_typer(explain_app, name="explain")

RunOption = Annotated[Path, typer.Option(
    "--run", help="The saved run to read (written by `phalanx run --save`).")]
DEFAULT_RUN = Path(".phalanx/last-run.json")


def _load(path: Path):  # type: ignore[no-untyped-def]
    from phalanx.sim.record import RecordError, load_record

    try:
        return load_record(path)
    except RecordError as e:
        raise UserError(str(e)) from None


def _explain(kind: str, name: str, run: Path) -> None:
    from phalanx.report.explain import NotInRun, explain_pod, explain_podgang

    record = _load(run)
    try:
        text = explain_podgang(record, name) if kind == "podgang" else explain_pod(record, name)
    except NotInRun as e:
        raise UserError(str(e)) from None
    typer.echo(text)


@explain_app.command("podgang")
def podgang(name: Annotated[str, typer.Argument(help="PodGang name, e.g. my-pcs-0.")],
            run: RunOption = DEFAULT_RUN) -> None:
    """Where the gang's pods went (nodes, topology domains, time to schedule), or why the
    gang still waits (the scheduler's per-node reasons, missing pods, gates)."""
    _explain("podgang", name, run)


@explain_app.command("pod")
def pod(name: Annotated[str, typer.Argument(help="Pod name.")],
        run: RunOption = DEFAULT_RUN) -> None:
    """The pod's node and topology domains, its gang, conditions and events, or why it is
    not scheduled."""
    _explain("pod", name, run)
