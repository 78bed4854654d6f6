"""`phalanx describe KIND NAME` (alias `explain`): one object of a saved run, as
`kubectl describe` shows it, with why a gang or pod is where it is, or why it waits."""

from __future__ import annotations

from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import UserError
from phalanx.cli.get import DEFAULT_RUN, RunOption, load_run

_HELP = ("Describe an object of a saved run as kubectl describe does: its labels, "
         "conditions, related objects (owner, children, pods, node) and every Event; for a "
         "PodGang or pod also where it was placed and why, or why it still waits.")
KindArg = Annotated[str, typer.Argument(
    help="The kind, as kubectl takes it: podcliqueset (pcs), podclique (pclq), "
         "podcliquescalinggroup (pcsg), podgang (pg), pod, node, or any other kind.",
    show_default=False)]
NameArg = Annotated[str, typer.Argument(help="The object's name.", show_default=False)]
NamespaceOption = Annotated[str | None, typer.Option(
    "--namespace", "-n", help="The object's namespace; needed only when its name is in "
    "several namespaces of the run.", show_default=False)]


def _describe(kind: str, name: str, run: object, namespace: str | None) -> None:
    from phalanx.report.describe import describe
    from phalanx.report.explain import NotInRun

    record = load_run(run)  # type: ignore[arg-type]
    try:
        text = describe(record, kind, name, namespace)
    except NotInRun as e:
        raise UserError(str(e)) from None
    except LookupError as e:  # an unknown kind
        raise UserError(str(e.args[0]) if e.args else str(e)) from None
    typer.echo(text)


@app.command("describe", help=_HELP)
def describe_cmd(kind: KindArg, name: NameArg, run: RunOption = DEFAULT_RUN,
                 namespace: NamespaceOption = None) -> None:
    _describe(kind, name, run, namespace)


@app.command("explain", help=_HELP + " (Alias of describe.)")
def explain_cmd(kind: KindArg, name: NameArg, run: RunOption = DEFAULT_RUN,
                namespace: NamespaceOption = None) -> None:
    _describe(kind, name, run, namespace)
