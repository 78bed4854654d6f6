"""OperatorConfiguration (operator.config.grove.io/v1alpha1): how the operator runs.

Defaulting and validation follow GREP-375:
- `default-scheduler` is always enabled (added when missing); empty profiles mean
  `[default-scheduler]`; `defaultProfileName` defaults to `default-scheduler` and must name a
  listed profile; profile names are unique and must be known backends;
- `default-scheduler`'s config accepts only `gangScheduling` (bool) and `workloadAPIVersion`
  (a string, checked by the kube backend). Other backends validate their own config.

Grove's own OperatorConfiguration files load unchanged (ai-dynamo/grove
operator/cmd/cli/testdata/valid-config*.yaml): every field of Grove's OperatorConfiguration is
either honoured or, when set to something Phalanx does not do (`authorizer.enabled`,
`debugging`, the client's content types), named by
`ignored_fields` in a start-up warning; never refused. So is `clusterTopology`, a key Grove's
own test files carry that Grove's decoder drops (topology-aware scheduling is
`topologyAwareScheduling.enabled`). Grove's validation holds too: positive lease timings with
leaseDuration > renewDeadline, a resourceLock and resourceName, burst >= 0, concurrentSyncs
> 0; qps or burst 0 and an empty logLevel / logFormat mean the default, as in Grove.

`load_operator_config(...)` does all three steps and raises one `ConfigError` naming every
offending field, e.g. `scheduler.profiles[1].name: duplicate profile "kai-scheduler"`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, ValidationError

from phalanx.ports import OPERATOR_METRICS_PORT, OPERATOR_PROBE_PORT, WEBHOOK_PORT

from .base import KubeModel, Resource
from .duration import DURATION_PATTERN, parse_duration
from .errors import FieldError, ManifestError, format_path, suggest
from .workload_versions import gate_free_problem

DEFAULT_SCHEDULER = "default-scheduler"

# Scheduler backend names a profile may use. The one list: the backends package extends it
# with `register_scheduler_name` when it adds a backend.
KNOWN_SCHEDULER_NAMES: list[str] = [
    DEFAULT_SCHEDULER,
    "kai-scheduler",
    "volcano",
    "koordinator",
    "phalanx-scheduler",
]

# default-scheduler profile config keys (the kube backend validates workloadAPIVersion's value).
DEFAULT_SCHEDULER_CONFIG_KEYS = ("gangScheduling", "workloadAPIVersion", "mismatchPolicy",
                                 "podSchedulingGate")


def register_scheduler_name(name: str) -> None:
    """Make `name` a valid profile name (idempotent)."""
    if name not in KNOWN_SCHEDULER_NAMES:
        KNOWN_SCHEDULER_NAMES.append(name)


class ConfigError(ManifestError):
    """An invalid OperatorConfiguration; `errors` lists every offending field."""

    permanent_reason = "InvalidConfiguration"


class SchedulerProfile(KubeModel):
    name: str = Field(min_length=1)
    # Backend-specific options, validated by that backend.
    config: dict[str, Any] | None = None


class SchedulerConfiguration(KubeModel):
    profiles: list[SchedulerProfile] = Field(default_factory=list)
    default_profile_name: str | None = None

    def profile(self, name: str) -> SchedulerProfile | None:
        for p in self.profiles:
            if p.name == name:
                return p
        return None

    def profile_names(self) -> list[str]:
        return [p.name for p in self.profiles]


class ControllerConfiguration(KubeModel):
    # Workers reconciling in parallel (distinct keys only, as in controller-runtime).
    concurrent_syncs: int = Field(default=1, ge=1)


def _workers(n: int) -> Any:
    return Field(default_factory=lambda: ControllerConfiguration(concurrent_syncs=n))


class ControllersConfiguration(KubeModel):
    # Grove's defaults (SetDefaults_*ControllerConfiguration): 10, 10, 5 and 5.
    pod_clique_set: ControllerConfiguration = _workers(10)
    pod_clique: ControllerConfiguration = _workers(10)
    pod_clique_scaling_group: ControllerConfiguration = _workers(5)
    # The PodGang controller (status, references) and the backend controller (sync_podgang).
    pod_gang: ControllerConfiguration = _workers(5)


class LeaderElectionConfiguration(KubeModel):
    enabled: bool = True
    lease_duration: str = Field(default="15s", pattern=DURATION_PATTERN)
    renew_deadline: str = Field(default="10s", pattern=DURATION_PATTERN)
    retry_period: str = Field(default="2s", pattern=DURATION_PATTERN)
    resource_lock: Literal["leases", ""] = "leases"
    resource_name: str = "phalanx-operator-leader-election"
    resource_namespace: str | None = None  # the operator's own namespace when unset


class Server(KubeModel):
    bind_address: str = ""
    port: int = Field(ge=1, le=65535)


class WebhookServer(Server):
    port: int = Field(default=WEBHOOK_PORT, ge=1, le=65535)
    server_cert_dir: str = "/etc/phalanx-operator/webhook-certs"
    secret_name: str = "phalanx-webhook-server-cert"
    cert_provision_mode: Literal["auto", "manual"] = "auto"


class ServerConfiguration(KubeModel):
    webhooks: WebhookServer = Field(default_factory=WebhookServer)
    health_probes: Server = Field(default_factory=lambda: Server(port=OPERATOR_PROBE_PORT))
    metrics: Server = Field(default_factory=lambda: Server(port=OPERATOR_METRICS_PORT))


DEFAULT_QPS, DEFAULT_BURST = 100.0, 150


class ClientConnectionConfiguration(KubeModel):
    qps: float = Field(default=DEFAULT_QPS, ge=0)  # 0: the default
    burst: int = Field(default=DEFAULT_BURST, ge=0)  # 0: the default
    # Grove's client content types: Phalanx's client always speaks JSON.
    content_type: str | None = None
    accept_content_types: str | None = None


class TopologyAwareSchedulingConfiguration(KubeModel):
    enabled: bool = False


class AuthorizerConfig(KubeModel):
    """Grove's authorizer webhook (who may change Grove-managed pods); Phalanx has none."""

    enabled: bool = False
    exempt_service_account_user_names: list[str] | None = None


