"""The root typer application every sub-command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="phalanx",
    help=(
        "Phalanx: gang scheduling for AI workloads on Kubernetes. Runs a Grove-style "
        "operator (PodCliqueSet -> PodCliques, pods, PodGangs) with pluggable scheduler "
        "backends, and a gang scheduler, on an embedded cluster (default) or a real one."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",
)
