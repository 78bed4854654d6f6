"""Where a PersistentVolume may be used: its node affinity over snapshot rows, vectorised.

Evaluated as component-helpers' volume.CheckNodeAffinity does: against the node's labels only
(a `matchFields` requirement sees no node name), a term without requirements or with an
invalid one matches nothing, terms are ORed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from phalanx.api.core import NodeSelectorRequirement
from phalanx.api.storage import PersistentVolume

if TYPE_CHECKING:
    from phalanx.scheduler.snapshot import Snapshot


def _requirement_mask(req: NodeSelectorRequirement, snap: Snapshot,
                      idx: np.ndarray) -> np.ndarray | None:
    """Rows of `idx` whose labels satisfy `req`; None when the requirement is invalid."""
    op, values = req.operator, list(req.values or ())
    col = snap.label_column(req.key)[idx]
    if op in ("In", "NotIn"):
        if not values:
            return None
        hit = np.isin(col, [snap.label_value_id(req.key, v) for v in values])
        return hit if op == "In" else ~hit
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return col != 0 if op == "Exists" else col == 0
    if op in ("Gt", "Lt"):
        try:
            bound = float(int(values[0])) if len(values) == 1 else None
        except ValueError:
            bound = None
        if bound is None:
            return None
        nums = snap.numeric_label_column(req.key)[idx]
        with np.errstate(invalid="ignore"):
            return nums > bound if op == "Gt" else nums < bound
    return None


def affinity_mask(pv: PersistentVolume, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
    """volume.CheckNodeAffinity for every row of `idx` (True = the PV may be used there)."""
    out = np.zeros(idx.size, dtype=bool)
    out[RowIndex(snap, idx).positions(pv)] = True
    return out


class RowIndex:
    """Where PVs may be used among the rows `idx`, as positions into `idx`.

    A term's first `In` requirement is looked up in a per-key sorted index of the rows'
    label values (built once per key and cycle), so a local PV (hostname In [node]) costs a
    binary search, not a pass over every node; the term's other requirements are checked on
    the few rows found."""

    def __init__(self, snap: Snapshot, idx: np.ndarray) -> None:
        self.snap = snap
        self.idx = idx
        self._sorted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._cache: dict[str, tuple[PersistentVolume, np.ndarray]] = {}

    def _with_values(self, key: str, values: list[str]) -> np.ndarray:
        index = self._sorted.get(key)
        if index is None:
            col = self.snap.label_column(key)[self.idx]
            order = np.argsort(col, kind="stable")
            index = self._sorted[key] = (order, col[order])
        order, sorted_col = index
        parts = []
        for v in values:
            vid = self.snap.label_value_id(key, v)
            if vid > 0:
                lo = int(sorted_col.searchsorted(vid))
                hi = int(sorted_col.searchsorted(vid, side="right"))
                parts.append(order[lo:hi])
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else _NOWHERE

    def positions(self, pv: PersistentVolume) -> np.ndarray:
        """Positions (into `idx`, no repeats) of the rows whose labels satisfy the PV's
        node affinity."""
        hit = self._cache.get(pv.name)
        if hit is not None and hit[0] is pv:
            return hit[1]
        na = pv.spec.node_affinity
        required = na.required if na is not None else None
        if required is None:
            out = np.arange(self.idx.size)
        else:
            found = [self._term(t.match_expressions or [], t.match_fields or [])
                     for t in required.node_selector_terms]
            found = [f for f in found if f.size]
            if len(found) == 1:
                out = found[0]
            else:
                out = np.unique(np.concatenate(found)) if found else _NOWHERE
        self._cache[pv.name] = (pv, out)
        return out

    def _term(self, exprs: list[NodeSelectorRequirement],
              fields: list[NodeSelectorRequirement]) -> np.ndarray:
        if (not exprs and not fields) or not _fields_hold(fields):
            return _NOWHERE  # an empty term selects nothing
        rest = exprs
        if exprs and exprs[0].operator == "In" and exprs[0].values:
            cand = self._with_values(exprs[0].key, list(exprs[0].values))
            rest = exprs[1:]
            if len(exprs[0].values) > 1:
                cand = np.unique(cand)
        else:
            cand = np.arange(self.idx.size)
        for req in rest:
            if not cand.size:
                break
            m = _requirement_mask(req, self.snap, self.idx[cand])
            if m is None:
                return _NOWHERE
            cand = cand[m]
        return cand


_NOWHERE = np.zeros(0, dtype=np.int64)


def _fields_hold(fields: list[NodeSelectorRequirement]) -> bool:
    """A term's matchFields against the node CheckNodeAffinity builds: labels only, so its
    name is "" (metadata.name In [x] never holds, NotIn [x] always does, x != "")."""
    for freq in fields:
        fvals = list(freq.values or ())
        if freq.key != "metadata.name" or freq.operator not in ("In", "NotIn") or \
                len(fvals) != 1 or (freq.operator == "In") == ("" not in fvals):
            return False
    return True


