"""Every field of a pod spec is either placement (with the kube-scheduler plugin that honours it)
or listed as read by no scheduler: the walk fails on a field that is neither, so one added to
the model cannot be ignored in silence. And each placement field is found in a spec that sets
it, so the scheduler and admission can name it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from phalanx.api import podfields
from phalanx.api.pod import Affinity, Container, ContainerPort, PodSpec, ResourceRequirements

# Where the walk descends: a field path -> the model of its items and the prefix of their
# fields. Every other field is classified as a whole.
DESCEND: dict[str, tuple[type[BaseModel], str]] = {
    "spec.containers": (Container, "spec.containers[]"),
    "spec.initContainers": (Container, "spec.containers[]"),  # the same rules as containers
    "spec.containers[].ports": (ContainerPort, "spec.containers[].ports[]"),
    "spec.containers[].resources": (ResourceRequirements, "spec.containers[].resources"),
    "spec.affinity": (Affinity, "spec.affinity"),
}
# kube 1.36's core/v1 VolumeSource keys (staging/src/k8s.io/api/core/v1/types.go).
KUBE_VOLUME_SOURCES = (
    "hostPath emptyDir gcePersistentDisk awsElasticBlockStore gitRepo secret nfs iscsi glusterfs "
    "persistentVolumeClaim rbd flexVolume cinder cephfs flocker downwardAPI fc azureFile configMap "
    "vsphereVolume quobyte azureDisk photonPersistentDisk projected portworxVolume scaleIO "
    "storageos csi ephemeral image").split()


def field_paths() -> list[str]:
    """Every field path a user can write in a pod spec, down to the classified level."""
    out: set[str] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            path = f"{prefix}.{info.alias or name}"
            if path in DESCEND:
                walk(*DESCEND[path])
            else:
                out.add(path)

    walk(PodSpec, "spec")
    return sorted(out)


def test_every_pod_spec_field_is_placement_or_listed_as_read_by_no_scheduler() -> None:
    placement = {f.path for f in podfields.PLACEMENT_FIELDS}
    covered = placement | set(podfields.NOT_PLACEMENT_FIELDS)
    unclassified = [p for p in field_paths() if p not in covered and p != "spec.volumes"]
    assert unclassified == []


def test_no_field_is_listed_both_as_placement_and_not() -> None:
    placement = {f.path for f in podfields.PLACEMENT_FIELDS}
    assert placement & set(podfields.NOT_PLACEMENT_FIELDS) == set()


def test_every_volume_source_of_kube_is_classified() -> None:
    assert sorted(podfields.VOLUME_SOURCES) == sorted(KUBE_VOLUME_SOURCES)
    for key in KUBE_VOLUME_SOURCES:
        assert (key in podfields.COVERED_VOLUME_SOURCES) != (
            f"spec.volumes[].{key}" in podfields.NOT_PLACEMENT_FIELDS), key


def test_the_walk_reaches_nested_container_fields() -> None:
    paths = field_paths()
    assert "spec.containers[].ports[].hostPort" in paths
    assert "spec.containers[].resources.claims" in paths
    assert "spec.affinity.podAntiAffinity" in paths


def _spec(**fields: Any) -> PodSpec:
    return PodSpec.model_validate({"containers": [{"name": "c"}], **fields})


# One spec per placement field the scheduler can be asked to refuse, and the path it names.
SAMPLES: dict[str, tuple[dict[str, Any], str]] = {
    "spec.resourceClaims": ({"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
                            "spec.resourceClaims"),
    "spec.containers[].resources.claims": (
        {"containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]},
        "spec.containers[0].resources.claims"),
    "spec.containers[].ports[].hostPort": (
        {"initContainers": [{"name": "i", "restartPolicy": "Always",
                             "ports": [{"containerPort": 80, "hostPort": 8080}]}]},
        "spec.initContainers[0].ports[0].hostPort"),
    "spec.hostNetwork": ({"hostNetwork": True, "containers": [
        {"name": "c", "ports": [{"containerPort": 80}]}]}, "spec.hostNetwork"),
    "spec.volumes[].persistentVolumeClaim": (
        {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "d", "ephemeral": {}}]},
        "spec.volumes[1].ephemeral"),
    "spec.volumes[].gcePersistentDisk": ({"volumes": [{"name": "d", "rbd": {}}]},
                                         "spec.volumes[0].rbd"),
    "spec.volumes[].azureDisk": ({"volumes": [{"name": "d", "cinder": {}}]},
                                 "spec.volumes[0].cinder"),
    "spec.topologySpreadConstraints": ({"topologySpreadConstraints": [{"maxSkew": 1}]},
                                       "spec.topologySpreadConstraints"),
    "spec.affinity.podAffinity": ({"affinity": {"podAffinity": {"x": 1}}},
                                  "spec.affinity.podAffinity"),
    "spec.nodeSelector": ({"nodeSelector": {"a": "b"}}, "spec.nodeSelector"),
}


@pytest.mark.parametrize("field", sorted(SAMPLES))
def test_a_spec_that_sets_a_placement_field_is_found_by_its_path(field: str) -> None:
    raw, path = SAMPLES[field]
    plugin = next(f.plugin for f in podfields.PLACEMENT_FIELDS if f.path == field)
    found = podfields.uses(_spec(**raw), {plugin})
    assert [(u.path, u.plugin) for u in found] == [(path, plugin)]


def test_a_plain_pod_uses_no_optional_placement_field() -> None:
    spec = _spec(containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80}],
                              "resources": {"requests": {"cpu": "1"}}}],
                 volumes=[{"name": "v", "emptyDir": {}}])
    assert podfields.uses(spec) == []
