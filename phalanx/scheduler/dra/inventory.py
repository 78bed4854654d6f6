"""Every device the scheduler may hand out, as NumPy columns, for vectorised Filter checks.

A device is *indexed* when it sits in a node-local slice (`spec.nodeName`) of a complete,
valid pool at its newest generation, consumes no shared counters and has no binding
conditions: then which node it serves is a column (`node_name`, turned into snapshot rows
per snapshot layout) and whether it is in use is a bit kept current by the tracker. Devices
reachable otherwise (network-attached pools, per-device node selection, counters) are only
counted in `unindexed`: a pod whose requests may select one of them takes the exact path
(the allocator on every candidate node).

`mask(class, selectors, tolerations)` is the devices a request can take regardless of use
(class and request selectors, untolerated taints excluded), computed once per inventory
generation; `codes(attribute)` interns an attribute's values per device, so a
`matchAttribute` constraint is a group-by.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from phalanx.api.devicecel import CELError
from phalanx.api.resource import DeviceClass, DeviceToleration, ResourceSlice

from .matching import lookup_attribute, selector_verdict, taint_blocks
from .pools import DeviceID, DeviceRec, device_recs


@contextmanager
def _no_gc() -> Iterator[None]:
    """Building tens of thousands of small acyclic objects at once: the cyclic collector
    would otherwise walk every live object several times meanwhile (most of the cost)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class MatcherError(Exception):
    """A selector failed on some device (the exact allocator reports it with context)."""


