"""In-tree to CSI translation as k8s.io/csi-translation-lib 1.36 does it for NodeVolumeLimits:
driver names, volume handles, which plugins count, and the translator's refusals."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod
from phalanx.api.storage import PersistentVolume, PersistentVolumeSpec
from phalanx.scheduler.csitranslation import (
    BY_NAME,
    BY_SOURCE,
    TranslationError,
    ebs_volume_id,
    inline_handle,
    migration_on,
    pod_attachable,
    pv_handle,
    pv_plugin,
)


def test_plugin_and_driver_names() -> None:
    assert {p.name: p.driver for p in BY_NAME.values()} == {
        "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
        "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
        "kubernetes.io/cinder": "cinder.csi.openstack.org",
        "kubernetes.io/azure-disk": "disk.csi.azure.com",
        "kubernetes.io/azure-file": "file.csi.azure.com",
        "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
        "kubernetes.io/portworx-volume": "pxd.portworx.com",
    }


def test_migration_counts_five_plugins_and_only_where_a_csinode_exists() -> None:
    on = sorted(p.name for p in BY_NAME.values() if migration_on(True, p.name))
    assert on == ["kubernetes.io/aws-ebs", "kubernetes.io/azure-disk", "kubernetes.io/cinder",
                  "kubernetes.io/gce-pd", "kubernetes.io/portworx-volume"]
    assert not any(migration_on(False, p.name) for p in BY_NAME.values())
    assert not migration_on(True, "kubernetes.io/hostpath")


@pytest.mark.parametrize(("given", "want"), [
    ("vol-123", "vol-123"),
    ("aws://us-east-1a/vol-123", "vol-123"),
    ("aws:///vol-abc", "vol-abc"),
    ("anything-else", "anything-else"),  # a bare id is taken as is
])
def test_ebs_volume_ids(given: str, want: str) -> None:
    assert ebs_volume_id(given) == want


def test_malformed_aws_urls_are_refused() -> None:
    with pytest.raises(TranslationError, match=r"Invalid format for AWS volume \(aws://zone/x\)"):
        ebs_volume_id("aws://zone/x")


@pytest.mark.parametrize(("source", "src", "want"), [
    ("awsElasticBlockStore", {"volumeID": "aws://a/vol-1"}, "vol-1"),
    ("gcePersistentDisk", {"pdName": "disk"}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk"),
    ("cinder", {"volumeID": "c-1"}, "c-1"),
    ("portworxVolume", {"volumeID": "px-1"}, "px-1"),
    ("azureDisk", {"diskURI": "/subscriptions/x/disk", "kind": "Managed"},
     "/subscriptions/x/disk"),
    ("vsphereVolume", {"volumePath": "[ds] vol.vmdk"}, "[ds] vol.vmdk"),
])
def test_inline_handles(source: str, src: dict[str, Any], want: str) -> None:
    assert inline_handle(source, src) == want


@pytest.mark.parametrize("kind", [None, "Shared", "Dedicated"])
def test_azure_disks_other_than_managed_are_refused(kind: str | None) -> None:
    """An unset kind is what the API server defaults it to: Shared."""
    src = {"diskURI": "u", **({"kind": kind} if kind else {})}
    with pytest.raises(TranslationError, match=r"kind\((Shared|Dedicated)\) is not supported"):
        inline_handle("azureDisk", src)


def pv(labels: dict[str, str] | None = None, **source: Any) -> PersistentVolume:
    return PersistentVolume(metadata=ObjectMeta(name="pv", labels=labels or {}),
                            spec=PersistentVolumeSpec(**source))


@pytest.mark.parametrize(("labels", "want"), [
    ({}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"),
    ({"topology.kubernetes.io/zone": "us-central1-a"},
     "projects/UNSPECIFIED/zones/us-central1-a/disks/d"),
    ({"failure-domain.beta.kubernetes.io/zone": "us-central1-b",
      "topology.kubernetes.io/zone": "us-central1-a"},
     "projects/UNSPECIFIED/zones/us-central1-b/disks/d"),  # the beta label first
    ({"topology.kubernetes.io/zone": "us-central1-a__us-central1-b"},
     "projects/UNSPECIFIED/regions/us-central1/disks/d"),
])
def test_gce_pv_handles_follow_the_zone_labels(labels: dict[str, str], want: str) -> None:
    volume = pv(labels, gce_persistent_disk={"pdName": "d"})
    plugin = pv_plugin(volume)
    assert plugin is BY_SOURCE["gcePersistentDisk"]
    assert pv_handle(volume, plugin) == want


def test_a_regional_gce_pv_across_regions_is_refused() -> None:
    volume = pv({"topology.kubernetes.io/zone": "us-central1-a__europe-west1-b"},
                gce_persistent_disk={"pdName": "d"})
    with pytest.raises(TranslationError, match="multiple or no regions"):
        pv_handle(volume, BY_SOURCE["gcePersistentDisk"])


def test_non_migratable_pvs_have_no_plugin() -> None:
    assert pv_plugin(pv(host_path={"path": "/x"})) is None
    assert pv_plugin(pv(csi={"driver": "d", "volumeHandle": "h"})) is None


def test_pod_attachable_lists_claims_ephemeral_and_inline_disks_in_order() -> None:
    pod = Pod.model_validate({"metadata": {"name": "web", "namespace": "ns"}, "spec": {
        "containers": [{"name": "c"}],
        "volumes": [{"name": "cfg", "configMap": {"name": "x"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "disk", "cinder": {"volumeID": "c-1"}},
                    {"name": "share", "azureFile": {"shareName": "s", "secretName": "x"}},
                    {"name": "tmp", "emptyDir": {}}]}})
    got = [(v.name, v.claim, v.ephemeral, v.plugin.source if v.plugin else None)
           for v in pod_attachable(pod)]
    assert got == [("data", "data-0", False, None), ("scratch", "web-scratch", True, None),
                   ("disk", None, False, "cinder"), ("share", None, False, "azureFile")]
    assert pod_attachable(Pod.model_validate({"spec": {"containers": [{"name": "c"}]}})) == ()
