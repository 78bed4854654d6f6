"""What `phalanx run` and `phalanx validate` check before anything runs: the size of the
work (said, and refused when absurd), and admission of every object (`--dry-run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from phalanx.cli.errors import ExitCode, UserError, err_console

MAX_PODS_HELP = ("Refuse workloads that make more pods than this (the check runs before "
                 "anything is simulated, and says what the run would cost); 0: no limit.")
NOTE_SECONDS = 20.0  # say what a run will cost when it takes longer than this


def _too_large(what: str, max_pods: int) -> UserError:
    return UserError(f"{what}; that is more than --max-pods {max_pods:,}. Shrink the "
                     "workload, or pass --max-pods 0 (or a larger number) to run it anyway.",
                     ExitCode.TOO_LARGE)


def check_files(paths: list[Path], max_pods: int, *, quiet: bool) -> None:
    """Before parsing: refuse files holding more documents than --max-pods allows pods
    (every PodCliqueSet makes at least one), and say when reading alone takes a while."""
    from phalanx.sim.sizing import fmt_bytes, fmt_seconds, scan_files

    size = scan_files(paths)
    if max_pods and size.documents > max_pods:
        raise _too_large(f"the workload files hold {size.documents:,} YAML documents "
                         f"({fmt_bytes(size.bytes)}): reading them alone takes about "
                         f"{fmt_seconds(size.read_seconds)}, and each PodCliqueSet makes at "
                         "least one pod", max_pods)
    if size.read_seconds >= 3 and not quiet:
        err_console.print(f"reading {fmt_bytes(size.bytes)} of YAML ({size.documents:,} "
                          f"documents): about {fmt_seconds(size.read_seconds)}", soft_wrap=True)


def check_size(workload: Any, nodes: list[Any], max_pods: int, *, quiet: bool) -> Any:
    """After parsing: the pods the workload makes (returned), refused over --max-pods, said
    when the simulation takes long."""
    from phalanx.sim.sizing import estimate

    gpus = sum(int(n.allocatable_resources().get("nvidia.com/gpu", 0)) for n in nodes)
    size = estimate(workload, len(nodes), gpus)
    if max_pods and size.pods > max_pods:
        raise _too_large(f"{size.describe()}: {size.cost()}", max_pods)
    if size.seconds >= NOTE_SECONDS and not quiet:
        err_console.print(f"{size.describe()}: {size.cost()}", soft_wrap=True)
    return size


def dry_run(workload: Any, config: Any, nodes: list[Any], topology: list[Any]) -> int:
    """Admission of every object without a run; prints what was accepted and refused."""
    import typer
    from rich.markup import escape

    from phalanx.cluster.clock import run_virtual
    from phalanx.sim.admit import rejection_message, validate

    admitted = run_virtual(validate(workload, config, nodes, topology))
    for line in admitted.accepted:
        typer.echo(f"{line}: valid")
    for warning in admitted.warnings:  # as kubectl prints an API server's warnings
        err_console.print(f"[yellow]Warning:[/yellow] {escape(warning)}", soft_wrap=True,
                          highlight=False)
    if admitted.rejected:
        # The message names fields such as metadata.labels[kai.scheduler/queue]: not markup.
        err_console.print(f"[bold red]error:[/bold red] "
                          f"{escape(rejection_message(admitted.rejected))}",
                          soft_wrap=True, markup=True, highlight=False)
        return int(ExitCode.REJECTED)
    typer.echo(f"{len(admitted.accepted)} object(s) valid; nothing was run.")
    return int(ExitCode.OK)
