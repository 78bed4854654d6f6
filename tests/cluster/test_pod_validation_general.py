"""PodSpec rules kube-apiserver 1.36 applies that no scheduler reads
(phalanx/cluster/podvalidation/general.py; kube's pkg/apis/core/validation/validation.go:
validateContainers / validateInitContainers, validateProbe / validateHandler, validateOS,
validateDNSPolicy, ValidatePodSpec's hostname, subdomain, activeDeadlineSeconds,
serviceAccountName, imagePullSecrets and shareProcessNamespace checks), with kube's field
paths and words. A pod kube would refuse is refused by the embedded API server, and a
PodCliqueSet template that would make such pods is refused at its field (the same rules).

Not ported as kube's rows: validation_test.go builds these cases inside large
TestValidatePodSpec / TestValidateContainers tables mixed with fields checked elsewhere;
each rule here is one row of ours, its message checked against kube's source.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.pod import PodSpec
from phalanx.cluster.podvalidation import pod_spec_errors

C = {"name": "c", "image": "x"}


def _errors(**fields: Any) -> list[str]:
    spec = PodSpec.model_validate({"containers": [C], **fields})
    return [f"{path}: {msg}" for path, msg in pod_spec_errors(spec, "spec")]


ROWS: dict[str, tuple[dict[str, Any], str]] = {
    "image required": ({"containers": [{"name": "c"}]},
                       "spec.containers[0].image: Required value"),
    "container name required": ({"containers": [{"image": "x", "name": ""}]},
                                "spec.containers[0].name: Required value"),
    "container name a DNS label": ({"containers": [{"name": "Bad_Name", "image": "x"}]},
                                   "spec.containers[0].name: Invalid value: \"Bad_Name\""),
    "duplicate names across init and regular containers": (
        {"initContainers": [{"name": "c", "image": "x"}]},
        "spec.initContainers[0].name: Duplicate value: \"c\""),
    "terminationMessagePolicy": (
        {"containers": [{**C, "terminationMessagePolicy": "Bogus"}]},
        "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Bogus\""),
    "init container restartPolicy values": (
        {"initContainers": [{"name": "i", "image": "x", "restartPolicy": "always"}]},
        "spec.initContainers[0].restartPolicy: Unsupported value: \"always\""),
    "probe needs a handler": (
        {"containers": [{**C, "readinessProbe": {"initialDelaySeconds": 5}}]},
        "spec.containers[0].readinessProbe: Required value: must specify a handler type"),
    "probe with two handlers": (
        {"containers": [{**C, "livenessProbe": {"exec": {"command": ["true"]},
                                                "tcpSocket": {"port": 80}}}]},
        ("spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 "
         "handler type")),
    "probe counters not negative": (
        {"containers": [{**C, "startupProbe": {"exec": {"command": ["true"]},
                                               "periodSeconds": -1}}]},
        ("spec.containers[0].startupProbe.periodSeconds: Invalid value: -1: must be greater "
         "than or equal to 0")),
    "no probes on a plain init container": (
        {"initContainers": [{"name": "i", "image": "x",
                             "readinessProbe": {"exec": {"command": ["true"]}}}]},
        ("spec.initContainers[0].readinessProbe: Forbidden: may not be set for init "
         "containers without restartPolicy=Always")),
    "os.name values": ({"os": {"name": "macos"}},
                       "spec.os: Unsupported value: \"macos\""),
    "dnsPolicy values": ({"dnsPolicy": "Bogus"},
                         "spec.dnsPolicy: Unsupported value: \"Bogus\""),
    "dnsPolicy None needs dnsConfig": ({"dnsPolicy": "None"},
                                       "spec.dnsConfig: Required value"),
    "hostname a DNS label": ({"hostname": "Bad.Host"},
                             "spec.hostname: Invalid value: \"Bad.Host\""),
    "activeDeadlineSeconds at least 1": (
        {"activeDeadlineSeconds": 0},
        ("spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
         "inclusive")),
    "imagePullSecrets need a name": ({"imagePullSecrets": [{}]},
                                     "spec.imagePullSecrets[0].name: Required value"),
}


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_kube_refuses_and_so_does_the_embedded_server(row: str) -> None:
    fields, expected = ROWS[row]
    found = _errors(**fields)
    assert any(e.startswith(expected) for e in found), found


def test_a_complete_pod_has_nothing_to_report() -> None:
    assert _errors(initContainers=[{"name": "sidecar", "image": "x", "restartPolicy": "Always",
                                    "readinessProbe": {"exec": {"command": ["true"]}}}],
                   os={"name": "linux"}, dnsPolicy="ClusterFirst", hostname="w-0",
                   subdomain="svc", activeDeadlineSeconds=60,
                   imagePullSecrets=[{"name": "pull"}]) == []