class NetworkAcceleration(KubeModel):
    """Grove's automatic multi-node NVLink: a ComputeDomain per PodCliqueSet replica and
    `grove.io/mnnvl-group` (phalanx/operator/computedomain.py)."""

    auto_mnnvl_enabled: bool = Field(default=False, alias="autoMNNVLEnabled")


class DebuggingConfiguration(KubeModel):
    enable_profiling: bool | None = None
    pprof_bind_host: str | None = None
    pprof_bind_port: int | None = None


class LegacyClusterTopologyConfig(KubeModel):
    """`clusterTopology`: in Grove's own test configuration files, not a field of Grove's
    OperatorConfiguration (its decoder drops it); accepted and named as ignored."""

    model_config = ConfigDict(extra="allow")


class OperatorConfiguration(Resource):
    """Read from a file at start-up (not an API object: it is not served by any server)."""

    API_VERSION = "operator.config.grove.io/v1alpha1"
    KIND = "OperatorConfiguration"
    PLURAL = ""
    NAMESPACED = False
    SERVED: ClassVar[bool] = False

    scheduler: SchedulerConfiguration = Field(default_factory=SchedulerConfiguration)
    controllers: ControllersConfiguration = Field(default_factory=ControllersConfiguration)
    leader_election: LeaderElectionConfiguration = Field(
        default_factory=LeaderElectionConfiguration
    )
    server: ServerConfiguration = Field(default_factory=ServerConfiguration)
    runtime_client_connection: ClientConnectionConfiguration = Field(
        default_factory=ClientConnectionConfiguration
    )
    topology_aware_scheduling: TopologyAwareSchedulingConfiguration = Field(
        default_factory=TopologyAwareSchedulingConfiguration
    )
    # "" means the default, as in Grove.
    log_level: Literal["debug", "info", "warn", "error", ""] = "info"
    log_format: Literal["json", "text", ""] = "json"
    authorizer: AuthorizerConfig = Field(default_factory=AuthorizerConfig)
    network: NetworkAcceleration = Field(default_factory=NetworkAcceleration)
    debugging: DebuggingConfiguration | None = None
    cluster_topology: LegacyClusterTopologyConfig | None = None

    def to_dict(self, *, warnings: bool = True) -> dict[str, Any]:
        data = super().to_dict(warnings=warnings)
        if not data.get("metadata"):
            data.pop("metadata", None)
        return data


