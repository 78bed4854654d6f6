"""NodeVolumeLimits' incremental index (attachindex.py: limit columns updated per CSINode
change, nodes recounted when their row, attachments or a storage object they depend on
changes) never changes a verdict: a long-lived plugin answers as a freshly built one after
every random change to pods, nodes, claims, PVs, classes, CSINodes and VolumeAttachments
(seeded, so a failure replays)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod
from phalanx.api.storage import PersistentVolume, PersistentVolumeSpec
from phalanx.api.storage_csi import (
    CSINode,
    CSINodeDriver,
    CSINodeSpec,
    VolumeAttachment,
    VolumeAttachmentSource,
    VolumeAttachmentSpec,
    VolumeNodeResources,
)
from phalanx.scheduler.attachindex import AttachIndex
from phalanx.scheduler.csi import CSICache
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import VolumeCache

from .kube.csi_harness import Handle
from .kube.volume_harness import node, pod, pvc, storage_class

DRIVERS = ("d1.csi.io", "d2.csi.io")
CLAIMS = [f"c{i}" for i in range(16)]


class World:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.volumes, self.csi, self.snap = VolumeCache(), CSICache(), Snapshot()
        for i, d in enumerate(DRIVERS):
            self.volumes.set_class(storage_class(f"sc{i}", None, d))
        for name in CLAIMS:
            self.volumes.set_pvc(pvc(name, self.r.choice(["sc0", "sc1"])))
        self.nodes = [f"n{i}" for i in range(6)]
        for n in self.nodes:
            self.snap.set_node(node(n))
        self.pods: dict[str, str] = {}
        self.seq = 0
        self.plugin = NodeVolumeLimits(Handle(self.volumes, self.csi, self.snap))

    def a_pod(self) -> Pod:
        self.seq += 1
        vols: list[dict[str, Any]] = [
            {"name": f"v{j}", "persistentVolumeClaim": {"claimName": self.r.choice(CLAIMS)}}
            for j in range(self.r.randint(0, 3))]
        if self.r.random() < 0.3:
            vols.append({"name": "ebs", "awsElasticBlockStore": {
                "volumeID": f"vol-{self.r.randint(0, 3)}"}})
        if self.r.random() < 0.1:
            vols.append({"name": "missing", "persistentVolumeClaim": {"claimName": "nope"}})
        return pod(f"p{self.seq}", volumes=vols)

    def step(self) -> None:
        r, op = self.r, self.r.randrange(10)
        live = [n for n in self.nodes if self.snap.row(n) is not None]
        if op == 0 and live:
            p = self.a_pod()
            where = r.choice(live)
            self.snap.add_pod(PodInfo(p), where)
            self.pods[f"default/{p.metadata.name}"] = where
        elif op == 1 and self.pods:
            key = r.choice(sorted(self.pods))
            self.snap.remove_pod(key)
            del self.pods[key]
        elif op == 2:  # a claim gets bound to a CSI PV (or unbound again)
            name = r.choice(CLAIMS)
            got = self.volumes.pvcs[f"default/{name}"].copy_deep()
            if got.spec.volume_name:
                got.spec.volume_name = None
            else:
                pv_name = f"pv-{name}-{r.randint(0, 1)}"
                self.volumes.set_pv(PersistentVolume(metadata=ObjectMeta(name=pv_name),
                                                     spec=PersistentVolumeSpec(csi={
                                                         "driver": r.choice(DRIVERS),
                                                         "volumeHandle": pv_name})))
                got.spec.volume_name = pv_name
            self.volumes.set_pvc(got)
        elif op == 3:
            n = r.choice(self.nodes)
            drivers = [CSINodeDriver(name=d, node_id=n, allocatable=VolumeNodeResources(
                count=r.randint(0, 4)) if r.random() < 0.8 else None)
                for d in DRIVERS + ("ebs.csi.aws.com",) if r.random() < 0.7]
            self.csi.set_node(CSINode(metadata=ObjectMeta(name=n),
                                      spec=CSINodeSpec(drivers=drivers)))
        elif op == 4 and self.csi.nodes:
            self.csi.delete_node(self.csi.nodes[r.choice(sorted(self.csi.nodes))])
        elif op == 5:
            pvs = sorted(self.volumes.pvs)
            if pvs:
                name = f"va-{r.randint(0, 5)}"
                va = VolumeAttachment(metadata=ObjectMeta(name=name), spec=VolumeAttachmentSpec(
                    attacher=r.choice(DRIVERS), node_name=r.choice(self.nodes),
                    source=VolumeAttachmentSource(persistent_volume_name=r.choice(pvs))))
                if name in self.csi.attachments and r.random() < 0.5:
                    self.csi.delete_attachment(self.csi.attachments[name])
                else:
                    self.csi.set_attachment(va)
        elif op == 6 and len(live) > 2:
            gone = r.choice(live)
            for key in [k for k, v in self.pods.items() if v == gone]:
                del self.pods[key]
            self.snap.remove_node(gone)
        elif op == 7:
            back = [n for n in self.nodes if self.snap.row(n) is None]
            if back:
                self.snap.set_node(node(r.choice(back)))
        elif op == 8:  # a class comes back with another provisioner, or goes
            name = r.choice(["sc0", "sc1"])
            if name in self.volumes.classes and r.random() < 0.3:
                self.volumes.delete_class(self.volumes.classes[name])
            else:
                self.volumes.set_class(storage_class(
                    name, None, r.choice(DRIVERS + ("kubernetes.io/aws-ebs",))))
        elif op == 9 and self.volumes.pvs:
            self.volumes.delete_pv(self.volumes.pvs[r.choice(sorted(self.volumes.pvs))])

    def verdicts(self, plugin: NodeVolumeLimits, p: Pod) -> list[Any]:
        rows = self.snap.valid_rows()
        res = plugin.filter(CycleState(), PodInfo(p), self.snap, rows)
        out = []
        for i, row in enumerate(rows):
            why = sorted(r.reason for r in res.rejections if r.mask[i])
            out.append((self.snap.names[int(row)], bool(res.feasible[i]), why))
        return out


def columns(index: AttachIndex, snap: Snapshot) -> dict[str, Any]:
    """What the index says about every live node, by node name."""
    rows = snap.valid_rows()
    names = [snap.names[int(r)] for r in rows]

    def per_row(col: np.ndarray) -> dict[str, Any]:
        return {n: col[int(r)].item() for n, r in zip(names, rows, strict=True)
                if col[int(r)]}

    return {
        "has_node": per_row(index.has_node), "any_limit": per_row(index.any_limit),
        "limits": {d: per_row(c + 1) for d, c in index.limits.items() if per_row(c + 1)},
        "counts": {d: per_row(c) for d, c in index.counts.items() if per_row(c)},
        "failures": {snap.names[r]: why for r, why in index.failures.items()},
        "names": {u: sorted(snap.names[r] for r in rs) for u, rs in index.name_rows.items()},
    }


def test_the_index_equals_a_fresh_one_through_random_changes() -> None:
    for seed in range(6):
        w = World(100 + seed)
        busy = 0
        for _ in range(200):
            w.step()
            fresh = AttachIndex(w.volumes, w.csi)
            w.plugin.index.sync(w.snap)
            fresh.sync(w.snap)
            want = columns(fresh, w.snap)
            assert columns(w.plugin.index, w.snap) == want, seed
            busy += bool(want["counts"])
            w.volumes.listeners.remove(fresh._volume_changed)
            w.csi.listeners.remove(fresh._csi_changed)
        assert busy > 40  # nodes do hold volumes along the walk


def test_cached_answers_equal_fresh_ones_through_random_changes() -> None:
    for seed in range(4):
        w = World(seed)
        rejected = 0
        for _ in range(150):
            w.step()
            candidate = w.a_pod()
            fresh = NodeVolumeLimits(Handle(w.volumes, w.csi, w.snap))
            want = w.verdicts(fresh, candidate)
            assert w.verdicts(w.plugin, candidate) == want, seed
            rejected += sum(not ok for _, ok, _ in want)
            w.volumes.listeners.remove(fresh.index._volume_changed)
            w.csi.listeners.remove(fresh.index._csi_changed)
        assert rejected > 0  # the walk reaches limits, not only empty nodes


def test_nodes_without_attachable_volumes_are_judged_without_counting() -> None:
    """Only rows holding volumes (or attachments) are counted."""
    w = World(7)
    w.csi.set_node(CSINode(metadata=ObjectMeta(name="n0"), spec=CSINodeSpec(drivers=[
        CSINodeDriver(name="d1.csi.io", node_id="n0", allocatable=VolumeNodeResources(count=1))])))
    w.snap.add_pod(PodInfo(pod("plain")), "n1")
    p = pod("new", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c0"}}])
    w.plugin.filter(CycleState(), PodInfo(p), w.snap, w.snap.valid_rows())
    assert w.plugin.index._rows == {}
    assert not any(np.any(c) for c in w.plugin.index.counts.values())
