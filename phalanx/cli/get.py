"""`phalanx get KIND[,KIND...] [NAME...]`: objects of a saved run, as kubectl prints them."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from phalanx.cli.app import app
from phalanx.cli.errors import UserError

DEFAULT_RUN = Path(".phalanx/last-run.json")

RunOption = Annotated[Path, typer.Option(
    "--run", help="The saved run to read (written by `phalanx run --save`).")]
AtOption = Annotated[str | None, typer.Option(
    "--at", help="A virtual time such as 90s or 2m19s: the objects as they were then. "
                 "Default: the end of the run.", show_default=False)]


class GetOutput(StrEnum):
    table = "table"
    wide = "wide"
    yaml = "yaml"
    json = "json"
    name = "name"


def parse_at(at: str | None) -> float | None:
    if at is None:
        return None
    from phalanx.api.duration import parse_duration

    try:
        t = parse_duration(at)
    except ValueError as e:
        raise UserError(f"--at: {e}") from None
    if t < 0:
        raise UserError("--at: must not be negative")
    return t


def load_run(run: Path):  # type: ignore[no-untyped-def]
    from phalanx.sim.record import RecordError, load_record

    try:
        return load_record(run)
    except RecordError as e:
        raise UserError(str(e)) from None


def _label_keys(values: list[str]) -> list[str]:
    return [k.strip() for v in values for k in v.split(",") if k.strip()]


@app.command("get")
def get(
    kind: Annotated[str, typer.Argument(
        help="What to show, as kubectl takes it: a kind, plural or short name (pods, pcs, "
             "podcliques, pcsg, podgangs, nodes, podgroups, events, ...), several "
             "separated by commas (pods,podgangs), or all.",
        show_default=False)],
    names: Annotated[list[str] | None, typer.Argument(
        help="Only these objects (by name).", show_default=False)] = None,
    at: AtOption = None,
    output: Annotated[GetOutput, typer.Option(
        "--output", "-o", help="table (kubectl's columns), wide (more columns), yaml or "
                               "json (the objects; a List when several), name "
                               "(kind.group/name).")] = GetOutput.table,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", "-n", help="Only objects in this namespace (default: default).",
        show_default=False)] = None,
    all_namespaces: Annotated[bool, typer.Option(
        "--all-namespaces", "-A", help="Objects of every namespace (adds a NAMESPACE "
                                       "column).")] = False,
    selector: Annotated[str | None, typer.Option(
        "--selector", "-l", help="Only objects whose labels match, e.g. "
                                 "app.kubernetes.io/part-of=workload1.",
        show_default=False)] = None,
    show_labels: Annotated[bool, typer.Option(
        "--show-labels", help="Add a LABELS column with every label.")] = False,
    label_columns: Annotated[list[str] | None, typer.Option(
        "--label-columns", "-L", help="Add a column per label key (repeatable, or "
                                      "comma-separated).", show_default=False)] = None,
    run: RunOption = DEFAULT_RUN,
) -> None:
    """Print objects of a saved run as `kubectl get` would, at the end of the run or at any
    earlier virtual time (`--at`)."""
    from phalanx.report.get import DEFAULT_NAMESPACE, GetError, find, render

    if all_namespaces and namespace:
        raise UserError("--namespace and --all-namespaces exclude each other")
    t = parse_at(at)
    record = load_run(run)
    ns = None if all_namespaces else (namespace or DEFAULT_NAMESPACE)
    try:
        result = find(record, kind, names or [], at=t, namespace=ns, selector=selector)
    except GetError as e:
        raise UserError(str(e)) from None
    typer.echo(render(record, result, output.value, single=len(names or []) == 1,
                      show_labels=show_labels, label_columns=_label_keys(label_columns or [])),
               nl=False)
