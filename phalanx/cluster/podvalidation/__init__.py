"""Pod validation as kube-apiserver 1.36 does it, for every pod field the scheduler reads.

`pod_spec_errors(spec, path)` returns every problem of a PodSpec as (field path, message)
pairs, paths exactly as the API server reports them
(`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
.nodeSelectorTerms[0].matchFields[0].values`) and in the API server's order, so the first
error names the same field a real cluster names. `pod_create_errors(pod)` adds the rules
that hold only when a pod is created. The same functions check pod templates (a
PodCliqueSet's cliques) under the template's path.

By area: volumes and resource claims (`volumes.py`), containers' ports, mounts, resources
and claim references (`containers.py`, `podresources.py`), node selector and affinity
(`affinity.py`, `labelselector.py`), tolerations (`tolerations.py`), topology spread
(`spread.py`); the wording helpers are in `fielderrors.py`.

Container names and images, termination message policy, init restartPolicy, probes,
spec.os, DNS policy, hostname/subdomain, activeDeadlineSeconds, serviceAccountName,
imagePullSecrets and shareProcessNamespace/hostPID: `general.py`.
Not checked yet: env, security contexts beyond the above, dnsConfig contents, hostAliases,
readinessGates, resizePolicy, subPath, and the fields inside volume sources other than
persistentVolumeClaim and ephemeral.

A pod with none of these fields costs a few attribute reads: every area is skipped when
its field is empty.
"""

from __future__ import annotations

from typing import Any

from phalanx.cluster.podresources import overhead_errors, pod_level_resource_errors

from .affinity import affinity_errors
from .containers import container_errors, host_network_errors
from .fielderrors import (
    FieldErrors,
    dns_subdomain_errors,
    duplicate,
    each_invalid,
    forbidden,
    qualified_name_errors,
)
from .general import general_spec_errors
from .labelselector import label_map_errors
from .spread import spread_errors
from .tolerations import toleration_errors
from .volumes import resource_claim_errors, volume_errors

_NO_NAMES: tuple[str, ...] = ()
_MIRROR = "kubernetes.io/config.mirror"


def pod_spec_errors(spec: Any, path: str = "spec", *, pod_name: str | None = None,
                    mirror: bool = False) -> FieldErrors:
    """Every problem of a PodSpec (phalanx.api.pod.PodSpec) at `path`. `pod_name` (a pod,
    not a template) also checks the claim names its ephemeral volumes will get; `mirror`:
    the pod mirrors a static pod (annotation kubernetes.io/config.mirror)."""
    errs: FieldErrors = general_spec_errors(spec, path)  # general.py
    volumes: list[str] | tuple[str, ...] = _NO_NAMES
    claims: list[str] | tuple[str, ...] = _NO_NAMES
    if spec.volumes:
        volumes, found = volume_errors(spec.volumes, f"{path}.volumes", pod_name)
        errs += found
    if spec.resource_claims:
        claims, found = resource_claim_errors(spec.resource_claims, f"{path}.resourceClaims",
                                              mirror=mirror)
        errs += found
    host_network = bool(spec.host_network)
    errs += container_errors(spec.containers, f"{path}.containers", volumes, claims,
                             host_network=host_network)
    if spec.init_containers:
        errs += container_errors(spec.init_containers, f"{path}.initContainers", volumes,
                                 claims, init=True, host_network=host_network)
    if spec.resources is not None:
        errs += pod_level_resource_errors(spec, path)
    if host_network:
        errs += host_network_errors(spec.containers, f"{path}.containers")
    if spec.node_selector:
        errs += label_map_errors(spec.node_selector, f"{path}.nodeSelector")
    if spec.affinity is not None:
        errs += affinity_errors(spec.affinity, f"{path}.affinity")
    if spec.scheduling_gates:
        errs += scheduling_gate_errors(spec.scheduling_gates, f"{path}.schedulingGates")
    if spec.topology_spread_constraints:
        errs += spread_errors(spec.topology_spread_constraints,
                              f"{path}.topologySpreadConstraints")
    if spec.node_name:
        errs += each_invalid(f"{path}.nodeName", spec.node_name,
                             dns_subdomain_errors(spec.node_name))
    if spec.tolerations:
        errs += toleration_errors(spec.tolerations, f"{path}.tolerations")
    if spec.overhead:
        errs += overhead_errors(spec.overhead, f"{path}.overhead")
    group = spec.scheduling_group
    if group is not None:
        errs += each_invalid(f"{path}.schedulingGroup.podGroupName", group.pod_group_name,
                             dns_subdomain_errors(group.pod_group_name))
    return errs


def pod_create_errors(pod: Any) -> FieldErrors:
    """Every problem of a pod being created: its spec, then the create-only rules (no
    ephemeral containers yet; no nodeName while scheduling gates remain)."""
    spec = pod.spec
    annotations = pod.metadata.annotations or {}
    errs = pod_spec_errors(spec, "spec", pod_name=pod.metadata.name,
                           mirror=_MIRROR in annotations)
    if spec.ephemeral_containers:  # added later, through their own subresource
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.node_name and spec.scheduling_gates:
        errs.append(forbidden("spec.nodeName",
                              "cannot be set until all schedulingGates have been cleared"))
    return errs


def scheduling_gate_errors(gates: Any, path: str) -> FieldErrors:
    """Gate names are qualified names (like label keys), each listed once."""
    errs: FieldErrors = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        name = gate if isinstance(gate, str) else gate.name
        whys = qualified_name_errors(name)
        if whys:
            errs += each_invalid(f"{path}[{i}]", name, whys)
        if name in seen:
            errs.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return errs


__all__ = ["FieldErrors", "pod_create_errors", "pod_spec_errors", "scheduling_gate_errors"]
