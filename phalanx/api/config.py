"""OperatorConfiguration (operator.config.grove.io/v1alpha1): how the operator runs.

Defaulting and validation follow GREP-375:
- `default-scheduler` is always enabled (added when missing); empty profiles mean
  `[default-scheduler]`; `defaultProfileName` defaults to `default-scheduler` and must name a
  listed profile; profile names are unique and must be known backends;
- `default-scheduler`'s config accepts only `gangScheduling` (bool) and `workloadAPIVersion`
  (a string, checked by the kube backend; only with `gangScheduling: true`, as it does
  nothing without), `mismatchPolicy` and `podSchedulingGate`. Other backends validate
  their own config.

Grove's own OperatorConfiguration files load unchanged (ai-dynamo/grove
operator/cmd/cli/testdata/valid-config*.yaml, and what Grove's Helm chart renders): every
field of Grove's OperatorConfiguration is honoured, or refused naming the field where Grove
refuses it too, or, when set to something Phalanx does not do (`authorizer.enabled`,
`debugging.enableProfiling`, a non-JSON content type), accepted and named by
`ignored_fields` in a warning (`phalanx validate`, `run`, `manifests all` and every
operator replica print it). So are keys Grove's decoder drops: `clusterTopology` (in
Grove's test files) and `authorizer.reconcilerServiceAccountUserName` (rendered by Grove's
chart). Grove's defaulting holds: a 0 port, a null or empty section, a null
`concurrentSyncs`, qps or burst 0 and an empty logLevel / logFormat mean the default
(leader election off, burst 120, as Grove); so does Grove's validation: logLevel debug,
info or error; positive lease timings with leaseDuration > renewDeadline (and client-go's
renewDeadline > 1.2 x retryPeriod), a resourceLock and resourceName, only with leader
election on; burst >= 0; concurrentSyncs > 0. A negative qps means no client-side rate
limit (client-go's rule).

`load_operator_config(...)` does all three steps and raises one `ConfigError` naming every
offending field, e.g. `scheduler.profiles[1].name: duplicate profile "kai-scheduler"`.
The checks are in `config_rules.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from phalanx.ports import OPERATOR_METRICS_PORT, OPERATOR_PROBE_PORT, WEBHOOK_PORT

from .base import KubeModel, Resource
from .config_rules import (
    DEFAULT_SCHEDULER,
    DEFAULT_SCHEDULER_CONFIG_KEYS,
    KNOWN_SCHEDULER_NAMES,
    ignored_fields,
    leader_election_problems,
    register_scheduler_name,
    service_only_fields,
    validate_operator_config,
)
from .duration import DURATION_PATTERN, parse_duration
from .errors import ManifestError

__all__ = [  # the checks live in config_rules.py; imported from here as before
    "DEFAULT_SCHEDULER", "DEFAULT_SCHEDULER_CONFIG_KEYS", "KNOWN_SCHEDULER_NAMES",
    "AuthorizerConfig", "ClientConnectionConfiguration", "ConfigError",
    "ControllerConfiguration", "ControllersConfiguration", "DebuggingConfiguration",
    "LeaderElectionConfiguration", "MetricsServer", "NetworkAcceleration",
    "OperatorConfiguration", "ProbeServer", "SchedulerConfiguration", "SchedulerProfile",
    "Server", "ServerConfiguration", "TopologyAwareSchedulingConfiguration", "WebhookServer",
    "default_operator_config", "ignored_fields", "leader_election_problems",
    "load_operator_config", "register_scheduler_name", "service_only_fields",
    "validate_operator_config",
]


class ConfigError(ManifestError):
    """An invalid OperatorConfiguration; `errors` lists every offending field."""

    permanent_reason = "InvalidConfiguration"


# Phalanx's names for what Grove calls grove-*.
DEFAULT_SERVER_CERT_DIR = "/etc/phalanx-operator/webhook-certs"
DEFAULT_WEBHOOK_SECRET = "phalanx-webhook-server-cert"
DEFAULT_LEASE_NAME = "phalanx-operator-leader-election"
DEFAULT_LEASE_TIMING = {"lease_duration": "15s", "renew_deadline": "10s", "retry_period": "2s"}


def _without_nulls(data: Any) -> Any:
    """Go's decoder leaves a field it reads `null` for at its zero value, which defaulting
    then fills: here a null means the field's default."""
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if v is not None}
    return data


