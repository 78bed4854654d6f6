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


@manifests_app.command("all")
def all_manifests(
    namespace: str = typer.Option("phalanx-system", "--namespace", "-n",
                                  help="Namespace to install the operator and scheduler in."),
    image: str = typer.Option("", help="Container image for both (default: the release image)."),
    config: str = typer.Option(
        "", "--config", "-c", metavar="FILE",
        help="OperatorConfiguration to install; its scheduler profiles decide which "
        "backends' objects the operator may write (RBAC), and must include phalanx-scheduler "
        "unless --no-scheduler. Default: default-scheduler and phalanx-scheduler (only "
        "default-scheduler with --no-scheduler), topology-aware scheduling on."),
    scheduler: bool = typer.Option(True, "--scheduler/--no-scheduler",
                                   help="Also deploy the Phalanx gang scheduler."),
    scheduler_config: str = typer.Option(
        "", "--scheduler-config", metavar="FILE",
        help="KubeSchedulerConfiguration for the Phalanx scheduler (mounted from a "
        "ConfigMap, given to `phalanx scheduler --config`); it must have a profile for "
        "phalanx-scheduler. Default: the default profile."),
    webhook: bool = typer.Option(True, "--webhook/--no-webhook",
                                 help="Serve PodCliqueSet admission as a webhook."),
    replicas: int = typer.Option(
        None, min=1, show_default=False,
        help="Replicas of each Deployment, leader-elected (default 2). The operator gets 1 "
        "when the OperatorConfiguration turns leader election off (leaderElection.enabled: "
        "false, its default when unset, as in Grove), and more are refused then: each "
        "replica would run every controller."),
) -> None:
    """Print a complete install: namespace, CRDs, service accounts, least-privilege RBAC,
    the default OperatorConfiguration, operator and scheduler Deployments, and the admission
    webhook. Apply with: phalanx manifests all | kubectl apply -f -"""
    from pathlib import Path

    import phalanx.backends  # noqa: F401  (registers every backend's profile name first)
    from phalanx.api.config import load_operator_config
    from phalanx.cli.confignotes import config_warnings
    from phalanx.manifests import InstallOptions, install_manifests, to_yaml
    from phalanx.manifests.install import DEFAULT_IMAGE

    cfg = load_operator_config(Path(config)) if config else None
    if cfg is not None:
        config_warnings(cfg, config)
    sched_cfg = None
    if scheduler_config:
        from phalanx.cli.errors import UserError
        from phalanx.manifests.install import SCHEDULER
        from phalanx.scheduler import configfile

        if not scheduler:
            raise UserError("--scheduler-config configures the Phalanx scheduler, which "
                            "--no-scheduler leaves out")
        loaded = configfile.load(scheduler_config)
        if SCHEDULER not in configfile.served_names(loaded):
            raise UserError(f"{scheduler_config}: profiles: no profile has schedulerName "
                            f"{SCHEDULER!r}, which the operator gives the pods of its "
                            f"{SCHEDULER} backend")
        sched_cfg = loaded.to_dict()
    opts = InstallOptions(namespace=namespace, image=image or DEFAULT_IMAGE, config=cfg,
                          scheduler=scheduler, webhook=webhook, operator_replicas=replicas,
                          scheduler_replicas=replicas or 2, scheduler_config=sched_cfg)
    typer.echo(to_yaml(install_manifests(opts)), nl=False)
