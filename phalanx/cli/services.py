"""`phalanx operator` and `phalanx scheduler`: the long-running services on a real cluster."""

from __future__ import annotations

import asyncio
import sys

import typer

from phalanx.cli.app import KUBECONFIG_HELP, app
from phalanx.ports import (
    OPERATOR_METRICS_PORT, OPERATOR_PROBE_PORT, SCHEDULER_METRICS_PORT, SCHEDULER_PROBE_PORT,
    WEBHOOK_PORT,
)
from phalanx.cli.errors import UserError


def _run(coro: object, user_errors: tuple[type[Exception], ...] = ()) -> None:
    """`user_errors`: more exceptions shown as one line (the scheduler does not import the
    operator's: importing the operator was a tenth of its start-up CPU)."""
    from phalanx.cluster.kube import KubeConfigError

    try:
        code = asyncio.run(coro)  # type: ignore[arg-type]
    except (KubeConfigError, *user_errors) as e:
        raise UserError(str(e)) from None
    if code:
        sys.exit(code)


TUNE_GC_HELP = ("Run the cyclic garbage collector less often from the start, and freeze the "
                "objects loaded by the informers' first sync (phalanx/services/gctune.py).")


@app.command("operator")
def operator(
    kubeconfig: str = typer.Option(None, "--kubeconfig", help=KUBECONFIG_HELP),
    context: str = typer.Option(None, "--context", help="kubeconfig context to use."),
    config: str = typer.Option(None, "--config", "-c", metavar="FILE",
                               help="OperatorConfiguration file (defaults when omitted)."),
    namespace: str = typer.Option(None, "--namespace", "-n",
                                  help="The operator's own namespace, its webhook Service's: "
                                  "the webhook certificate Secret and its DNS names are "
                                  "there, and the leader-election Lease unless "
                                  "leaderElection.resourceNamespace names another (default: "
                                  "$POD_NAMESPACE, else the kubeconfig context's)."),
    webhook: bool = typer.Option(True, "--webhook/--no-webhook",
                                 help="Serve PodCliqueSet admission over HTTPS."),
    leader_elect: bool = typer.Option(None, "--leader-elect/--no-leader-elect",
                                      help="Override leaderElection.enabled of the config "
                                      "(off when the config does not set it, as in Grove; "
                                      "the installed config turns it on for its 2 replicas)."),
    probe_port: int = typer.Option(None, "--probe-port", min=1, max=65535,
                                   help="Port of /healthz and /readyz (default: server."
                                   f"healthProbes.port of the config, {OPERATOR_PROBE_PORT})."),
    metrics_port: int = typer.Option(None, "--metrics-port", min=1, max=65535,
                                     help="Port of /metrics (default: server.metrics.port of "
                                     f"the config, {OPERATOR_METRICS_PORT})."),
    webhook_port: int = typer.Option(None, "--webhook-port", min=1, max=65535,
                                     help="HTTPS port of the admission webhook (default: "
                                     f"server.webhooks.port of the config, {WEBHOOK_PORT})."),
    tune_gc: bool = typer.Option(True, "--tune-gc/--no-tune-gc", help=TUNE_GC_HELP),
) -> None:
    """Run the Grove operator against a Kubernetes API server until SIGTERM.

    Every replica serves /healthz, /readyz, /metrics and the admission webhook; the replica
    holding the Lease runs the controllers. Exits 1 if it loses the Lease."""
    from phalanx.operator.admission_mnnvl import MNNVLPreflightError
    from phalanx.services.operator import OperatorServiceOptions, run_operator_service

    _run(run_operator_service(OperatorServiceOptions(
        kubeconfig=kubeconfig, context=context, config=config, namespace=namespace,
        webhook=webhook, leader_elect=leader_elect, probe_port=probe_port,
        metrics_port=metrics_port, webhook_port=webhook_port, tune_gc=tune_gc)),
         (MNNVLPreflightError,))