class _Section(KubeModel):
    """A part of the configuration: `null` for any of its fields means the default."""

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_defaults(cls, data: Any) -> Any:
        return _without_nulls(data)


class SchedulerProfile(_Section):
    name: str = Field(min_length=1)
    # Backend-specific options, validated by that backend.
    config: dict[str, Any] | None = None


class SchedulerConfiguration(_Section):
    profiles: list[SchedulerProfile] = Field(default_factory=list)
    default_profile_name: str | None = None

    def profile(self, name: str) -> SchedulerProfile | None:
        for p in self.profiles:
            if p.name == name:
                return p
        return None

    def profile_names(self) -> list[str]:
        return [p.name for p in self.profiles]


class ControllerConfiguration(_Section):
    # Workers reconciling in parallel (distinct keys only, as in controller-runtime).
    concurrent_syncs: int = Field(default=1, ge=1)


def _workers(n: int) -> Any:
    return Field(default_factory=lambda: ControllerConfiguration(concurrent_syncs=n))


class ControllersConfiguration(_Section):
    # Grove's defaults (SetDefaults_*ControllerConfiguration): 10, 10, 5 and 5, also for a
    # controller given without concurrentSyncs (or with null).
    pod_clique_set: ControllerConfiguration = _workers(10)
    pod_clique: ControllerConfiguration = _workers(10)
    pod_clique_scaling_group: ControllerConfiguration = _workers(5)
    # The PodGang controller (status, references) and the backend controller (sync_podgang).
    pod_gang: ControllerConfiguration = _workers(5)

    @model_validator(mode="before")
    @classmethod
    def _unset_syncs_are_defaults(cls, data: Any) -> Any:
        data = _without_nulls(data)
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, info in cls.model_fields.items():
            for key in (info.alias, name):
                section = _without_nulls(out.get(key))
                if isinstance(section, dict) and not {"concurrentSyncs", "concurrent_syncs"} & \
                        section.keys():
                    default = info.default_factory().concurrent_syncs  # type: ignore[call-arg,misc,union-attr]
                    out[key] = {**section, "concurrentSyncs": default}
        return out


class LeaderElectionConfiguration(_Section):
    enabled: bool = False  # Grove's (Go's zero value); the install turns it on
    # 0 (and "" for the lock and name) means the default, as in Grove.
    lease_duration: str = Field(default="15s", pattern=DURATION_PATTERN)
    renew_deadline: str = Field(default="10s", pattern=DURATION_PATTERN)
    retry_period: str = Field(default="2s", pattern=DURATION_PATTERN)
    resource_lock: Literal["leases", ""] = "leases"
    resource_name: str = DEFAULT_LEASE_NAME
    # The Lease's namespace only (not the webhook Secret's); the operator's own when unset.
    resource_namespace: str | None = None


class Server(_Section):
    """A listener: `bindAddress` "" means every address; port 0 means the default."""

    DEFAULT_PORT: ClassVar[int] = 0
    bind_address: str = ""
    port: int = Field(default=0, ge=0, le=65535)

    @field_validator("port")
    @classmethod
    def _zero_is_default(cls, port: int) -> int:
        return port or cls.DEFAULT_PORT


class ProbeServer(Server):
    DEFAULT_PORT: ClassVar[int] = OPERATOR_PROBE_PORT
    port: int = Field(default=OPERATOR_PROBE_PORT, ge=0, le=65535)


