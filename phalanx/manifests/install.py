"""Everything `kubectl apply` needs to run Phalanx in a cluster, as plain dicts.

    docs = install_manifests(InstallOptions(namespace="phalanx-system", image="..."))
    print(to_yaml(docs))

Order matters for a single `kubectl apply -f -`: namespace and CRDs first, then identities
and RBAC, configuration, workloads, and webhook configurations last (so the API server
does not call a webhook whose Service has no endpoints yet for longer than necessary).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from phalanx.api.config import (
    ConfigError, OperatorConfiguration, SchedulerProfile, load_operator_config,
)
from phalanx.api.errors import FieldError

from phalanx.ports import SCHEDULER_METRICS_PORT, SCHEDULER_PROBE_PORT

from .kai_queue import queue_crd, queue_rules
from .rbac import namespaced_rules, operator_rules, scheduler_rules

APP = "phalanx"
DEFAULT_IMAGE = "ghcr.io/phalanx-dev/phalanx:0.1.0"
OPERATOR, SCHEDULER = "phalanx-operator", "phalanx-scheduler"
WEBHOOK_SERVICE = "phalanx-webhook"
MUTATING, VALIDATING = "phalanx-mutating-webhook", "phalanx-validating-webhook"
CONFIG_MAP, CONFIG_FILE = "phalanx-operator-config", "config.yaml"
SCHEDULER_CONFIG_MAP = "phalanx-scheduler-config"
SCHEDULER_LEASE = "phalanx-scheduler-leader-election"
DEFAULT_PROFILE = "default-scheduler"


def install_config(scheduler: bool = True) -> OperatorConfiguration:
    """The OperatorConfiguration installed when none is given: GREP-375's defaults (an
    empty configuration means only default-scheduler) plus what the install itself runs:
    the `phalanx-scheduler` profile when the Phalanx scheduler is deployed (the examples'
    schedulerName), and topology-aware scheduling, so the examples' rack and block
    constraints reach the PodGangs once a ClusterTopologyBinding exists
    (examples/cluster-topology.yaml). examples/operator-config.yaml is this configuration,
    for running the operator outside the cluster. Leader election is on (Grove's chart turns
    it on too; its default, as Phalanx's, is off): the install runs 2 operator replicas."""
    cfg = OperatorConfiguration()
    cfg.leader_election.enabled = True
    if scheduler:
        cfg.scheduler.profiles = [SchedulerProfile(name=DEFAULT_PROFILE),
                                  SchedulerProfile(name=SCHEDULER)]
    cfg.topology_aware_scheduling.enabled = True
    return load_operator_config(cfg)


@dataclass
class InstallOptions:
    namespace: str = "phalanx-system"
    image: str = DEFAULT_IMAGE
    # None: `install_config(scheduler)`
    config: OperatorConfiguration | None = None
    scheduler: bool = True  # also run the Phalanx gang scheduler
    # The scheduler's KubeSchedulerConfiguration (`phalanx scheduler --config`), as a dict
    # to mount; None: its default profile for phalanx-scheduler.
    scheduler_config: dict[str, Any] | None = None
    webhook: bool = True
    # None: 2 with leader election on, else 1 (more are refused without leader election:
    # each replica would run every controller).
    operator_replicas: int | None = None
    scheduler_replicas: int = 2
    image_pull_policy: str = "IfNotPresent"


def _labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": APP}


def _meta(name: str, component: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(component)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _role_pair(name: str, component: str, ns: str, rules: list[dict],
               *, cluster: bool, role_ns: str | None = None) -> list[dict[str, Any]]:
    """A (Cluster)Role and its binding to the component's ServiceAccount in `ns`; a Role
    lives in `role_ns` (default `ns`)."""
    if not cluster and role_ns:
        return [{**doc, "metadata": _meta(name, component, role_ns)}
                for doc in _role_pair(name, component, ns, rules, cluster=False)]
    role_kind = "ClusterRole" if cluster else "Role"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
            "metadata": _meta(name, component, None if cluster else ns), "rules": rules}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{role_kind}Binding",
        "metadata": _meta(name, component, None if cluster else ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": component_account(component),
                      "namespace": ns}],
    }
    return [role, binding]


def component_account(component: str) -> str:
    return OPERATOR if component == "operator" else SCHEDULER


