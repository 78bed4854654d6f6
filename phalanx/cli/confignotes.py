"""What `phalanx run`, `validate` and `manifests all` say about the configuration they were
given, before anything runs: fields set to something Phalanx does not do (warnings), a
workload file's OperatorConfiguration, ClusterSpec or KubeSchedulerConfiguration that a
flag replaced (a warning; it was checked all the same), and, on the embedded cluster, the
settings only the real service reads (one dim note)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from phalanx.cli.errors import err_console


def warn(text: str) -> None:
    err_console.print(f"[yellow]warning:[/yellow] {escape(text)}", soft_wrap=True,
                      highlight=False)


def note(text: str) -> None:
    err_console.print(f"[dim]note: {escape(text)}[/dim]", soft_wrap=True, highlight=False)


def config_warnings(cfg: Any, source: str | Path) -> None:
    """One warning per field set to something Phalanx does not do (ignored_fields)."""
    from phalanx.api.config import ignored_fields

    for line in ignored_fields(cfg):
        warn(f"{source}: {line}")


def run_notes(workload: Any, cfg: Any, cfg_source: str, *, config: Path | None,
              cluster: Path | None, scheduler_config: Path | None) -> None:
    """Before a run on the embedded cluster (or its dry run, or `validate`)."""
    from phalanx.api.config import service_only_fields

    for flag, given, doc, source in (
            ("--config", config, workload.operator_config, workload.config_source),
            ("--cluster", cluster, workload.cluster, workload.cluster_source),
            ("--scheduler-config", scheduler_config, workload.scheduler_config,
             workload.scheduler_config_source)):
        if given is not None and doc is not None:
            warn(f"{source}: its {doc.KIND} is not used, {flag} {given} is (it was checked)")
    config_warnings(cfg, cfg_source)
    unused = service_only_fields(cfg)
    if unused:
        note(f"{cfg_source}: {', '.join(unused)}: read by `phalanx operator` on a real "
             "cluster only; the embedded cluster does not use them")
