"""`phalanx manifests`: Kubernetes manifests for installing Phalanx."""

from __future__ import annotations

import typer

from phalanx.cli.app import app

manifests_app = typer.Typer(
    help="Print Kubernetes manifests (CRDs, RBAC, deployments) for installing Phalanx.",
    no_args_is_help=True,
)
app.add_typer(manifests_app, name="manifests")


@manifests_app.command("crds")
def crds() -> None:
    """Print the CustomResourceDefinitions for the grove.io and scheduler.grove.io kinds."""
    from phalanx.api.crds import crds_yaml

    typer.echo(crds_yaml(), nl=False)
