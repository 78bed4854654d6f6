"""Container ports, host ports, volume mounts and container resources, ported from kube
1.36's validation_test.go (ids = kube's row names):
- TestValidatePorts (all rows);
- TestValidateContainers: "same-host-port-different-protocol" (valid), "host port not
  unique", "unknown volume name", and its resource rows;
- TestValidateInitContainers: "duplicate ports", and its valid same-port/other-protocol
  container;
- TestValidatePodSpec: "with hostNetwork hostPort unspecified", "with hostNetwork hostPort
  not equal to containerPort".

kube's rows call the validation functions on internal objects, before the API server's
defaulting; these rows go through pod creation. So: "protocol required" is accepted (an
unset protocol is TCP), and "with hostNetwork hostPort unspecified" is accepted (on the host
network an unset hostPort becomes the containerPort); a real server does the same (the
real-tier differential test sends both). "invalid protocol case" and "invalid protocol"
are refused when the pod is loaded (the protocol is an enum in the model), at the same
field.

Not ported: the other TestValidateContainers / TestValidateInitContainers rows (names,
images, env, probes, lifecycle, termination message policy, security context, resize
policy, restart policy): the scheduler reads none of them, and they are not validated here.
"""

from __future__ import annotations

from typing import Any

import pytest

from .podvalidation_cases import create_verdict, fields, pod_json, spec_errors


def ctr(name: str = "ctr", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "image", **extra}


def one_port(**port: Any) -> dict[str, Any]:
    return {"containers": [ctr(ports=[port])]}


P = "spec.containers[0].ports[0]"

PORTS_VALID = [
    {"name": "abc", "containerPort": 80, "hostPort": 80, "protocol": "TCP"},
    {"name": "easy", "containerPort": 82, "protocol": "TCP"},
    {"name": "as", "containerPort": 83, "protocol": "UDP"},
    {"name": "do-re-me", "containerPort": 84, "protocol": "SCTP"},
    {"containerPort": 85, "protocol": "TCP"},
]


def test_validate_ports_success_case() -> None:
    assert create_verdict(pod_json({"containers": [ctr(ports=PORTS_VALID)]})) is None


def test_validate_ports_non_canonical_case() -> None:
    assert create_verdict(pod_json(one_port(containerPort=80, protocol="TCP"))) is None


PORT_ERRORS = {
    "name > 15 characters": (
        [{"name": "a" * 16, "containerPort": 80, "protocol": "TCP"}], "name", "15"),
    "name contains invalid characters": (
        [{"name": "a.b.c", "containerPort": 80, "protocol": "TCP"}], "name", "alpha-numeric"),
    "name is a number": (
        [{"name": "80", "containerPort": 80, "protocol": "TCP"}], "name",
        "at least one letter"),
    "name not unique": (
        [{"name": "abc", "containerPort": 80, "protocol": "TCP"},
         {"name": "abc", "containerPort": 81, "protocol": "TCP"}], "[1].name", ""),
    "zero container port": ([{"containerPort": 0, "protocol": "TCP"}], "containerPort", ""),
    "invalid container port": (
        [{"containerPort": 65536, "protocol": "TCP"}], "containerPort", "between"),
    "invalid host port": (
        [{"containerPort": 80, "hostPort": 65536, "protocol": "TCP"}], "hostPort", "between"),
    "invalid protocol case": ([{"containerPort": 80, "protocol": "tcp"}], "protocol", ""),
    "invalid protocol": ([{"containerPort": 80, "protocol": "ICMP"}], "protocol", ""),
}


@pytest.mark.parametrize("ports,field,detail", PORT_ERRORS.values(), ids=PORT_ERRORS.keys())
def test_validate_ports_error_cases(ports: list[dict[str, Any]], field: str,
                                    detail: str) -> None:
    err = create_verdict(pod_json({"containers": [ctr(ports=ports)]}))
    assert err is not None, "the pod was created"
    assert field in err.field and err.field.startswith("spec.containers[0].ports[")
    assert detail in err.message


def test_validate_ports_protocol_required() -> None:
    """kube: Required on the internal object; through the API the protocol defaults to TCP,
    and a pod without one is created."""
    assert create_verdict(pod_json(one_port(name="abc", containerPort=80))) is None


