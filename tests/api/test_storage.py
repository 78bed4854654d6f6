"""PersistentVolume, PersistentVolumeClaim and StorageClass: the models, their registry
names, and what the embedded API server defaults and refuses (phalanx.cluster.storage)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import registry
from phalanx.api.storage import (
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
    storage_request,
)
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def pv_dict(**spec: Any) -> dict[str, Any]:
    base = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"}}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {k: v for k, v in base.items() if v is not None}}


def pvc_dict(**spec: Any) -> dict[str, Any]:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {k: v for k, v in base.items() if v is not None}}


def sc_dict(**fields: Any) -> dict[str, Any]:
    base = {"provisioner": "csi.example.com"}
    base.update(fields)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast"}, **{k: v for k, v in base.items() if v is not None}}


def create(data: dict[str, Any]) -> Any:
    async def main() -> Any:
        return await MemoryCluster().create(registry.from_dict(data))

    return run_virtual(main)


def test_kinds_are_registered_with_kubectl_names() -> None:
    assert registry.resolve("pv") is PersistentVolume
    assert registry.resolve("persistentvolumeclaims") is PersistentVolumeClaim
    assert registry.resolve("sc") is StorageClass
    assert registry.get("storage.k8s.io/v1", "StorageClass") is StorageClass
    assert not PersistentVolume.NAMESPACED and PersistentVolumeClaim.NAMESPACED


def test_round_trip_keeps_camel_case_and_sources() -> None:
    data = pv_dict(csi={"driver": "d", "volumeHandle": "h"}, hostPath=None,
                   nodeAffinity={"required": {"nodeSelectorTerms": [{"matchExpressions": [
                       {"key": "zone", "operator": "In", "values": ["a"]}]}]}},
                   persistentVolumeReclaimPolicy="Delete", storageClassName="fast")
    pv = registry.from_dict(data)
    assert pv.to_dict() == data
    assert pv.spec.sources() == ["csi"]
    claim = registry.from_dict(pvc_dict(storageClassName="fast", volumeName="pv"))
    assert claim.to_dict()["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    assert claim_class(claim) == "fast" and storage_request(claim) == 2.0**30


def test_defaults_and_initial_phase() -> None:
    pv = create(pv_dict())
    assert pv.spec.persistent_volume_reclaim_policy == "Retain"
    assert pv.spec.volume_mode == "Filesystem"
    assert pv.status.phase == "Pending"
    claim = create(pvc_dict())
    assert claim.spec.volume_mode == "Filesystem"
    sc = create(sc_dict())
    assert (sc.reclaim_policy, sc.volume_binding_mode) == ("Delete", "Immediate")


@pytest.mark.parametrize(("data", "field", "why"), [
    (pv_dict(accessModes=None), "spec.accessModes", "Required value"),
    (pv_dict(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]), "spec.accessModes",
     "may not use ReadWriteOncePod with other access modes"),
    (pv_dict(capacity=None), "spec.capacity", "Required value"),
    (pv_dict(capacity={"storage": "0"}), "spec.capacity[storage]", "must be greater than zero"),
    (pv_dict(capacity={"storage": "1Gi", "cpu": "1"}), "spec.capacity", "Unsupported value"),
    (pv_dict(hostPath=None), "spec", "must specify a volume type"),
    (pv_dict(nfs={"server": "s", "path": "/"}), "spec.nfs",
     "may not specify more than 1 volume type"),
    (pv_dict(nodeAffinity={"required": {"nodeSelectorTerms": []}}),
     "spec.nodeAffinity.required.nodeSelectorTerms", "must have at least one node selector term"),
    (pv_dict(nodeAffinity={}), "spec.nodeAffinity.required",
     "must specify required node constraints"),
    (pv_dict(storageClassName="Fast_Class"), "spec.storageClassName", "RFC 1123 subdomain"),
    (pvc_dict(accessModes=None), "spec.accessModes", "at least 1 access mode is required"),
    (pvc_dict(resources={}), "spec.resources[storage]", "Required value"),
    (pvc_dict(resources={"requests": {"storage": "-1Gi"}}), "spec.resources[storage]",
     "must be greater than zero"),
    (pvc_dict(selector={"matchLabels": {"bad key!": "x"}}), "spec.selector", "Invalid value"),
    (sc_dict(provisioner=""), "provisioner", "Required value"),
    (sc_dict(provisioner="my provisioner"), "provisioner", "must be a qualified name"),
    (sc_dict(reclaimPolicy="Recycle"), "reclaimPolicy", "Unsupported value"),
    (sc_dict(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}]),
     "allowedTopologies[0].matchLabelExpressions[0].values", "Required value"),
])
def test_api_server_refuses_with_the_field(data: dict[str, Any], field: str, why: str) -> None:
    with pytest.raises(Invalid) as err:
        create(data)
    assert err.value.field == field
    assert why in err.value.message


def test_model_refuses_unknown_access_mode() -> None:
    with pytest.raises(Exception, match="accessModes"):
        registry.from_dict(pvc_dict(accessModes=["ReadWriteSometimes"]))


def test_updates_keep_what_kubernetes_keeps_immutable() -> None:
    async def main() -> list[str]:
        client = MemoryCluster()
        await client.create(registry.from_dict(pvc_dict(storageClassName="fast")))
        await client.create(registry.from_dict(pv_dict()))
        await client.create(registry.from_dict(sc_dict()))
        fields: list[str] = []
        claim = await client.get(PersistentVolumeClaim, "data", "default")
        claim.spec.volume_name = "pv"  # volumeName may be set once (the PV controller binds)
        claim = await client.update(claim)
        for change in (lambda c: setattr(c.spec, "volume_name", "other"),
                       lambda c: setattr(c.spec, "access_modes", ["ReadWriteMany"]),
                       lambda c: setattr(c.spec, "storage_class_name", "slow")):
            attempt = claim.copy_deep()
            change(attempt)
            try:
                await client.update(attempt)
            except Invalid as e:
                fields.append(e.field)
        pv = await client.get(PersistentVolume, "pv")
        pv.spec.host_path = {"path": "/elsewhere"}
        try:
            await client.update(pv)
        except Invalid as e:
            fields.append(e.field)
        sc = await client.get(StorageClass, "fast")
        sc.volume_binding_mode = "WaitForFirstConsumer"
        try:
            await client.update(sc)
        except Invalid as e:
            fields.append(e.field)
        return fields

    assert run_virtual(main) == ["spec", "spec", "spec", "spec.persistentvolumesource",
                                 "volumeBindingMode"]


def test_bound_claim_may_grow_but_not_shrink() -> None:
    async def main() -> tuple[str, str | None]:
        client = MemoryCluster()
        await client.create(registry.from_dict(pvc_dict()))
        claim = await client.get(PersistentVolumeClaim, "data", "default")
        claim.status.phase = "Bound"
        claim = await client.update_status(claim)
        claim.spec.resources.requests = {"storage": "2Gi"}
        claim = await client.update(claim)
        claim.spec.resources.requests = {"storage": "1Gi"}
        try:
            await client.update(claim)
        except Invalid as e:
            return str(claim.spec.resources.requests), e.field
        return "", None

    assert run_virtual(main)[1] == "spec.resources.requests.storage"
