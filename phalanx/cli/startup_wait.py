"""`phalanx startup-wait`: the init container that enforces startup order (Grove's
grove-initc); see phalanx.services.startupwaiter."""

from __future__ import annotations

import asyncio
import sys

import typer

from phalanx.cli.app import KUBECONFIG_HELP, app
from phalanx.cli.errors import UserError


@app.command("startup-wait")
def startup_wait(
    podcliques: list[str] = typer.Option(
        ..., "--podcliques", "-p", metavar="PODCLIQUE:COUNT",
        help="A parent PodClique and how many of its pods must be Ready (repeatable)."),
    namespace: str = typer.Option(
        None, "--namespace", "-n",
        help="Namespace of the parent pods (default: /var/grove/pod-info/namespace, the "
        "downward-API file the operator mounts, else the kubeconfig's)."),
    kubeconfig: str = typer.Option(None, "--kubeconfig", help=KUBECONFIG_HELP),
    context: str = typer.Option(None, "--context", help="kubeconfig context to use."),
    log_format: str = typer.Option("text", "--log-format", help="text or json."),
) -> None:
    """Wait until each parent PodClique has COUNT Ready pods, then exit 0.

    The operator runs this as the `grove-initc` init container of pods whose clique starts
    after others (cliqueStartupType InOrder or Explicit), with the PodCliqueSet's own
    ServiceAccount token, which may only read pods. Progress is logged as counts change."""
    from phalanx.cluster.kube import KubeConfigError
    from phalanx.operator.startupwaiter import parse_podcliques
    from phalanx.services.runtime import setup_logging
    from phalanx.services.startupwaiter import run_startup_wait

    if log_format not in ("text", "json"):
        raise UserError(f"--log-format must be text or json, got {log_format!r}")
    try:
        deps = parse_podcliques(podcliques)
    except ValueError as e:
        raise UserError(str(e)) from None
    setup_logging("info", log_format)
    try:
        code = asyncio.run(run_startup_wait(deps, namespace=namespace,
                                            kubeconfig=kubeconfig, context=context))
    except KubeConfigError as e:
        raise UserError(str(e)) from None
    if code:
        sys.exit(code)
