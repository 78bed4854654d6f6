"""CSINode, CSIDriver and VolumeAttachment served by the embedded cluster: registry names, and
what the API server defaults and refuses (phalanx.cluster.storage_csi)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import registry
from phalanx.api.storage_csi import CSIDriver, CSINode, VolumeAttachment
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

GROUP = "storage.k8s.io/v1"


def csinode(*drivers: dict[str, Any], name: str = "node-1") -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": list(drivers)}}


def driver(name: str = "ebs.csi.aws.com", node_id: str = "i-123", **fields: Any) -> dict[str, Any]:
    return {"name": name, "nodeID": node_id, **fields}


def va(**spec: Any) -> dict[str, Any]:
    base = {"attacher": "ebs.csi.aws.com", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}
    base.update(spec)
    return {"apiVersion": GROUP, "kind": "VolumeAttachment", "metadata": {"name": "va-1"},
            "spec": base}


def create(data: dict[str, Any]) -> Any:
    async def main() -> Any:
        return await MemoryCluster().create(registry.from_dict(data))

    return run_virtual(main)


def test_kinds_are_registered_cluster_scoped() -> None:
    assert registry.resolve("csinodes") is CSINode
    assert registry.resolve("csidrivers") is CSIDriver
    assert registry.get(GROUP, "VolumeAttachment") is VolumeAttachment
    assert not any(k.NAMESPACED for k in (CSINode, CSIDriver, VolumeAttachment))


def test_csinode_round_trips_with_kubes_field_names() -> None:
    data = csinode(driver(allocatable={"count": 39},
                          topologyKeys=["topology.ebs.csi.aws.com/zone"]))
    node = create(data)
    assert node.to_dict()["spec"] == data["spec"]
    assert node.volume_limits() == {"ebs.csi.aws.com": 39}


@pytest.mark.parametrize(("drivers", "field", "why"), [
    ([driver(name="")], "spec.drivers[0].name", "Required value"),
    ([driver(name="a" * 64)], "spec.drivers[0].name", "may not be more than 63 bytes"),
    ([driver(name="bad_driver!")], "spec.drivers[0].name", "RFC 1123 subdomain"),
    ([driver(node_id="")], "spec.drivers[0].nodeID", "Required value"),
    ([driver(node_id="x" * 257)], "spec.drivers[0].nodeID", "must be 256 characters or less"),
    ([driver(allocatable={"count": -1})], "spec.drivers[0].allocatable.count",
     "must be greater than or equal to 0"),
    ([driver(), driver()], "spec.drivers[1].name", "Duplicate value"),
    ([driver(topologyKeys=["zone", "zone"])], "spec.drivers[0]", "Duplicate value"),
    ([driver(topologyKeys=["bad key!"])], "spec.drivers[0]", "Invalid value"),
])
def test_invalid_csinodes_are_refused_naming_the_field(drivers: list[Any], field: str,
                                                       why: str) -> None:
    with pytest.raises(Invalid) as err:
        create(csinode(*drivers))
    assert err.value.field == field, err.value.message
    assert why in err.value.message


def test_a_drivers_count_may_change_but_not_its_node_id() -> None:
    async def main() -> None:
        c = MemoryCluster()
        node = await c.create(registry.from_dict(csinode(driver(allocatable={"count": 2}))))
        node.spec.drivers[0].allocatable.count = 3  # type: ignore[union-attr]
        node = await c.update(node)
        node.spec.drivers[0].node_id = "i-456"
        with pytest.raises(Invalid) as err:
            await c.update(node)
        assert err.value.field == "spec.drivers"

    run_virtual(main)


def test_csidriver_is_defaulted_and_the_gated_field_dropped() -> None:
    got = create({"apiVersion": GROUP, "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"},
                  "spec": {"preventPodSchedulingIfMissing": True}})
    assert got.to_dict()["spec"] == {
        "attachRequired": True, "podInfoOnMount": False, "volumeLifecycleModes": ["Persistent"],
        "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False, "seLinuxMount": False}


@pytest.mark.parametrize(("spec", "field"), [
    ({"fsGroupPolicy": "Sometimes"}, "spec.fsGroupPolicy"),
    ({"volumeLifecycleModes": ["Forever"]}, "spec.volumeLifecycleModes"),
    ({"tokenRequests": [{"audience": "a", "expirationSeconds": 60}]},
     "spec.tokenRequests[0].expirationSeconds"),
    ({"nodeAllocatableUpdatePeriodSeconds": 5}, "spec.nodeAllocatableUpdatePeriodSeconds"),
    ({"serviceAccountTokenInSecrets": True}, "spec.serviceAccountTokenInSecrets"),
])
def test_invalid_csidrivers_are_refused(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as err:
        create({"apiVersion": GROUP, "kind": "CSIDriver", "metadata": {"name": "d.example.com"},
                "spec": spec})
    assert err.value.field == field


def test_csidriver_attach_required_is_immutable() -> None:
    async def main() -> None:
        c = MemoryCluster()
        d = await c.create(registry.from_dict({"apiVersion": GROUP, "kind": "CSIDriver",
                                               "metadata": {"name": "d.example.com"}}))
        d.spec.attach_required = False
        with pytest.raises(Invalid) as err:
            await c.update(d)
        assert err.value.field == "spec.attachedRequired"

    run_virtual(main)


@pytest.mark.parametrize(("spec", "field"), [
    ({"attacher": ""}, "spec.attacher"),
    ({"source": {}}, "spec.source"),
    ({"source": {"persistentVolumeName": "pv", "inlineVolumeSpec": {"csi": {}}}}, "spec.source"),
    ({"source": {"persistentVolumeName": ""}}, "spec.source.persistentVolumeName"),
    ({"nodeName": "Node_1"}, "spec.nodeName"),
])
def test_invalid_volume_attachments_are_refused(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as err:
        create(va(**spec))
    assert err.value.field == field


def test_volume_attachment_spec_is_immutable_status_is_not() -> None:
    async def main() -> None:
        c = MemoryCluster()
        got = await c.create(registry.from_dict(va()))
        got.status.attached = True
        got = await c.update_status(got)
        assert got.status.attached
        got.spec.node_name = "node-2"
        with pytest.raises(Invalid) as err:
            await c.update(got)
        assert err.value.field == "spec"

    run_virtual(main)
