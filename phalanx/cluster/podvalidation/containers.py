"""What kube-apiserver checks per container that the scheduler relies on: ports (ranges,
unique names, host ports not used twice), volume mounts naming a pod volume, resources
(`podresources.py`) and the resource claims a container uses.

Checks of containers the scheduler never reads (image, names, probes, env, security
context) are left out: pods built in tests and simulations often carry no image.
Per container the order is the API server's (ports, volume mounts, resources, claims), so
the first error names the same field.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from phalanx.cluster.podresources import container_resource_errors

from .fielderrors import (
    FieldErrors,
    dns_label_errors,
    duplicate,
    each_invalid,
    invalid,
    not_found,
    required,
)

_PORT_RANGE = "must be between 1 and 65535, inclusive"


def container_errors(containers: Sequence[Any], path: str, volumes: Collection[str],
                     claims: Collection[str], *, init: bool = False,
                     host_network: bool = False) -> FieldErrors:
    """Containers or init containers at `path` (spec.containers, spec.initContainers).
    `volumes`: names of the pod's valid volumes; `claims`: its resource claim names.
    App containers run together, so their host ports must differ across the list; init
    containers run one at a time, so only within each."""
    errs: FieldErrors = []
    for i, c in enumerate(containers):
        if not (c.ports or c.volume_mounts or c.resources is not None):
            continue
        at = f"{path}[{i}]"
        if c.ports:
            errs += port_errors(c.ports, f"{at}.ports")
        if c.volume_mounts:
            errs += volume_mount_errors(c.volume_mounts, f"{at}.volumeMounts", volumes)
        res = c.resources
        if res is not None:
            if res.requests or res.limits:
                errs += container_resource_errors(res, f"{at}.resources")
            if res.claims:
                errs += claim_reference_errors(res.claims, f"{at}.resources.claims", claims)
        if init and c.ports:
            errs += host_port_conflicts([c], path, host_network, first=i)
    if not init and any(c.ports for c in containers):
        errs += host_port_conflicts(containers, path, host_network)
    return errs


def port_errors(ports: Sequence[Any], path: str) -> FieldErrors:
    errs: FieldErrors = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = f"{path}[{i}]"
        if port.name:
            whys = port_name_errors(port.name)
            if whys:
                errs += each_invalid(f"{at}.name", port.name, whys)
            elif port.name in names:
                errs.append(duplicate(f"{at}.name", port.name))
            else:
                names.add(port.name)
        if port.container_port == 0:
            errs.append(required(f"{at}.containerPort"))
        elif not 1 <= port.container_port <= 65535:
            errs.append(invalid(f"{at}.containerPort", port.container_port, _PORT_RANGE))
        if port.host_port and not 1 <= port.host_port <= 65535:
            errs.append(invalid(f"{at}.hostPort", port.host_port, _PORT_RANGE))
    return errs


def port_name_errors(name: str) -> list[str]:
    """An IANA service name: at most 15 characters, a-z, 0-9 and single inner hyphens, at
    least one letter."""
    errs = ["must be no more than 15 bytes"] if len(name) > 15 else []
    if not name or any(not (ch.isascii() and (ch.islower() or ch.isdigit() or ch == "-"))
                       for ch in name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= ch <= "z" for ch in name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def host_port(port: Any, host_network: bool) -> int:
    """The host port a container port takes: on the host network an unset hostPort is the
    containerPort (the API server fills it in)."""
    if port.host_port:
        return int(port.host_port)
    return int(port.container_port) if host_network else 0


def host_port_conflicts(containers: Sequence[Any], path: str, host_network: bool,
                        first: int = 0) -> FieldErrors:
    """A host port (per protocol and host IP) may be taken once."""
    errs: FieldErrors = []
    taken: set[str] = set()
    for ci, c in enumerate(containers, start=first):
        for pi, port in enumerate(c.ports or ()):
            number = host_port(port, host_network)
            if not number:
                continue
            key = f"{port.protocol or 'TCP'}/{port.host_ip or ''}/{number}"
            if key in taken:
                errs.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            taken.add(key)
    return errs


def host_network_errors(containers: Sequence[Any], path: str) -> FieldErrors:
    """On the host network a container port is its host port: a different hostPort is
    refused (app containers only, as the API server checks)."""
    errs: FieldErrors = []
    for i, c in enumerate(containers):
        for j, port in enumerate(c.ports or ()):
            if port.host_port and port.host_port != port.container_port:
                errs.append(invalid(f"{path}[{i}].ports[{j}].hostPort", port.host_port,
                                    "must match `containerPort` when `hostNetwork` is true"))
    return errs


def volume_mount_errors(mounts: Sequence[Any], path: str,
                        volumes: Collection[str]) -> FieldErrors:
    errs: FieldErrors = []
    paths: set[str] = set()
    for i, mount in enumerate(mounts):
        at = f"{path}[{i}]"
        mount = mount if isinstance(mount, dict) else {}
        name, mount_path = mount.get("name") or "", mount.get("mountPath") or ""
        if not name:
            errs.append(required(f"{at}.name"))
        if name not in volumes:
            errs.append(not_found(f"{at}.name", name))
        if not mount_path:
            errs.append(required(f"{at}.mountPath"))
        if mount_path in paths:
            errs.append(invalid(f"{at}.mountPath", mount_path, "must be unique"))
        paths.add(mount_path)
    return errs


def claim_reference_errors(refs: Sequence[Any], path: str,
                           claims: Collection[str]) -> FieldErrors:
    """resources.claims: each names one of spec.resourceClaims (optionally one request of
    it), and nothing is referenced twice."""
    errs: FieldErrors = []
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        at = f"{path}[{i}]"
        ref = ref if isinstance(ref, dict) else {}
        name = ref.get("name") or ""
        if not name:
            errs.append(required(at))
            continue
        if name in seen:
            errs.append(duplicate(at, name))
        else:
            key, request = name, ref.get("request") or ""
            if request:
                errs += each_invalid(f"{at}.request", request, dns_label_errors(request))
                key = f"{name}/{request}"
            if key in seen:
                errs.append(duplicate(at, key))
            elif not request:
                # The whole claim, after one of its requests: the request is named twice.
                errs += [duplicate(at, name) for k in seen if k.partition("/")[0] == name
                         and "/" in k]
            seen.add(key)
        if name not in claims:
            listed = ": " + ", ".join(sorted(set(claims))) if claims else " which is empty"
            errs.append(not_found(at, name, "must be one of the names in "
                                            f"pod.spec.resourceClaims{listed}"))
    return errs