CONTAINERS = {
    "same-host-port-different-protocol": ([ctr("same-host-port-different-protocol", ports=[
        {"containerPort": 80, "hostPort": 80, "protocol": "TCP"},
        {"containerPort": 80, "hostPort": 80, "protocol": "UDP"}])], []),
    "host port not unique": (
        [ctr("abc", ports=[{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}]),
         ctr("def", ports=[{"containerPort": 81, "hostPort": 80, "protocol": "TCP"}])],
        ["field.containers[1].ports[0].hostPort"]),
    "unknown volume name": (
        [ctr("abc", volumeMounts=[{"name": "anything", "mountPath": "/foo"}])],
        ["field.containers[0].volumeMounts[0].name"]),
    "invalid compute resource": (
        [ctr("abc-123", resources={"limits": {"disk": "10G"}})],
        ["field.containers[0].resources.limits[disk]"]),
    "Resource CPU invalid": (
        [ctr("abc-123", resources={"limits": {"cpu": "-10", "memory": "0"}})],
        ["field.containers[0].resources.limits[cpu]"]),
    "Resource Requests CPU invalid": (
        [ctr("abc-123", resources={"requests": {"cpu": "-10", "memory": "0"}})],
        ["field.containers[0].resources.requests[cpu]"]),
    "Resource Memory invalid": (
        [ctr("abc-123", resources={"limits": {"cpu": "0", "memory": "-10"}})],
        ["field.containers[0].resources.limits[memory]"]),
    "Request limit simple invalid": (
        [ctr("abc-123", resources={"limits": {"cpu": "5", "memory": "3"},
                                   "requests": {"cpu": "6", "memory": "3"}})],
        ["field.containers[0].resources.requests"]),
    "Invalid storage limit request": (
        [ctr("abc-123", resources={"limits": {"attachable-volumes-aws-ebs": 10}})],
        ["field.containers[0].resources.limits[attachable-volumes-aws-ebs]"]),
    "CPU request limit multiple invalid": (
        [ctr("abc-123", resources={"limits": {"cpu": "5", "memory": "3"},
                                   "requests": {"cpu": "6", "memory": "3"}})],
        ["field.containers[0].resources.requests"]),
    "Memory request limit multiple invalid": (
        [ctr("abc-123", resources={"limits": {"cpu": "5", "memory": "3"},
                                   "requests": {"cpu": "5", "memory": "4"}})],
        ["field.containers[0].resources.requests"]),
}


@pytest.mark.parametrize("containers,want", CONTAINERS.values(), ids=CONTAINERS.keys())
def test_validate_containers(containers: list[dict[str, Any]], want: list[str]) -> None:
    """kube lists some of these twice at one field (name and quantity checks); the fields
    are compared once each."""
    got = fields(spec_errors({"containers": containers}))
    assert list(dict.fromkeys(got)) == want


INIT = {
    "valid init container with the same port on two protocols": (
        [ctr("abc", ports=[{"containerPort": 80, "hostPort": 80, "protocol": "TCP"},
                           {"containerPort": 80, "hostPort": 80, "protocol": "UDP"}])], []),
    "duplicate ports": (
        [ctr("abc", ports=[{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
                           {"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}])],
        [("field.initContainers[0].ports[1].hostPort", 'Duplicate value: "TCP//8080"')]),
}


@pytest.mark.parametrize("init,want", INIT.values(), ids=INIT.keys())
def test_validate_init_containers(init: list[dict[str, Any]],
                                  want: list[tuple[str, str]]) -> None:
    assert spec_errors({"initContainers": init}) == want


def test_init_containers_run_alone_so_may_share_a_host_port() -> None:
    port = {"containerPort": 80, "hostPort": 80}
    assert spec_errors({"initContainers": [ctr("a", ports=[port]), ctr("b", ports=[port])],
                        "containers": [ctr(ports=[port])]}) == []


HOST_NETWORK = {
    "with hostNetwork hostPort unspecified": (
        {"containerPort": 2600, "protocol": "TCP"}, None),
    "with hostNetwork hostPort not equal to containerPort": (
        {"containerPort": 2600, "hostPort": 8080, "protocol": "TCP"}, f"{P}.hostPort"),
}


@pytest.mark.parametrize("port,field", HOST_NETWORK.values(), ids=HOST_NETWORK.keys())
def test_host_network_ports(port: dict[str, Any], field: str | None) -> None:
    err = create_verdict(pod_json({"hostNetwork": True, "containers": [ctr(ports=[port])]}))
    assert (err and err.field) == field
    if err is not None:
        assert "must match `containerPort` when `hostNetwork` is true" in err.message


def test_on_the_host_network_container_ports_are_host_ports() -> None:
    """Two containers both listening on 80 on the host network take host port 80 twice."""
    two = [ctr("a", ports=[{"containerPort": 80}]), ctr("b", ports=[{"containerPort": 80}])]
    assert fields(spec_errors({"hostNetwork": True, "containers": two})) == [
        "field.containers[1].ports[0].hostPort"]
    assert spec_errors({"containers": two}) == []


def test_volume_mounts() -> None:
    vols = [{"name": "data", "emptyDir": {}}]
    assert spec_errors({"volumes": vols, "containers": [ctr(volumeMounts=[
        {"name": "data", "mountPath": "/a"}])]}) == []
    errs = spec_errors({"volumes": vols, "containers": [ctr(volumeMounts=[
        {"name": "data", "mountPath": "/a"}, {"name": "data", "mountPath": "/a"},
        {"name": "", "mountPath": ""}])]})
    assert fields(errs) == ["field.containers[0].volumeMounts[1].mountPath",
                            "field.containers[0].volumeMounts[2].name",
                            "field.containers[0].volumeMounts[2].name",
                            "field.containers[0].volumeMounts[2].mountPath"]


def test_ports_are_checked_before_resources_as_kube_orders_them() -> None:
    err = create_verdict(pod_json({"containers": [ctr(
        ports=[{"containerPort": 0}], resources={"limits": {"cpu": "-1"}})]}))
    assert err is not None and err.field == "spec.containers[0].ports[0].containerPort"
    assert "spec.containers[0].resources.limits[cpu]" in err.message