def _container(opts: InstallOptions, component: str, args: list[str],
               ports: dict[str, int], probe_port: int) -> dict[str, Any]:
    return {
        "name": component,
        "image": opts.image,
        "imagePullPolicy": opts.image_pull_policy,
        "args": args,
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE",
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            # The operator's grove-initc runs this same image (operator/startupwaiter.py).
            {"name": "PHALANX_STARTUP_WAITER_IMAGE", "value": opts.image},
        ],
        "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in ports.items()],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": probe_port},
                          "initialDelaySeconds": 15, "periodSeconds": 20},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": probe_port},
                           "initialDelaySeconds": 5, "periodSeconds": 10},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                      "limits": {"memory": "1Gi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }


def _deployment(opts: InstallOptions, component: str, replicas: int,
                container: dict[str, Any], volumes: list[dict[str, Any]],
                metrics_port: int) -> dict[str, Any]:
    labels = _labels(component)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(component_account(component), component, opts.namespace),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {
                    "prometheus.io/scrape": "true", "prometheus.io/port": str(metrics_port)}},
                "spec": {
                    "serviceAccountName": component_account(component),
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {}}, *volumes],
                    "terminationGracePeriodSeconds": 30,
                    # Spread replicas so one node failure never takes both.
                    "topologySpreadConstraints": [{
                        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": labels}}],
                },
            },
        },
    }


def _webhook_configs(opts: InstallOptions, kinds: list[tuple[str, str, str]]) -> list[dict]:
    ns = opts.namespace

    def hook(kind_name: str, path: str) -> dict[str, Any]:
        return {
            "name": f"{kind_name}.{path.strip('/')}.phalanx.dev",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "clientConfig": {"service": {"name": WEBHOOK_SERVICE, "namespace": ns,
                                         "path": path, "port": 443}},
            "rules": [{"apiGroups": [g], "apiVersions": [v], "resources": [r],
                       "operations": ["CREATE", "UPDATE"], "scope": "*"}
                      for g, v, r in kinds if r.split(".")[0] == kind_name],
        }

    names = sorted({r for _, _, r in kinds})
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": _meta(MUTATING, "operator"),
         "webhooks": [hook(n, "/mutate") for n in names]},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration",
         "metadata": _meta(VALIDATING, "operator"),
         "webhooks": [hook(n, "/validate") for n in names]},
    ]


