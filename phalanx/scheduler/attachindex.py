"""Per-node attach limits and attached-volume counts as NumPy columns, kept current
incrementally, so NodeVolumeLimits judges 5,000 nodes with a few vector operations.

Columns over snapshot rows:
- `has_node`, `any_limit` and, per CSI driver, `limits[driver]` (-1: no limit), from the
  CSINodes;
- per driver, `counts[driver]`: volumes the node holds (its pods, bound and assumed, one per
  unique volume; and its VolumeAttachments), with `failures` for nodes whose pods' volumes
  cannot be counted (kube's Filter errors there);
- `name_rows`: the rows where each unique volume name is held by a pod (a new pod's volume
  already there does not count again).

A node is counted again when its snapshot row changes (a pod added or removed), when a
storage object its count looked at changes (a claim, PV or class: the dependencies each
count records), or when its CSINode or VolumeAttachments change. One index serves every
profile (`AttachIndex.for_handle`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phalanx.api.storage_csi import CSINode, VolumeAttachment
from phalanx.scheduler.attachcount import AttachCounter, Dep, NodeCounts
from phalanx.scheduler.csi import CSICache
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.volumes import PV_EVENT, PVC_EVENT, SC_EVENT, VolumeCache

SHARED_KEY = "nodevolumelimits/index"
_MAX_PENDING = 10_000  # beyond this many unprocessed changes, recount every node instead
_EMPTY = NodeCounts()
_DEP_KIND = {PVC_EVENT: "pvc", PV_EVENT: "pv", SC_EVENT: "sc"}


class AttachIndex:
    def __init__(self, volumes: VolumeCache, csi: CSICache) -> None:
        self.counter = AttachCounter(volumes, csi)
        self.csi = csi
        self._pending: list[tuple[str, str]] = []  # ("node", name) or a storage Dep
        self._recount_all = False
        volumes.listeners.append(self._volume_changed)
        csi.listeners.append(self._csi_changed)
        self._snap: Snapshot | None = None
        self._node_set = -1
        self._reset(0)

    @classmethod
    def for_handle(cls, handle: Any) -> AttachIndex:
        volumes, csi = VolumeCache.for_handle(handle), CSICache.for_handle(handle)
        shared = getattr(handle, "shared", None)
        if shared is None:
            return cls(volumes, csi)
        return shared(SHARED_KEY, lambda: cls(volumes, csi))  # type: ignore[no-any-return]

    def _reset(self, cap: int) -> None:
        self.has_node = np.zeros(cap, dtype=bool)
        self.any_limit = np.zeros(cap, dtype=bool)
        self.limits: dict[str, np.ndarray] = {}
        self.counts: dict[str, np.ndarray] = {}
        self.failed = np.zeros(cap, dtype=bool)
        self.failures: dict[int, str] = {}
        self.name_rows: dict[str, dict[int, None]] = {}
        self._seen = np.full(cap, -1, dtype=np.int64)  # row version last counted
        self._rows: dict[int, NodeCounts] = {}
        self._dep_rows: dict[Dep, dict[int, None]] = {}

    # --- change feed --------------------------------------------------------------------

    def _volume_changed(self, kind: str, old: Any, new: Any) -> None:
        dep_kind = _DEP_KIND.get(kind)
        if dep_kind is None:
            return
        for obj in (old, new):
            if obj is not None:
                key = obj.name if dep_kind != "pvc" else \
                    f"{obj.metadata.namespace or ''}/{obj.name}"
                self._note((dep_kind, key))

    def _csi_changed(self, kind: str, old: Any, new: Any) -> None:
        for obj in (old, new):
            if isinstance(obj, CSINode):
                self._note(("node", obj.name))
            elif isinstance(obj, VolumeAttachment):
                self._note(("node", obj.spec.node_name))

    def _note(self, change: tuple[str, str]) -> None:
        if self._recount_all:
            return
        self._pending.append(change)
        if len(self._pending) > _MAX_PENDING:
            self._pending.clear()
            self._recount_all = True

    # --- bringing the columns up to date ------------------------------------------------

    def sync_limits(self, snap: Snapshot) -> None:
        """Bring the CSINode columns up to date (cheap: changed CSINodes only)."""
        cap = len(snap.valid)
        if snap is not self._snap or self._seen.size != cap or self._recount_all:
            self._snap, self._recount_all = snap, False
            self._pending.clear()
            self._reset(cap)
            self._node_set = -1
        if self._node_set != snap.node_set_version:  # rows may hold other nodes now
            self._node_set = snap.node_set_version
            self.has_node[:] = False
            self.any_limit[:] = False
            for col in self.limits.values():
                col[:] = -1
            for name, node in self.csi.nodes.items():
                row = snap.index.get(name)
                if row is not None:
                    self._set_limits(row, node)
        if self._pending:
            deps = []
            for kind, key in self._pending:
                if kind != "node":
                    deps.append((kind, key))
                    continue
                row = snap.index.get(key)
                if row is not None:
                    self._set_limits(row, self.csi.nodes.get(key))
                    self._seen[row] = -1
            self._pending = deps

    def sync(self, snap: Snapshot) -> None:
        """Bring every column up to date: limits, then the counts of the nodes whose row or
        storage objects changed."""
        self.sync_limits(snap)
        pending, self._pending = self._pending, []
        for dep in pending:
            for row in self._dep_rows.get(dep, ()):
                self._seen[row] = -1
        n = snap.n
        for row in np.flatnonzero(self._seen[:n] != snap.row_version[:n]):
            self._recount(snap, int(row))

    def _set_limits(self, row: int, node: CSINode | None) -> None:
        for col in self.limits.values():
            col[row] = -1
        self.has_node[row] = node is not None
        limits = node.volume_limits() if node is not None else {}
        self.any_limit[row] = bool(limits)
        for driver, count in limits.items():
            col = self.limits.get(driver)
            if col is None:
                col = self.limits[driver] = np.full(self._seen.size, -1, dtype=np.int64)
            col[row] = count

    def _recount(self, snap: Snapshot, row: int) -> None:
        old = self._rows.pop(row, _EMPTY)
        for driver in old.counts:
            self.counts[driver][row] = 0
        for unique in old.names:
            rows = self.name_rows.get(unique)
            if rows is not None:
                rows.pop(row, None)
                if not rows:
                    del self.name_rows[unique]
        for dep in old.deps:
            rows = self._dep_rows.get(dep)
            if rows is not None:
                rows.pop(row, None)
                if not rows:
                    del self._dep_rows[dep]
        self.failed[row] = False
        self.failures.pop(row, None)
        self._seen[row] = snap.row_version[row]
        name = snap.names[row]
        if not snap.valid[row]:
            return
        pods = [p for p in snap.pods_on(row).values() if p.attachable]
        if not pods and not self.csi.attachments_on(name):
            return
        got = self.counter.node_counts(pods, name, bool(self.has_node[row]))
        self._rows[row] = got
        for driver, count in got.counts.items():
            col = self.counts.get(driver)
            if col is None:
                col = self.counts[driver] = np.zeros(self._seen.size, dtype=np.int64)
            col[row] = count
        for unique in got.names:
            self.name_rows.setdefault(unique, {})[row] = None
        for dep in got.deps:
            self._dep_rows.setdefault(dep, {})[row] = None
        if got.failure is not None:
            self.failed[row] = True
            self.failures[row] = got.failure