def default_operator_config(cfg: OperatorConfiguration) -> OperatorConfiguration:
    """Apply the defaults in place (and return `cfg`): the scheduler profiles, and Grove's
    "zero means default" for the client's qps and burst and the log level and format."""
    conn = cfg.runtime_client_connection
    if not conn.qps:
        conn.qps = DEFAULT_QPS
    if not conn.burst:
        conn.burst = DEFAULT_BURST
    if not cfg.log_level:
        cfg.log_level = "info"
    if not cfg.log_format:
        cfg.log_format = "json"
    sched = cfg.scheduler
    if not any(p.name == DEFAULT_SCHEDULER for p in sched.profiles):
        sched.profiles.append(SchedulerProfile(name=DEFAULT_SCHEDULER))
    if not sched.default_profile_name:
        sched.default_profile_name = DEFAULT_SCHEDULER
    return cfg


def validate_operator_config(cfg: OperatorConfiguration) -> list[FieldError]:
    """Every problem in an (already defaulted) configuration; empty when valid."""
    errors: list[FieldError] = []

    def err(loc: list[str | int], message: str) -> None:
        errors.append(FieldError(format_path(loc), message))

    sched = cfg.scheduler
    seen: set[str] = set()
    for i, profile in enumerate(sched.profiles):
        where: list[str | int] = ["scheduler", "profiles", i]
        if profile.name not in KNOWN_SCHEDULER_NAMES:
            hint = suggest(profile.name, KNOWN_SCHEDULER_NAMES)
            err(
                [*where, "name"],
                f"unknown scheduler backend {_q(profile.name)}"
                + (f"; did you mean {_q(hint)}?" if hint else "")
                + f" (known: {', '.join(KNOWN_SCHEDULER_NAMES)})",
            )
        elif profile.name in seen:
            err([*where, "name"], f"duplicate profile {_q(profile.name)}")
        seen.add(profile.name)
        if profile.name == DEFAULT_SCHEDULER:
            _check_default_scheduler_config(profile.config or {}, [*where, "config"], err)
    # As Grove: the default must be one of the listed profiles that are valid.
    names = [n for n in dict.fromkeys(sched.profile_names()) if n in KNOWN_SCHEDULER_NAMES]
    if sched.default_profile_name not in names:
        err(
            ["scheduler", "defaultProfileName"],
            f"{_q(sched.default_profile_name or '')} is not a listed profile "
            f"(profiles: {', '.join(names)})",
        )
    _check_leader_election(cfg.leader_election, err)
    return errors


def _check_leader_election(le: LeaderElectionConfiguration, err: Any) -> None:
    """Grove's checks, only with leader election on."""
    if not le.enabled:
        return
    for key, value in (("leaseDuration", le.lease_duration), ("renewDeadline", le.renew_deadline),
                       ("retryPeriod", le.retry_period)):
        if parse_duration(value) <= 0:
            err(["leaderElection", key], f"must be greater than 0, got {value!r}")
    if parse_duration(le.lease_duration) <= parse_duration(le.renew_deadline):
        err(["leaderElection", "leaseDuration"],
            f"must be greater than renewDeadline ({le.lease_duration} <= {le.renew_deadline})")
    if not le.resource_lock:
        err(["leaderElection", "resourceLock"], "required (leases)")
    if not le.resource_name:
        err(["leaderElection", "resourceName"], "required")


