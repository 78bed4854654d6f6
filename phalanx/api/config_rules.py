"""OperatorConfiguration checks after defaulting (phalanx/api/config.py holds the models):
Grove's validation (operator/api/config/validation), GREP-375's for the scheduler profiles,
client-go's rule for the Lease timing, and the fields Phalanx accepts but does not act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .duration import parse_duration
from .errors import FieldError, format_path, suggest
from .workload_versions import gate_free_problem

if TYPE_CHECKING:
    from .config import LeaderElectionConfiguration, OperatorConfiguration

DEFAULT_SCHEDULER = "default-scheduler"

# Scheduler backend names a profile may use. The one list: the backends package extends it
# with `register_scheduler_name` when it adds a backend (scheduler-plugins), so a caller
# that validates a configuration imports `phalanx.backends` first.
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

# client-go's leaderelection.JitterFactor: NewLeaderElector refuses renewDeadline <=
# retryPeriod * JitterFactor, so Grove's operator fails to start with such values.
LEASE_JITTER_FACTOR = 1.2


def register_scheduler_name(name: str) -> None:
    """Make `name` a valid profile name (idempotent)."""
    if name not in KNOWN_SCHEDULER_NAMES:
        KNOWN_SCHEDULER_NAMES.append(name)


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
    errors += leader_election_problems(cfg.leader_election)
    return errors


def leader_election_problems(le: LeaderElectionConfiguration) -> list[FieldError]:
    """Grove's checks, only with leader election on, plus client-go's rule for the retry
    period (which Grove's operator meets only when it starts; said here instead)."""
    if not le.enabled:
        return []
    out: list[FieldError] = []

    def err(key: str, message: str) -> None:
        out.append(FieldError(f"leaderElection.{key}", message))

    seconds = {}
    for key, value in (("leaseDuration", le.lease_duration), ("renewDeadline", le.renew_deadline),
                       ("retryPeriod", le.retry_period)):
        seconds[key] = parse_duration(value)
        if seconds[key] <= 0:
            err(key, f"must be greater than 0, got {value!r}")
    if seconds["leaseDuration"] <= seconds["renewDeadline"]:
        err("leaseDuration",
            f"must be greater than renewDeadline ({le.lease_duration} <= {le.renew_deadline})")
    retry = seconds["retryPeriod"]
    if retry > 0 and seconds["renewDeadline"] > 0 and \
            seconds["renewDeadline"] <= retry * LEASE_JITTER_FACTOR:
        err("renewDeadline",
            f"must be greater than retryPeriod x {LEASE_JITTER_FACTOR:g} (client-go's "
            f"JitterFactor: {le.renew_deadline} <= {retry * LEASE_JITTER_FACTOR:g}s)")
    if not le.resource_lock:
        err("resourceLock", "required (leases)")
    if not le.resource_name:
        err("resourceName", "required")
    return out


JSON = "application/json"


def ignored_fields(cfg: OperatorConfiguration) -> list[str]:
    """Each field of Grove's OperatorConfiguration set to something Phalanx does not do, as
    `path: why` for a warning (empty when everything set is honoured). `phalanx validate`,
    `run` and `manifests all` print them, and every operator replica logs them."""
    out = []
    if cfg.authorizer.enabled:
        out.append("authorizer.enabled: ignored: Phalanx has no authorizer webhook; anyone "
                   "RBAC allows may change the pods and PodCliques it manages")
    if cfg.debugging is not None and cfg.debugging.enable_profiling:
        out.append("debugging.enableProfiling: ignored: Phalanx serves no pprof endpoint")
    conn = cfg.runtime_client_connection
    if conn.content_type and conn.content_type != JSON:
        out.append("runtimeClientConnection.contentType: ignored: Phalanx's client speaks JSON")
    if conn.accept_content_types and JSON not in [
            t.strip() for t in conn.accept_content_types.split(",")]:
        out.append("runtimeClientConnection.acceptContentTypes: ignored: Phalanx's client "
                   "accepts JSON only")
    if cfg.cluster_topology is not None:
        out.append("clusterTopology: ignored: not a field of Grove's OperatorConfiguration "
                   "either (Grove's decoder drops it); topology-aware scheduling is "
                   "topologyAwareScheduling.enabled")
    return out


# Settings of the long-running service (`phalanx operator`): how it listens, elects, talks
# to the API server and logs. The embedded cluster of `phalanx run` has none of these.
SERVICE_ONLY_FIELDS = ("server", "leader_election", "runtime_client_connection", "log_level",
                       "log_format")


def service_only_fields(cfg: OperatorConfiguration) -> list[str]:
    """The service-only sections (camelCase) set to something other than their default."""
    from .config import OperatorConfiguration, default_operator_config

    base = default_operator_config(OperatorConfiguration())
    fields = type(cfg).model_fields
    return [fields[name].alias or name for name in SERVICE_ONLY_FIELDS
            if getattr(cfg, name) != getattr(base, name)]


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
            elif config.get("gangScheduling", False) is False:
                # Without gang scheduling no Workload API object is written: it would do
                # nothing (a non-boolean gangScheduling is reported on its own).
                err([*where, key], "has no effect without gangScheduling: true (only gang "
                    "scheduling writes Workload API objects); set gangScheduling: true or "
                    "remove it")
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
