"""The root typer application every sub-command module registers on."""

from __future__ import annotations

import typer
from typer.core import TyperOption

from phalanx.cli.errors import EXIT_CODES_HELP


def _no_bool_metavar(self: TyperOption, ctx: object) -> str | None:
    # A flag takes no value: help shows `--quiet`, not `--quiet <bool>`.
    if self.is_flag:
        return None
    return _display_type_rich(self, ctx)  # type: ignore[arg-type]


_display_type_rich = TyperOption.display_type_rich
TyperOption.display_type_rich = _no_bool_metavar  # type: ignore[method-assign]

app = typer.Typer(
    name="phalanx",
    help=(
        "Phalanx: gang scheduling for AI workloads on Kubernetes. Runs a Grove-style "
        "operator (PodCliqueSet -> PodCliques, pods, PodGangs) with pluggable scheduler "
        "backends, and a gang scheduler, on an embedded cluster (default) or a real one."
    ),
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode="markdown",
)


# `--kubeconfig` of every command that talks to a real API server (cluster/kube/config.py).
KUBECONFIG_HELP = ("kubeconfig file; without it: $KUBECONFIG (its files merged as kubectl "
                   "merges them), else the in-cluster service account in a pod, else "
                   "~/.kube/config")


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("phalanx")
    except PackageNotFoundError:
        return "dev"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"phalanx {version_text()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    pass


@app.command("version")
def version() -> None:
    """Print the version of Phalanx."""
    typer.echo(f"phalanx {version_text()}")
