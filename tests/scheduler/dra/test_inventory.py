"""The device inventory's vectorised counts stay equal to a full recount as devices are
taken and freed (Filter reads them without recounting)."""

from __future__ import annotations

import random

import numpy as np

from phalanx.api.core import Node
from phalanx.scheduler.dra.inventory import Inventory
from phalanx.scheduler.snapshot import Snapshot
from phalanx.sim.clusterspec import DraGpus
from phalanx.sim.dradriver import device_class, gpu_slice


def _setup(nodes: int = 20) -> tuple[Inventory, Snapshot]:
    snap = Snapshot()
    slices = []
    for i in range(nodes):
        n = Node.model_validate({"metadata": {"name": f"n{i}", "labels": {
            "nvidia.com/gpu.clique": f"c.{i // 4}"}}})
        snap.set_node(n)
        slices.append(gpu_slice(n, DraGpus(count=8)))
    inv = Inventory()
    inv.rebuild(slices, lambda d: False)
    return inv, snap


def _recount(inv: Inventory, snap: Snapshot, usable: np.ndarray) -> np.ndarray:
    rows = inv.rows(snap)
    sel = usable & ~inv.in_use & (rows >= 0)
    return np.bincount(rows[sel], minlength=snap.n)[: snap.n]


def test_free_counts_follow_marks() -> None:
    inv, snap = _setup()
    rng = random.Random(7)
    usable = inv.mask(device_class(), (), ())
    half = inv.every_device & (np.arange(len(inv.recs)) % 2 == 0)
    inv.free_per_row(snap, usable)
    inv.free_per_row(snap, half)
    for _ in range(300):
        rec = rng.choice(inv.recs)
        inv.mark(rec.id, rng.random() < 0.6)
        assert (inv.free_per_row(snap, usable) == _recount(inv, snap, usable)).all()
        assert (inv.free_per_row(snap, half) == _recount(inv, snap, half)).all()


def test_best_group_counts_devices_sharing_one_clique() -> None:
    inv, snap = _setup(4)
    usable = inv.every_device
    for rec in inv.recs[:5]:  # node n0: gpu-0..4 taken
        inv.mark(rec.id, True)
    best = inv.best_group_per_row(snap, usable, "gpu.nvidia.com/cliqueID")
    assert best.tolist() == [3, 8, 8, 8]