@app.command("scheduler")
def scheduler(
    kubeconfig: str = typer.Option(None, "--kubeconfig", help=KUBECONFIG_HELP),
    context: str = typer.Option(None, "--context", help="kubeconfig context to use."),
    config: str = typer.Option(
        None, "--config", "-c", metavar="FILE",
        help="KubeSchedulerConfiguration file, as kube-scheduler's --config: its profiles "
        "(plugins, pluginConfig) are the schedulerNames served. Default: one default "
        "profile per --scheduler-name."),
    scheduler_name: list[str] = typer.Option(
        None, "--scheduler-name",
        help="schedulerName to serve (repeatable; default phalanx-scheduler), with the "
        "default profile; other pods are left to their scheduler. Not with --config."),
    leader_elect: bool = typer.Option(True, "--leader-elect/--no-leader-elect",
                                      help="Elect one active replica through a Lease."),
    namespace: str = typer.Option(None, "--namespace", "-n",
                                  help="Namespace of the leader-election Lease (default: the "
                                  "pod's own), as `phalanx operator --namespace`."),
    lease_namespace: str = typer.Option(None, "--lease-namespace", hidden=True,
                                        help="Old name of --namespace."),
    lease_duration: str = typer.Option(
        "15s", "--leader-elect-lease-duration", metavar="DURATION",
        help="How long a standby waits, after the leader's last renewal it saw, before it "
        "takes the Lease (kube-scheduler's flag and default)."),
    renew_deadline: str = typer.Option(
        "10s", "--leader-elect-renew-deadline", metavar="DURATION",
        help="How long the leader keeps trying to renew before it stops leading (shorter "
        "than the lease duration)."),
    retry_period: str = typer.Option(
        "2s", "--leader-elect-retry-period", metavar="DURATION",
        help="Wait between attempts to acquire or renew the Lease."),
    probe_port: int = typer.Option(SCHEDULER_PROBE_PORT, min=1, max=65535,
                                   help="Port of /healthz and /readyz."),
    metrics_port: int = typer.Option(SCHEDULER_METRICS_PORT, min=1, max=65535,
                                     help="Port of /metrics."),
    log_format: str = typer.Option("text", help="text or json."),
    qps: float = typer.Option(100.0, min=0.0, help="Client-side limit: API requests per "
                              "second, sustained (client-go's QPS; 0: unlimited)."),
    burst: int = typer.Option(150, min=1, help="Client-side limit: requests allowed at once "
                              "above --qps (client-go's Burst)."),
    tune_gc: bool = typer.Option(True, "--tune-gc/--no-tune-gc", help=TUNE_GC_HELP),
) -> None:
    """Run the Phalanx gang scheduler against a Kubernetes API server until SIGTERM.

    Pods whose spec.schedulerName it serves (--scheduler-name, or the profiles of --config)
    are scheduled; every other pod is left to its own scheduler."""
    from phalanx.api.duration import parse_duration
    from phalanx.services.leader import LeaseTiming
    from phalanx.services.scheduler import SchedulerServiceOptions, run_scheduler_service

    try:
        timing = LeaseTiming(*(parse_duration(v) for v in
                               (lease_duration, renew_deadline, retry_period)))
    except ValueError as err:
        raise UserError(f"--leader-elect-*: {err}") from None
    sched_config = None
    names = list(scheduler_name or ["phalanx-scheduler"])
    if config:
        if scheduler_name:
            raise UserError("--scheduler-name and --config: the configuration's profiles "
                            "name the schedulers served; give one or the other")
        from phalanx.scheduler import configfile

        sched_config = configfile.load(config)  # ManifestError: the file and field
        names = configfile.served_names(sched_config)
    _run(run_scheduler_service(SchedulerServiceOptions(
        kubeconfig=kubeconfig, context=context, scheduler_names=names, config=sched_config,
        leader_elect=leader_elect, lease_namespace=namespace or lease_namespace,
        probe_port=probe_port,
        metrics_port=metrics_port, log_format=log_format, lease_timing=timing,
        qps=qps, burst=burst, tune_gc=tune_gc)))