class Inventory:
    def __init__(self) -> None:
        self.generation = 0
        self.recs: list[DeviceRec] = []
        self.index: dict[DeviceID, int] = {}
        self.node_name: list[str] = []
        self.in_use = np.zeros(0, dtype=bool)
        self.unindexed = 0  # devices in slices that are not node-local and simple
        self._rows: tuple[Any, ...] | None = None
        self._masks: dict[Any, np.ndarray | MatcherError] = {}
        self._codes: dict[str, np.ndarray] = {}
        # free_per_row results kept current by `mark`: id(usable mask) -> (mask, rows key,
        # counts). A pod's Filter then costs a lookup, not a pass over every device.
        self._free: dict[int, tuple[np.ndarray, Any, np.ndarray]] = {}

    # --- building ---------------------------------------------------------------------------

    def rebuild(self, slices: Sequence[ResourceSlice], used: Callable[[DeviceID], bool]) -> None:
        """Re-index from the informer's slices (call when any slice changed)."""
        with _no_gc():
            self._rebuild(slices, used)

    def _rebuild(self, slices: Sequence[ResourceSlice],
                 used: Callable[[DeviceID], bool]) -> None:
        self.generation += 1
        self._rows = None
        self._free.clear()
        self._masks.clear()
        self._codes.clear()
        by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        for rs in slices:
            by_pool.setdefault((rs.spec.driver, rs.spec.pool.name), []).append(rs)
        recs: list[DeviceRec] = []
        nodes: list[str] = []
        unindexed = 0
        for pid in sorted(by_pool):
            group = by_pool[pid]
            newest = max(rs.spec.pool.generation for rs in group)
            current = [rs for rs in group if rs.spec.pool.generation == newest]
            simple = all(rs.spec.node_name and not rs.spec.shared_counters for rs in current)
            complete = len(current) == current[0].spec.pool.resource_slice_count
            names = [d.name for rs in current for d in rs.spec.devices]
            valid = len(names) == len(set(names))
            for rs in sorted(current, key=lambda s: s.name):
                for rec in device_recs(rs):
                    d = rec.device
                    if (simple and complete and valid and not d.consumes_counters
                            and not d.binding_conditions):
                        recs.append(rec)
                        nodes.append(rs.spec.node_name or "")
                    else:
                        unindexed += 1
        self.recs, self.node_name, self.unindexed = recs, nodes, unindexed
        self.index = {rec.id: i for i, rec in enumerate(recs)}
        self.in_use = np.fromiter((used(r.id) for r in recs), dtype=bool, count=len(recs))

    @property
    def every_device(self) -> np.ndarray:
        """A mask of every indexed device (one object per generation: free counts of it are
        kept current)."""
        mask = self._masks.get("every")
        if not isinstance(mask, np.ndarray) or mask.size != len(self.recs):
            mask = self._masks["every"] = np.ones(len(self.recs), dtype=bool)
        return mask

    def mark(self, dev: DeviceID, used: bool) -> None:
        i = self.index.get(dev)
        if i is None or self.in_use[i] == used:
            return
        self.in_use[i] = used
        if self._free and self._rows is not None:
            row = int(self._rows[1][i])
            if row >= 0:
                for usable, _, counts in self._free.values():
                    if usable[i]:
                        counts[row] += -1 if used else 1

    # --- reading ----------------------------------------------------------------------------

    def rows(self, snap: Any) -> np.ndarray:
        """Snapshot row of each device's node (-1: the node is not in the snapshot)."""
        key = (self.generation, snap.node_set_version, id(snap))
        if self._rows is None or self._rows[0] != key:
            get = snap.index.get
            rows = np.fromiter((get(n, -1) for n in self.node_name), dtype=np.int64,
                               count=len(self.node_name))
            self._rows = (key, rows)
        return self._rows[1]

    def mask(self, cls: DeviceClass, selectors: Sequence[Any],
             tolerations: Sequence[DeviceToleration], *, taints: bool = True) -> np.ndarray:
        """Devices a request may take if free. Raises MatcherError when a selector fails."""
        exprs = tuple(s.cel.expression for s in (*(cls.spec.selectors or ()), *selectors)
                      if s.cel is not None)
        key = (id(cls), cls.metadata.resource_version, exprs,
               tuple(t.model_dump_json() for t in tolerations), taints)
        hit = self._masks.get(key)
        if hit is None:
            with _no_gc():
                hit = self._build_mask(exprs, tolerations, taints)
            self._masks[key] = hit
        if isinstance(hit, MatcherError):
            raise hit
        return hit

    def _build_mask(self, exprs: tuple[str, ...], tolerations: Sequence[DeviceToleration],
                    taints: bool) -> np.ndarray | MatcherError:
        out = np.zeros(len(self.recs), dtype=bool)
        try:
            for i, rec in enumerate(self.recs):
                ok = True
                for e in exprs:
                    if not selector_verdict(rec, e):
                        ok = False
                        break
                if ok and taints and rec.device.taints and taint_blocks(rec, tolerations):
                    ok = False
                out[i] = ok
        except CELError as e:
            return MatcherError(str(e))
        return out

    def codes(self, attribute: str) -> np.ndarray:
        """Per device: an id of its value of `attribute` (0 = not set or unusable)."""
        hit = self._codes.get(attribute)
        if hit is None:
            values: dict[tuple[str, Any], int] = {}
            hit = np.zeros(len(self.recs), dtype=np.int64)
            for i, rec in enumerate(self.recs):
                attr = lookup_attribute(rec, attribute)
                if attr is None or attr.kind() not in ("int", "bool", "string", "version"):
                    continue
                hit[i] = values.setdefault((attr.kind(), attr.value()), len(values) + 1)
            self._codes[attribute] = hit
        return hit

    def free_per_row(self, snap: Any, usable: np.ndarray) -> np.ndarray:
        """Free devices of `usable` per snapshot row (length snap.n). Read-only."""
        rows = self.rows(snap)
        key = self._rows[0] if self._rows is not None else None
        hit = self._free.get(id(usable))
        if hit is not None and hit[0] is usable and hit[1] == key and hit[2].size == snap.n:
            return hit[2]
        sel = usable & ~self.in_use & (rows >= 0)
        counts = np.bincount(rows[sel], minlength=snap.n)[: snap.n].copy()
        if len(self._free) > 64:
            self._free.clear()
        self._free[id(usable)] = (usable, key, counts)
        return counts

    def best_group_per_row(self, snap: Any, usable: np.ndarray, attribute: str) -> np.ndarray:
        """Per row: the most free devices of `usable` that share one value of `attribute`."""
        rows = self.rows(snap)
        codes = self.codes(attribute)
        sel = usable & ~self.in_use & (rows >= 0) & (codes > 0)
        out = np.zeros(snap.n, dtype=np.int64)
        if not sel.any():
            return out
        keys, counts = np.unique(rows[sel] * (int(codes.max()) + 1) + codes[sel],
                                 return_counts=True)
        np.maximum.at(out, keys // (int(codes.max()) + 1), counts)
        return out