def ignored_fields(cfg: OperatorConfiguration) -> list[str]:
    """Each field of Grove's OperatorConfiguration set to something Phalanx does not do, as
    `path: why` for a start-up warning (empty when everything set is honoured)."""
    out = []
    if cfg.authorizer.enabled or cfg.authorizer.exempt_service_account_user_names:
        out.append("authorizer: ignored: Phalanx has no authorizer webhook; anyone RBAC "
                   "allows may change the pods and PodCliques it manages")
    if cfg.debugging is not None:
        out.append("debugging: ignored: Phalanx serves no pprof endpoint")
    conn = cfg.runtime_client_connection
    for key, value in (("contentType", conn.content_type),
                       ("acceptContentTypes", conn.accept_content_types)):
        if value:
            out.append(f"runtimeClientConnection.{key}: ignored: Phalanx's client speaks JSON")
    if cfg.cluster_topology is not None:
        out.append("clusterTopology: ignored: not a field of Grove's OperatorConfiguration "
                   "either (Grove's decoder drops it); topology-aware scheduling is "
                   "topologyAwareScheduling.enabled")
    return out


def _check_default_scheduler_config(
    config: dict[str, Any], where: list[str | int], err: Any
) -> None:
    for key, value in config.items():
        if key == "gangScheduling":
            if not isinstance(value, bool):
                err([*where, key], f"must be a boolean (true or false), got {value!r}")
        elif key == "workloadAPIVersion":
            if not isinstance(value, str):
                err(
                    [*where, key],
                    f"must be a string such as scheduling.k8s.io/v1alpha1, got {value!r}",
                )
        elif key == "mismatchPolicy":
            if value not in ("reject", "pass-through"):
                err([*where, key], f'must be "reject" or "pass-through", got {value!r}')
        elif key == "podSchedulingGate":
            if not isinstance(value, bool):
                err([*where, key], f"must be a boolean (true or false), got {value!r}")
            elif not value:
                version = config.get("workloadAPIVersion")
                problem = gate_free_problem(config.get("gangScheduling") is True,
                                            version if isinstance(version, str) else None)
                if problem:
                    err([*where, key], f"false {problem}")
        else:
            hint = suggest(key, DEFAULT_SCHEDULER_CONFIG_KEYS)
            err(
                [*where, key],
                "unknown field for default-scheduler"
                + (f"; did you mean {_q(hint)}?" if hint else "")
                + f" (allowed: {', '.join(DEFAULT_SCHEDULER_CONFIG_KEYS)})",
            )


def _q(name: str) -> str:
    return f'"{name}"'


def load_operator_config(
    source: str | Path | dict[str, Any] | OperatorConfiguration | None = None,
) -> OperatorConfiguration:
    """Parse (a path, YAML text, a dict, or nothing for all defaults), default, validate.

    Raises ConfigError listing every offending field.
    """
    label = None
    if source is None:
        cfg = OperatorConfiguration()
    elif isinstance(source, OperatorConfiguration):
        cfg = source.copy_deep()
    elif isinstance(source, dict):
        label = "OperatorConfiguration"
        try:
            cfg = OperatorConfiguration.model_validate(source)
        except ValidationError as e:
            from .loader import validation_error  # lazy: loader imports the registry

            raise _as_config_error(validation_error(e, OperatorConfiguration, source)) from None
    else:
        from .loader import load_file, load_yaml

        try:
            objs = load_file(source) if isinstance(source, Path) else load_yaml(source)
        except ManifestError as e:
            raise _as_config_error(e) from None
        configs = [o for o in objs if isinstance(o, OperatorConfiguration)]
        label = str(source) if isinstance(source, Path) else None
        if len(configs) != 1 or len(objs) != 1:
            raise ConfigError(
                f"expected exactly one OperatorConfiguration document, found {len(objs)} "
                f"object(s) of which {len(configs)} OperatorConfiguration",
                source=label,
            )
        cfg = configs[0]
    default_operator_config(cfg)
    problems = validate_operator_config(cfg)
    if problems:
        raise ConfigError("invalid OperatorConfiguration", source=label, errors=problems)
    return cfg


def _as_config_error(e: ManifestError) -> ConfigError:
    return ConfigError(e.message, source=e.source, document=e.document, obj=e.obj, errors=e.errors)