def install_manifests(opts: InstallOptions | None = None) -> list[dict[str, Any]]:
    from phalanx.api.crds import GROVE_CRD_KINDS, crds
    from phalanx.api.grove import ClusterTopology, ClusterTopologyBinding, PodCliqueSet
    from phalanx.api.core import Service
    from phalanx.api.podgang import PodGang
    from phalanx.backends.rbac import rbac_rules
    from phalanx.backends.registry import BackendRegistry

    opts = opts or InstallOptions()
    ns = opts.namespace
    cfg = opts.config if opts.config is not None else install_config(opts.scheduler)
    server = cfg.server
    secret = server.webhooks.secret_name if (
        opts.webhook and server.webhooks.cert_provision_mode == "auto") else None
    election = cfg.leader_election
    replicas = _operator_replicas(opts, election.enabled)
    lease_ns = election.resource_namespace or ns
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, "namespace")},
        *crds(),
    ]
    if opts.scheduler:  # phalanx-scheduler reads KAI's Queues natively
        docs.append(queue_crd())
    for component in ("operator", *(["scheduler"] if opts.scheduler else [])):
        docs.append({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": _meta(component_account(component), component, ns)})

    topologies = [ClusterTopologyBinding, ClusterTopology]  # read (and the binding's status)
    owned = [k for k in GROVE_CRD_KINDS if k not in topologies]
    # Built as the operator will build it, so a profile config it would refuse at start-up
    # (BackendConfigError naming the field) is refused here, not after the install.
    backend_rules = rbac_rules(BackendRegistry.from_config(cfg))
    if opts.scheduler and cfg.scheduler.profile(SCHEDULER) is None:
        raise ConfigError(
            "the install deploys the Phalanx scheduler, but the OperatorConfiguration does not "
            "enable it", errors=[FieldError("scheduler.profiles", f"add a profile named "
                                            f"{SCHEDULER!r} (its pods would be rejected as "
                                            "'not enabled'), or install with --no-scheduler")])
    docs += _role_pair(OPERATOR, "operator", ns, operator_rules(
        owned, topologies, backend_rules, status_of=[ClusterTopologyBinding],
        webhook_configurations=[MUTATING, VALIDATING] if opts.webhook else []), cluster=True)
    # Leases where the operator elects (leaderElection.resourceNamespace, else here), the
    # auto-provisioned webhook Secret here (the operator's own namespace).
    leases_here = election.enabled and lease_ns == ns
    if secret or leases_here:
        docs += _role_pair(OPERATOR, "operator", ns, namespaced_rules(
            secret=secret, leases=leases_here), cluster=False)
    if election.enabled and lease_ns != ns:
        docs += _role_pair(OPERATOR, "operator", ns, namespaced_rules(secret=None),
                           cluster=False, role_ns=lease_ns)
    if opts.scheduler:
        docs += _role_pair(SCHEDULER, "scheduler", ns,
                           # Services: PodTopologySpread's default constraints select by them
                           scheduler_rules(PodGang, queue_rules(), [*topologies, Service]),
                           cluster=True)
        docs += _role_pair(SCHEDULER, "scheduler", ns, namespaced_rules(secret=None),
                           cluster=False)

    docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(
        CONFIG_MAP, "operator", ns), "data": {CONFIG_FILE: yaml.safe_dump(
            cfg.to_dict(), sort_keys=False)}})

    probe, metrics, hook_port = (server.health_probes.port, server.metrics.port,
                                 server.webhooks.port)
    ports = {"probes": probe, "metrics": metrics}
    if opts.webhook:
        ports["webhook"] = hook_port
    args = ["operator", "--config", f"/etc/phalanx/{CONFIG_FILE}"]
    if not opts.webhook:
        args.append("--no-webhook")
    container = _container(opts, "operator", args, ports, probe)
    container["volumeMounts"].append({"name": "config", "mountPath": "/etc/phalanx",
                                      "readOnly": True})
    volumes = [{"name": "config", "configMap": {"name": CONFIG_MAP}}]
    if opts.webhook and server.webhooks.cert_provision_mode == "manual":
        # As Grove's chart: the Secret (e.g. cert-manager's) mounted where the operator
        # reads it. Not optional: the pod waits for it rather than crash-looping.
        container["volumeMounts"].append(_cert_mount(server.webhooks.server_cert_dir,
                                                     container["volumeMounts"]))
        volumes.append({"name": "webhook-certs", "secret": {
            "secretName": server.webhooks.secret_name, "defaultMode": 420}})
    docs.append(_deployment(opts, "operator", replicas, container, volumes, metrics))
    if opts.scheduler:
        sprobe, smetrics = SCHEDULER_PROBE_PORT, SCHEDULER_METRICS_PORT
        args = ["scheduler", "--leader-elect", "--lease-namespace", ns,
                "--probe-port", str(sprobe), "--metrics-port", str(smetrics)]
        volumes: list[dict[str, Any]] = []
        if opts.scheduler_config is not None:
            docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(
                SCHEDULER_CONFIG_MAP, "scheduler", ns), "data": {CONFIG_FILE: yaml.safe_dump(
                    opts.scheduler_config, sort_keys=False)}})
            args += ["--config", f"/etc/phalanx-scheduler/{CONFIG_FILE}"]
            volumes.append({"name": "config", "configMap": {"name": SCHEDULER_CONFIG_MAP}})
        container = _container(opts, "scheduler", args, {"probes": sprobe, "metrics": smetrics},
                               sprobe)
        if volumes:
            container["volumeMounts"].append({"name": "config", "readOnly": True,
                                              "mountPath": "/etc/phalanx-scheduler"})
        docs.append(_deployment(opts, "scheduler", opts.scheduler_replicas, container, volumes,
                                smetrics))
    if opts.webhook:
        docs.append({"apiVersion": "v1", "kind": "Service",
                     "metadata": _meta(WEBHOOK_SERVICE, "operator", ns),
                     "spec": {"selector": _labels("operator"), "ports": [
                         {"name": "webhook", "port": 443, "targetPort": hook_port,
                          "protocol": "TCP"}]}})
        group, _, version = PodCliqueSet.API_VERSION.rpartition("/")
        docs += _webhook_configs(opts, [(group, version, PodCliqueSet.PLURAL),
                                        (group, version, ClusterTopologyBinding.PLURAL)])
    return docs


def _operator_replicas(opts: InstallOptions, leader_election: bool) -> int:
    if opts.operator_replicas is None:
        return 2 if leader_election else 1
    if opts.operator_replicas > 1 and not leader_election:
        raise ConfigError(
            f"{opts.operator_replicas} operator replicas need leader election",
            errors=[FieldError("leaderElection.enabled", "false: every replica would run "
                               "every controller; set it to true, or install 1 replica "
                               "(the default without leader election)")])
    return opts.operator_replicas


def _cert_mount(directory: str, mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """Where certProvisionMode: manual reads the certificate: a path of its own."""
    problem = None
    if not directory.startswith("/"):
        problem = f"{directory!r} is not an absolute path"
    elif directory.rstrip("/") in {m["mountPath"].rstrip("/") for m in mounts}:
        problem = f"{directory!r} is where the install mounts something else"
    if problem:
        raise ConfigError("the webhook certificate Secret cannot be mounted there", errors=[
            FieldError("server.webhooks.serverCertDir", f"{problem} (certProvisionMode: "
                       "manual mounts the Secret there)")])
    return {"name": "webhook-certs", "mountPath": directory, "readOnly": True}


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """One multi-document stream for `kubectl apply -f -`."""
    return "---\n".join(yaml.safe_dump(d, sort_keys=False, default_flow_style=False)
                        for d in docs)
