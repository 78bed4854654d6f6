"""spec.volumes and spec.resourceClaims validation, ported from kube 1.36's
validation_test.go (ids = kube's row names):
- TestValidateVolumes: the name rows, "more than one source", "no volume source", the
  duplicate-names case, and the valid sources the scheduler reads;
- TestValidatePod: "ephemeral volume + PVC, no conflict between them", "final PVC name for
  ephemeral volume must be valid", "PersistentVolumeClaimVolumeSource must not reference a
  generated PVC";
- TestValidateDynamicResourceAllocation: every row.

"no volume source" is an error for kube's function on an internal object; through the API
the volume becomes an emptyDir (v1 defaulting) and the pod is created, as here.
"ephemeral container don't support resource requirements" is refused here because a pod
may not be created with ephemeral containers at all (the API server's create rule).

Not ported: TestValidateVolumes' rows about the inside of other sources (hostPath types and
paths, gitRepo, iSCSI, secret, configMap, glusterfs, flocker, rbd, cephfs, downwardAPI, FC,
flexVolume, azure, quobyte, scaleIO, projected, image volumes): only the sources the
scheduler reads (persistentVolumeClaim, ephemeral) are checked inside.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.podvalidation.volumes import volume_errors

from .podvalidation_cases import create_verdict, fields, pod_json, spec_errors

EMPTY = {"emptyDir": {}}
PVC_TEMPLATE = {"spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "10G"}}}}

VOLUME_ROWS: dict[str, tuple[dict[str, Any], list[tuple[str, str, str]]]] = {
    "valid alpha name": ({"name": "empty", **EMPTY}, []),
    "valid num name": ({"name": "123", **EMPTY}, []),
    "valid alphanum name": ({"name": "empty-123", **EMPTY}, []),
    "valid numalpha name": ({"name": "123-empty", **EMPTY}, []),
    "zero-length name": ({"name": "", **EMPTY}, [("Required value", "name", "")]),
    "name > 63 characters": (
        {"name": "a" * 64, **EMPTY}, [("Invalid value", "name", "must be no more than")]),
    "name has dots": ({"name": "a.b.c", **EMPTY},
                      [("Invalid value", "name", "must not contain dots")]),
    "name not a DNS label": (
        {"name": "Not a DNS label!", **EMPTY},
        [("Invalid value", "name", "a lowercase RFC 1123 label must consist of lower case "
                                   "alphanumeric characters or '-', and must start and end "
                                   "with an alphanumeric character")]),
    "more than one source": (
        {"name": "dups", **EMPTY, "hostPath": {"path": "/mnt/path", "type": "Directory"}},
        [("Forbidden", "hostPath", "may not specify more than 1 volume")]),
    "default HostPath": ({"name": "hostpath", "hostPath": {"path": "/mnt/path",
                                                           "type": "Directory"}}, []),
}


@pytest.mark.parametrize("vol,want", VOLUME_ROWS.values(), ids=VOLUME_ROWS.keys())
def test_validate_volumes(vol: dict[str, Any], want: list[tuple[str, str, str]]) -> None:
    names, errs = volume_errors([vol], "field", None)
    assert len(errs) == len(want), errs
    for (field, message), (kind, tail, detail) in zip(errs, want):
        assert message.startswith(kind) and field.endswith(tail) and detail in message
    assert names == ([] if want else [vol["name"]])


def test_validate_volumes_no_volume_source() -> None:
    """kube's row expects "must specify a volume type" from the function; through the API
    the source defaults to emptyDir, so the pod is created and the volume is usable."""
    vol = {"name": "volume"}
    assert create_verdict(pod_json({"volumes": [vol], "containers": [
        {"name": "c", "image": "i", "volumeMounts": [{"name": "volume",
                                                      "mountPath": "/v"}]}]})) is None


def test_validate_volumes_dups_case() -> None:
    _, errs = volume_errors([{"name": "abc", **EMPTY}, {"name": "abc", **EMPTY}], "field", None)
    assert errs == [("field[1].name", 'Duplicate value: "abc"')]


POD_ROWS = {
    "ephemeral volume + PVC, no conflict between them": ("valid-extended", [
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "my-pvc"}},
        {"name": "ephemeral", "ephemeral": {"volumeClaimTemplate": PVC_TEMPLATE}}], None),
    "final PVC name for ephemeral volume must be valid": ("a" * 200, [
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "my-pvc"}},
        {"name": "b" * 60, "ephemeral": {"volumeClaimTemplate": PVC_TEMPLATE}}],
        f'spec.volumes[1].name: Invalid value: "{"b" * 60}": PVC name '
        f'"{"a" * 200}-{"b" * 60}": must be no more than 253 characters'),
    "PersistentVolumeClaimVolumeSource must not reference a generated PVC": ("123", [
        {"name": "pvc-volume", "persistentVolumeClaim": {"claimName": "123-ephemeral-volume"}},
        {"name": "ephemeral-volume", "ephemeral": {"volumeClaimTemplate": PVC_TEMPLATE}}],
        'spec.volumes[0].persistentVolumeClaim.claimName: Invalid value: '
        '"123-ephemeral-volume": must not reference a PVC that gets created for an ephemeral '
        'volume'),
}


@pytest.mark.parametrize("name,volumes,expected", POD_ROWS.values(), ids=POD_ROWS.keys())
def test_validate_pod_volumes(name: str, volumes: list[dict[str, Any]],
                              expected: str | None) -> None:
    err = create_verdict(pod_json({"volumes": volumes}, name=name))
    if expected is None:
        assert err is None
    else:
        assert err is not None and expected in err.message, err and err.message


def test_claim_name_and_template_are_required() -> None:
    errs = spec_errors({"volumes": [{"name": "a", "persistentVolumeClaim": {}},
                                    {"name": "b", "ephemeral": {}}]})
    assert errs == [("field.volumes[0].persistentVolumeClaim.claimName", "Required value"),
                    ("field.volumes[1].ephemeral.volumeClaimTemplate", "Required value")]


# ----------------------------------------------------------- TestValidateDynamicResourceAllocation

CLAIM = "some-claim"
TEMPLATE = "some-claim-template"


def uses(*refs: dict[str, Any], init: bool = False) -> dict[str, Any]:
    key = "initContainers" if init else "containers"
    name = "ctr-init" if init else "ctr"  # kube's rows: podtest.MakeContainer("ctr-init")
    return {key: [{"name": name, "image": "image", "resources": {"claims": list(refs)}}]}


def claims(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"resourceClaims": list(entries)}


def by_name(name: str = "my-claim") -> dict[str, Any]:
    return {"name": name, "resourceClaimName": CLAIM}


DRA_VALID = {
    "resource claim reference": {**uses({"name": "my-claim-reference"}),
                                 **claims(by_name("my-claim-reference"))},
    "resource claim template": {**uses({"name": "my-claim-template"}), **claims(
        {"name": "my-claim-template", "resourceClaimTemplateName": TEMPLATE})},
    "multiple claims": {**uses({"name": "my-claim"}, {"name": "another-claim"}),
                        **claims(by_name(), by_name("another-claim"))},
    "multiple claims with requests": {
        **uses({"name": "my-claim", "request": "req-0"},
               {"name": "another-claim", "request": "req-0"}),
        **claims(by_name(), by_name("another-claim"))},
    "single claim with requests": {
        **uses({"name": "my-claim", "request": "req-0"}, {"name": "my-claim", "request": "req-1"}),
        **claims(by_name())},
    "init container": {**uses({"name": "my-claim"}, init=True), **claims(by_name())},
}


@pytest.mark.parametrize("spec", DRA_VALID.values(), ids=DRA_VALID.keys())
def test_dynamic_resource_allocation_success(spec: dict[str, Any]) -> None:
    assert create_verdict(pod_json(spec, name="some-pod")) is None


MIRROR = {"kubernetes.io/config.mirror": "True"}
DRA_INVALID: dict[str, tuple[dict[str, Any], dict[str, str] | None, str]] = {
    # A mirror pod must name its node (a metadata rule checked first on create).
    "static pod with resource claim reference": (
        {**DRA_VALID["resource claim reference"], "nodeName": "node-1"}, MIRROR, ""),
    "static pod with resource claim template": (
        {**DRA_VALID["resource claim template"], "nodeName": "node-1"}, MIRROR, ""),
    "pod claim name with prefix": (claims(by_name("../my-claim")), None,
                                   "spec.resourceClaims[0].name"),
    "pod claim name with path": (claims(by_name("my/claim")), None,
                                 "spec.resourceClaims[0].name"),
    "pod claim name empty": (claims(by_name("")), None, "spec.resourceClaims[0].name"),
    "duplicate pod claim entries": (claims(by_name(), by_name()), None,
                                    "spec.resourceClaims[1].name"),
    "resource claim source empty": (claims({"name": "my-claim"}), None,
                                    "spec.resourceClaims[0]"),
    "resource claim reference and template": (
        {**uses({"name": "my-claim"}), **claims({**by_name(),
                                                 "resourceClaimTemplateName": TEMPLATE})},
        None, "spec.resourceClaims[0]"),
    "claim not found": ({**uses({"name": "no-such-claim"}), **claims(by_name())}, None,
                        "spec.containers[0].resources.claims[0]"),
    "claim name empty": ({**uses({"name": ""}), **claims(by_name())}, None,
                         "spec.containers[0].resources.claims[0]"),
    "pod claim name duplicates": ({**uses({"name": "my-claim"}, {"name": "my-claim"}),
                                   **claims(by_name())}, None,
                                  "spec.containers[0].resources.claims[1]"),
    "pod claim name duplicates without and with request": (
        {**uses({"name": "my-claim"}, {"name": "my-claim", "request": "req-0"}),
         **claims(by_name())}, None, "spec.containers[0].resources.claims[1]"),
    "pod claim name duplicates with and without request": (
        {**uses({"name": "my-claim", "request": "req-0"}, {"name": "my-claim"}),
         **claims(by_name())}, None, "spec.containers[0].resources.claims[1]"),
    "pod claim name duplicates with requests": (
        {**uses({"name": "my-claim", "request": "req-0"},
                {"name": "my-claim", "request": "req-0"}), **claims(by_name())}, None,
        "spec.containers[0].resources.claims[1]"),
    "bad request name": ({**uses({"name": "my-claim", "request": "*$@%^"}),
                          **claims(by_name())}, None,
                         "spec.containers[0].resources.claims[0].request"),
    "no claims defined": (uses({"name": "my-claim"}), None,
                          "spec.containers[0].resources.claims[0]"),
    "duplicate pod claim name": ({**uses({"name": "my-claim"}),
                                  **claims(by_name(), by_name())}, None,
                                 "spec.resourceClaims[1].name"),
    "ephemeral container don't support resource requirements": (
        {"ephemeralContainers": [{"name": "ctr-ephemeral", "image": "image",
                                  "targetContainerName": "ctr",
                                  "resources": {"claims": [{"name": "my-claim"}]}}],
         **claims(by_name())}, None, "spec.ephemeralContainers"),
    "invalid claim template name": (
        {**uses({"name": "my-claim-template"}), **claims(
            {"name": "my-claim-template", "resourceClaimTemplateName": ".foo_bar"})}, None,
        "spec.resourceClaims[0].resourceClaimTemplateName"),
    "invalid claim reference name": (
        {**uses({"name": "my-claim-reference"}), **claims(
            {"name": "my-claim-reference", "resourceClaimName": ".foo_bar"})}, None,
        "spec.resourceClaims[0].resourceClaimName"),
}


@pytest.mark.parametrize("spec,annotations,field", DRA_INVALID.values(), ids=DRA_INVALID.keys())
def test_dynamic_resource_allocation_failure(spec: dict[str, Any],
                                             annotations: dict[str, str] | None,
                                             field: str) -> None:
    err = create_verdict(pod_json(spec, name="some-pod", annotations=annotations))
    assert err is not None, "the pod was created"
    assert err.field == field, err.message


def test_claim_reference_messages() -> None:
    errs = spec_errors({**uses({"name": "gpu"}), **claims(by_name("b"), by_name("a"))})
    assert errs == [("field.containers[0].resources.claims[0]",
                     'Not found: "gpu": must be one of the names in pod.spec.resourceClaims: '
                     "a, b")]
    assert fields(spec_errors(claims({"name": "x", "resourceClaimName": CLAIM,
                                      "resourceClaimTemplateName": TEMPLATE}))) == [
        "field.resourceClaims[0]"]
