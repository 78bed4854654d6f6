"""Builders for the ports of kube-scheduler's nodevolumelimits/csi_test.go.

They build what csi_test.go's fakes hold (getFakeCSIPVLister, getFakeCSIPVCLister,
getFakeCSIStorageClassLister, getNodeWithPodAndVolumeLimits, buildFakeClientWithVALister)
and hand it to the plugin as kube's test hands listers: straight into the scheduler's
caches, without the API server. kube's claims and pods there have no namespace; here they
live in "default" (the snapshot keys pods by namespace/name, so kube's unnamed pods are
named after their Go variables).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from phalanx.api.base import ObjectMeta, OwnerReference
from phalanx.api.core import Pod
from phalanx.api.storage import PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec
from phalanx.api.storage_csi import (
    CSIDriver,
    CSIDriverSpec,
    CSINode,
    CSINodeDriver,
    CSINodeSpec,
    VolumeAttachment,
    VolumeAttachmentSource,
    VolumeAttachmentSpec,
    VolumeNodeResources,
)
from phalanx.scheduler.csi import SHARED_KEY as CSI_KEY
from phalanx.scheduler.csi import CSICache
from phalanx.scheduler.plugins.nodevolumelimits import NodeVolumeLimits, NodeVolumeLimitsArgs
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import SHARED_KEY as VOLUMES_KEY
from phalanx.scheduler.volumes import VolumeCache

from .volume_harness import node, pod, pvc, storage_class

NODE = "node-for-max-pd-test-1"
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"


def pvc_pod(name: str, *claims: str, namespace: str = "default") -> Pod:
    """st.MakePod().PVC(claim)...: a volume named after each claim."""
    return pod(name, namespace=namespace,
               volumes=[{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims])


def volume_pod(name: str, *volumes: dict[str, Any], namespace: str = "default",
               uid: str | None = None, node_name: str | None = None) -> Pod:
    return pod(name, namespace=namespace, uid=uid, node_name=node_name, volumes=list(volumes))


def fake_pvs(volume_name: str, drivers: Sequence[str]) -> list[PersistentVolume]:
    """getFakeCSIPVLister: 4 PVs per driver, named and handled `<name>-<driver>-<j>`."""
    out = []
    for driver in drivers:
        for j in range(4):
            handle = f"{volume_name}-{driver}-{j}"
            if driver == EBS_IN_TREE:
                spec = PersistentVolumeSpec(aws_elastic_block_store={"volumeID": handle})
            elif driver == HOSTPATH_IN_TREE:
                spec = PersistentVolumeSpec(host_path={"path": "/tmp"})
            else:
                spec = PersistentVolumeSpec(csi={"driver": driver, "volumeHandle": handle})
            out.append(PersistentVolume(metadata=ObjectMeta(name=handle), spec=spec))
    return out


def fake_pvcs(volume_name: str, drivers: Sequence[str]) -> list[PersistentVolumeClaim]:
    """getFakeCSIPVCLister: a bound claim per PV; `-4` unbound with the class, `-5` with
    nothing, `-6` with the class and a PV that does not exist."""
    out = [pvc(f"{volume_name}-{d}-{j}", bound_pv=f"{volume_name}-{d}-{j}")
           for d in drivers for j in range(4)]
    out.append(pvc(f"{volume_name}-4", SC_NAME))
    out.append(pvc(f"{volume_name}-5"))
    out.append(pvc(f"{volume_name}-6", SC_NAME, bound_pv="missing-in-action"))
    return out


def csi_node(limit_source: str, limit: int, drivers: Sequence[str]) -> CSINode | None:
    """getNodeWithPodAndVolumeLimits' CSINode: "csinode" (drivers with `limit`),
    "csinode-with-no-limit", "no-csi-driver" (no drivers), anything else: none."""
    if limit_source not in ("csinode", "csinode-with-no-limit", "no-csi-driver"):
        return None
    listed = [] if limit_source == "no-csi-driver" else [
        CSINodeDriver(name=d, node_id=NODE, allocatable=VolumeNodeResources(count=limit)
                      if limit_source == "csinode" else None) for d in drivers]
    return CSINode(metadata=ObjectMeta(name=NODE), spec=CSINodeSpec(drivers=listed))


def attachments(count: int, drivers: Sequence[str]) -> list[VolumeAttachment]:
    """buildFakeClientWithVALister: `count` attachments per driver on the node."""
    return [VolumeAttachment(metadata=ObjectMeta(name=f"va-{d}-{j}"), spec=VolumeAttachmentSpec(
        node_name=NODE, attacher=d,
        source=VolumeAttachmentSource(persistent_volume_name=f"csi-{d}-{j}")))
        for d in drivers for j in range(count)]


def csi_driver(name: str, prevent: bool | None = None) -> CSIDriver:
    return CSIDriver(metadata=ObjectMeta(name=name),
                     spec=CSIDriverSpec(prevent_pod_scheduling_if_missing=prevent))


def ephemeral_claim(p: Pod, volume: str, *, owned: bool = True) -> PersistentVolumeClaim:
    claim = pvc(f"{p.metadata.name}-{volume}", SC_NAME, namespace=p.metadata.namespace or "")
    if owned:
        claim.metadata.owner_references = [OwnerReference(
            api_version="v1", kind="Pod", name=p.metadata.name or "",
            uid=p.metadata.uid or "", controller=True)]
    return claim


class Handle:
    """The caches NodeVolumeLimits takes from its handle, and the snapshot."""

    def __init__(self, volumes: VolumeCache, csi: CSICache, snap: Snapshot | None = None) -> None:
        self.volumes, self.csi, self.snap = volumes, csi, snap
        self._shared: dict[str, Any] = {VOLUMES_KEY: volumes, CSI_KEY: csi}

    def shared(self, name: str, factory: Any) -> Any:
        if name not in self._shared:
            self._shared[name] = factory()
        return self._shared[name]

    def snapshot(self) -> Snapshot:
        assert self.snap is not None
        return self.snap


def plugin(*, pvs: Iterable[PersistentVolume] = (), pvcs: Iterable[PersistentVolumeClaim] = (),
           provisioner: str | None = None, csi_nodes: Iterable[CSINode | None] = (),
           vas: Iterable[VolumeAttachment] = (), drivers: Iterable[CSIDriver] = (),
           scaling: bool = False) -> NodeVolumeLimits:
    volumes, csi = VolumeCache(), CSICache()
    if provisioner is not None:
        volumes.set_class(storage_class(SC_NAME, None, provisioner))
    for v in pvs:
        volumes.set_pv(v)
    for c in pvcs:
        volumes.set_pvc(c)
    for n in csi_nodes:
        if n is not None:
            csi.set_node(n)
    for va in vas:
        csi.set_attachment(va)
    for d in drivers:
        csi.set_driver(d)
    return NodeVolumeLimits(Handle(volumes, csi),
                            NodeVolumeLimitsArgs(enable_volume_limit_scaling=scaling))


def node_with_pods(existing: Iterable[Pod]) -> Snapshot:
    snap = Snapshot()
    snap.set_node(node(NODE))
    from phalanx.scheduler.framework import PodInfo

    for p in existing:
        assert snap.add_pod(PodInfo(p), NODE)
    return snap
