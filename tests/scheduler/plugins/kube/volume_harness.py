"""Builders and runners for the ports of kube-scheduler's nodeports, nodename, volumebinding,
volumezone and volumerestrictions tests.

Objects are built as kube's test wrappers build them (volumebinding/test_utils.go,
pkg/scheduler/testing) and fed to the plugins the way kube's tests feed listers and fake
clientsets: straight into the volume cache, without the API server's validation. The runners
turn vectorised Filter results back into one node's status, as kube's tests compare them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from phalanx.api.base import ObjectMeta
from phalanx.api.core import (
    Container,
    ContainerPort,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeStatus,
    Pod,
    PodSpec,
)
from phalanx.api.storage import (
    ANN_BIND_COMPLETED,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeSpec,
    StorageClass,
    VolumeNodeAffinity,
    VolumeResourceRequirements,
)
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import VolumeCache

HOSTNAME = "kubernetes.io/hostname"
Status = tuple[Code, list[str]] | None


# --- nodes and pods -------------------------------------------------------------------------


def node(name: str, labels: Mapping[str, str] | None = None, *, hostname: bool = True) -> Node:
    """volumebinding's makeNode: the hostname label set to the name (unless told not to)."""
    lbl = {HOSTNAME: name} if hostname else {}
    lbl.update(labels or {})
    res = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return Node(metadata=ObjectMeta(name=name, labels=lbl),
                status=NodeStatus(allocatable=res, capacity=res))


def pod(name: str = "pod-a", *, namespace: str = "default", node_name: str | None = None,
        volumes: Sequence[dict[str, Any]] = (), ports: Sequence[ContainerPort] = (),
        init_ports: Sequence[ContainerPort] = (), sidecar: bool = False,
        uid: str | None = None) -> Pod:
    containers = [Container(name="c", image="pause", ports=list(ports) or None)]
    init = [Container(name="init", image="pause", ports=list(init_ports),
                      restart_policy="Always" if sidecar else None)] if init_ports else None
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace, uid=uid),
               spec=PodSpec(containers=containers, init_containers=init, node_name=node_name,
                            volumes=list(volumes) or None))


def port(spec: str) -> ContainerPort:
    """"UDP/127.0.0.1/8080" as node_ports_test.go's newPod reads it."""
    proto, ip, number = spec.split("/")
    return ContainerPort(container_port=0, host_port=int(number), host_ip=ip or None,
                         protocol=proto or None)  # type: ignore[arg-type]


def port_pod(node_name: str | None, *specs: str) -> Pod:
    return pod("p", node_name=node_name, ports=[port(s) for s in specs])


def pvc_volume(claim: str, name: str = "") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def snapshot(nodes: Iterable[Node], pods: Iterable[tuple[Pod, str]] = ()) -> Snapshot:
    snap = Snapshot()
    for n in nodes:
        snap.set_node(n)
    for p, where in pods:
        assert snap.add_pod(PodInfo(p), where)
    return snap


# --- storage objects ------------------------------------------------------------------------


def storage_class(name: str, mode: str | None, provisioner: str = "",
                  topologies: Sequence[Mapping[str, Sequence[str]]] = ()) -> StorageClass:
    terms = [{"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
             for t in topologies]
    return StorageClass.model_validate({"metadata": {"name": name}, "provisioner": provisioner,
                                        "volumeBindingMode": mode,
                                        "allowedTopologies": terms or None})


def pv(name: str, class_name: str = "", *, phase: str | None = None, capacity: str | None = None,
       affinity: Mapping[str, Sequence[str]] | None = None, labels: Mapping[str, str] | None = None,
       access_modes: Sequence[str] = (), claim: tuple[str, str, str] | None = None,
       resource_version: str | None = None) -> PersistentVolume:
    """makePV(name, class).withPhase().withCapacity().withNodeAffinity()."""
    na = None
    if affinity is not None:
        na = VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[NodeSelectorTerm(
            match_expressions=[NodeSelectorRequirement(key=k, operator="In", values=list(v))
                               for k, v in affinity.items()])]))
    out = PersistentVolume(
        metadata=ObjectMeta(name=name, labels=dict(labels or {}),
                            resource_version=resource_version),
        spec=PersistentVolumeSpec(storage_class_name=class_name or None,
                                  capacity={"storage": capacity} if capacity else None,
                                  node_affinity=na, access_modes=list(access_modes) or None))
    if claim is not None:
        from phalanx.api.core import ObjectReference

        ns, cname, uid = claim
        out.spec.claim_ref = ObjectReference(kind="PersistentVolumeClaim", namespace=ns,
                                             name=cname, uid=uid or None)
    if phase:
        out.status.phase = phase  # type: ignore[assignment]
    return out