class MetricsServer(Server):
    DEFAULT_PORT: ClassVar[int] = OPERATOR_METRICS_PORT
    port: int = Field(default=OPERATOR_METRICS_PORT, ge=0, le=65535)


class WebhookServer(Server):
    DEFAULT_PORT: ClassVar[int] = WEBHOOK_PORT
    port: int = Field(default=WEBHOOK_PORT, ge=0, le=65535)
    # "" means the default, as in Grove.
    server_cert_dir: str = DEFAULT_SERVER_CERT_DIR
    secret_name: str = DEFAULT_WEBHOOK_SECRET
    cert_provision_mode: Literal["auto", "manual", ""] = "auto"


class ServerConfiguration(_Section):
    webhooks: WebhookServer = Field(default_factory=WebhookServer)
    health_probes: ProbeServer = Field(default_factory=ProbeServer)
    metrics: MetricsServer = Field(default_factory=MetricsServer)


DEFAULT_QPS, DEFAULT_BURST = 100.0, 120  # Grove's SetDefaults_ClientConnectionConfiguration


class ClientConnectionConfiguration(_Section):
    # 0: the default; below 0: no client-side limit (client-go's rule).
    qps: float = DEFAULT_QPS
    burst: int = Field(default=DEFAULT_BURST, ge=0)  # 0: the default
    # Grove's client content types: Phalanx's client always speaks JSON.
    content_type: str | None = None
    accept_content_types: str | None = None


class TopologyAwareSchedulingConfiguration(_Section):
    enabled: bool = False


class AuthorizerConfig(_Section):
    """Grove's authorizer webhook (who may change Grove-managed pods); Phalanx has none."""

    enabled: bool = False
    exempt_service_account_user_names: list[str] | None = None
    # Rendered by Grove's Helm chart, not a field of Grove's AuthorizerConfig (its decoder
    # drops it): accepted so that chart's output loads.
    reconciler_service_account_user_name: str | None = None


class NetworkAcceleration(_Section):
    """Grove's automatic multi-node NVLink: a ComputeDomain per PodCliqueSet replica and
    `grove.io/mnnvl-group` (phalanx/operator/computedomain.py)."""

    auto_mnnvl_enabled: bool = Field(default=False, alias="autoMNNVLEnabled")


class DebuggingConfiguration(_Section):
    enable_profiling: bool | None = None
    pprof_bind_host: str | None = None
    pprof_bind_port: int | None = None


class LegacyClusterTopologyConfig(KubeModel):
    """`clusterTopology`: in Grove's own test configuration files, not a field of Grove's
    OperatorConfiguration (its decoder drops it); accepted and named as ignored."""

    model_config = ConfigDict(extra="allow")


class OperatorConfiguration(Resource):
    """Read from a file at start-up (not an API object: it is not served by any server)."""

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_defaults(cls, data: Any) -> Any:
        return _without_nulls(data)

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
    # "" means the default, as in Grove, whose levels these are (no "warn").
    log_level: Literal["debug", "info", "error", ""] = "info"
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
    "zero means default" (SetDefaults_*) for the client's qps and burst, the Lease's timing,
    lock and name, the webhook's certificate settings, and the log level and format (ports
    and controllers are defaulted as they are read)."""
    le = cfg.leader_election
    for key, value in DEFAULT_LEASE_TIMING.items():
        if parse_duration(getattr(le, key)) == 0:
            setattr(le, key, value)
    le.resource_lock = le.resource_lock or "leases"
    le.resource_name = le.resource_name or DEFAULT_LEASE_NAME
    hooks = cfg.server.webhooks
    hooks.server_cert_dir = hooks.server_cert_dir or DEFAULT_SERVER_CERT_DIR
    hooks.secret_name = hooks.secret_name or DEFAULT_WEBHOOK_SECRET
    hooks.cert_provision_mode = hooks.cert_provision_mode or "auto"
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
