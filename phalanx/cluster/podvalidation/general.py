"""PodSpec rules kube-apiserver 1.36 applies that no scheduler reads
(pkg/apis/core/validation/validation.go): container names and images, termination message
policy, init containers' restartPolicy, probe handlers and counters, spec.os, dnsPolicy,
hostname / subdomain, activeDeadlineSeconds, serviceAccountName, imagePullSecrets and
shareProcessNamespace with hostPID. Paths and messages are kube's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .fielderrors import (
    FieldErrors,
    dns_label_errors,
    dns_subdomain_errors,
    duplicate,
    each_invalid,
    forbidden,
    invalid,
    not_supported,
    required,
)

_INT32 = 2147483647
_NEGATIVE = "must be greater than or equal to 0"
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")
_PROBES = (("liveness_probe", "livenessProbe"), ("readiness_probe", "readinessProbe"),
           ("startup_probe", "startupProbe"))
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")


def general_spec_errors(spec: Any, path: str) -> FieldErrors:
    errs: FieldErrors = []
    names: set[str] = set()
    errs += _containers(spec.containers, f"{path}.containers", names, init=False)
    if spec.init_containers:
        errs += _containers(spec.init_containers, f"{path}.initContainers", names, init=True)
    if spec.os is not None:
        name = spec.os.get("name") if isinstance(spec.os, dict) else None
        if not name:
            errs.append(required(f"{path}.os.name"))
        elif name not in ("linux", "windows"):
            errs.append(not_supported(f"{path}.os", name, ("linux", "windows")))
    if spec.dns_policy is not None:
        if spec.dns_policy not in _DNS_POLICIES:
            errs.append(not_supported(f"{path}.dnsPolicy", spec.dns_policy, _DNS_POLICIES))
        elif spec.dns_policy == "None" and spec.dns_config is None:
            errs.append(required(f"{path}.dnsConfig",
                                 "must provide `dnsConfig` when `dnsPolicy` is None"))
    if spec.service_account_name:
        errs += each_invalid(f"{path}.serviceAccountName", spec.service_account_name,
                             dns_subdomain_errors(spec.service_account_name))
    if spec.active_deadline_seconds is not None \
            and not 1 <= spec.active_deadline_seconds <= _INT32:
        errs.append(invalid(f"{path}.activeDeadlineSeconds", spec.active_deadline_seconds,
                            f"must be between 1 and {_INT32}, inclusive"))
    if spec.hostname:
        errs += each_invalid(f"{path}.hostname", spec.hostname,
                             dns_label_errors(spec.hostname))
    if spec.subdomain:
        errs += each_invalid(f"{path}.subdomain", spec.subdomain,
                             dns_label_errors(spec.subdomain))
    for i, secret in enumerate(spec.image_pull_secrets or ()):
        if not (isinstance(secret, dict) and secret.get("name")):
            errs.append(required(f"{path}.imagePullSecrets[{i}].name"))
    if spec.share_process_namespace and spec.host_pid:
        errs.append(invalid(f"{path}.securityContext.shareProcessNamespace", True,
                            "ShareProcessNamespace and HostPID cannot both be enabled"))
    return errs


def _containers(containers: Sequence[Any], path: str, names: set[str], *,
                init: bool) -> FieldErrors:
    errs: FieldErrors = []
    for i, c in enumerate(containers):
        at = f"{path}[{i}]"
        if not c.name:
            errs.append(required(f"{at}.name"))
        else:
            errs += each_invalid(f"{at}.name", c.name, dns_label_errors(c.name))
            if c.name in names:
                errs.append(duplicate(f"{at}.name", c.name))
            names.add(c.name)
        if not c.image:
            errs.append(required(f"{at}.image"))
        policy = c.termination_message_policy
        if policy is not None and policy not in ("File", "FallbackToLogsOnError"):
            errs.append(not_supported(f"{at}.terminationMessagePolicy", policy,
                                      ("File", "FallbackToLogsOnError")))
        sidecar = c.restart_policy == "Always"
        if init and c.restart_policy is not None \
                and c.restart_policy not in ("Always", "Never", "OnFailure"):
            errs.append(not_supported(f"{at}.restartPolicy", c.restart_policy,
                                      ("Always", "Never", "OnFailure")))
        for attr, key in _PROBES:
            probe = getattr(c, attr)
            if probe is None:
                continue
            if init and not sidecar:
                errs.append(forbidden(f"{at}.{key}", "may not be set for init containers "
                                                     "without restartPolicy=Always"))
                continue
            errs += probe_errors(probe, f"{at}.{key}")
    return errs


def probe_errors(probe: Any, path: str) -> FieldErrors:
    probe = probe if isinstance(probe, dict) else {}
    errs = handler_errors(probe, path)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"):
        value = probe.get(key)
        if isinstance(value, int) and value < 0:
            errs.append(invalid(f"{path}.{key}", value, _NEGATIVE))
    grace = probe.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace <= 0:
        errs.append(invalid(f"{path}.terminationGracePeriodSeconds", grace,
                            "must be greater than 0"))
    return errs


def handler_errors(handler: dict[str, Any], path: str) -> FieldErrors:
    """Exactly one handler type (validateHandler)."""
    errs: FieldErrors = []
    count = 0
    for key in _HANDLERS:
        if handler.get(key) is None:
            continue
        if count:
            errs.append(forbidden(f"{path}.{key}", "may not specify more than 1 handler type"))
        count += 1
    if not count:
        errs.append(required(path, "must specify a handler type"))
    return errs