def pvc(name: str, class_name: str | None = None, *, bound_pv: str | None = None,
        request: str | None = None, phase: str | None = None, namespace: str = "default",
        access_modes: Sequence[str] = (), uid: str | None = None,
        annotations: Mapping[str, str] | None = None) -> PersistentVolumeClaim:
    """makePVC(name, class).withBoundPV().withRequestStorage().withPhase()."""
    ann = dict(annotations or {})
    if bound_pv:
        ann[ANN_BIND_COMPLETED] = "true"
    out = PersistentVolumeClaim(
        metadata=ObjectMeta(name=name, namespace=namespace, annotations=ann, uid=uid),
        spec=PersistentVolumeClaimSpec(
            storage_class_name=class_name, volume_name=bound_pv,
            access_modes=list(access_modes) or None,
            resources=VolumeResourceRequirements(
                requests={"storage": request} if request else None)))
    if phase:
        out.status.phase = phase  # type: ignore[assignment]
    return out


def cache(pvs: Iterable[PersistentVolume] = (), pvcs: Iterable[PersistentVolumeClaim] = (),
          classes: Iterable[StorageClass] = ()) -> VolumeCache:
    c = VolumeCache()
    for sc in classes:
        c.set_class(sc)
    for v in pvs:
        c.set_pv(v)
    for claim in pvcs:
        c.set_pvc(claim)
    return c


class Handle:
    """What the volume plugins read from their handle: the shared cache and the snapshot."""

    def __init__(self, volumes: VolumeCache, snap: Snapshot | None = None) -> None:
        self.volumes = volumes
        self.snap = snap

    def shared(self, name: str, factory: Any) -> Any:
        return self.volumes

    def snapshot(self) -> Snapshot:
        assert self.snap is not None
        return self.snap


# --- running --------------------------------------------------------------------------------


def filter_status(plugin: Any, p: Pod | PodInfo, snap: Snapshot, node_name: str,
                  state: CycleState) -> Status:
    """kube's Filter status for one node: None (fits) or (code, reasons in order)."""
    info = p if isinstance(p, PodInfo) else PodInfo(p)
    row = snap.index[node_name]
    res = plugin.filter(state, info, snap, np.asarray([row], dtype=np.int64))
    if res.feasible[0]:
        return None
    reasons: list[str] = []
    hard = False
    for r in res.rejections:
        if r.mask[0] and r.reason not in reasons:
            reasons.append(r.reason)
            hard |= r.unresolvable
    if not reasons:
        reasons, hard = [res.default_reason], res.unresolvable
    return (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if hard else Code.UNSCHEDULABLE), reasons


def pre_filter_status(plugin: Any, p: Pod | PodInfo, snap: Snapshot,
                      state: CycleState) -> tuple[Code, list[str]] | None:
    """None for success, else (code, reasons); Skip is (Code.SKIP, [])."""
    info = p if isinstance(p, PodInfo) else PodInfo(p)
    _, st = plugin.pre_filter(state, info, snap)
    if st.is_success:
        return None
    return st.code, list(st.reasons)


SKIP = (Code.SKIP, [])


def unresolvable(*reasons: str) -> tuple[Code, list[str]]:
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons)


def unschedulable(*reasons: str) -> tuple[Code, list[str]]:
    return Code.UNSCHEDULABLE, list(reasons)


# --- the scheduler on an embedded cluster, with the simulated volume controllers -------------


def run(body: Any, *, nodes: Iterable[Node] = (), objects: Iterable[Any] = (),
        controllers: bool = True) -> Any:
    """Create nodes and objects on a MemoryCluster, start the Scheduler and (unless told not
    to) the volume controllers (PV binding, provisioning), run `body(client, sched)`, stop."""
    from phalanx.cluster.clock import run_virtual
    from phalanx.cluster.memory import MemoryCluster
    from phalanx.scheduler import Scheduler
    from phalanx.sim.volumes import VolumeControllers

    async def main() -> Any:
        client = MemoryCluster()
        for n in nodes:
            await client.create(n)
        for obj in objects:
            await client.create(obj)
        sched = Scheduler(client)
        volumes = VolumeControllers(client) if controllers else None
        if volumes is not None:
            await volumes.start()
        await sched.start()
        try:
            return await body(client, sched)
        finally:
            await sched.stop()
            if volumes is not None:
                await volumes.stop()

    return run_virtual(main)
