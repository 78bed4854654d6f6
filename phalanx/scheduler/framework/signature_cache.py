"""Per pod-signature results of NODE_LOCAL plugins, refreshed on changed snapshot rows only.

Pods with equal signatures (a gang's members, a Deployment's replicas) get identical
node-local Filter and Score answers for a node in a given state. An entry keeps, over every
snapshot row, the feasibility under the node-local filters and each node-local score plugin's
raw score, plus the row versions they were computed at. The next pod with that signature
re-evaluates only the rows whose version moved (typically the one or two nodes its assumed
peers landed on): a few rows instead of thousands, which is what makes a 64-pod gang cost
about as much as one pod in the hot path. Of those plugins, the NODE_ONLY ones (node object
alone) are kept apart and re-evaluated only where the node itself changed
(`Snapshot.node_version`), not where a peer was merely added.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from phalanx.scheduler.snapshot import Snapshot


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_ROWS.setflags(write=False)
# Up to this many rows, a refresh updates the entry element by element (NumPy's cost per
# call outweighs the work).
_FEW = 8


class SignatureEntry:
    __slots__ = ("feasible", "versions", "node_ok", "node_versions", "scores", "seen", "_rows")

    def __init__(self, n: int) -> None:
        self.feasible = np.zeros(n, dtype=bool)
        self._rows: np.ndarray | None = None  # flatnonzero(feasible), until a row flips
        self.versions = np.full(n, -1, dtype=np.int64)  # -1: never evaluated
        # The NODE_ONLY filters' answer per row, and the node version it was taken at.
        self.node_ok = np.zeros(n, dtype=bool)
        self.node_versions = np.full(n, -1, dtype=np.int64)
        self.scores: dict[str, np.ndarray] = {}  # plugin -> raw score per row
        self.seen = -1  # snapshot version every row was evaluated at or after (-1: none)

    def grow(self, n: int) -> None:
        extra = n - self.feasible.shape[0]
        if extra <= 0:
            return
        self.feasible = np.concatenate([self.feasible, np.zeros(extra, dtype=bool)])
        self._rows = None
        self.versions = np.concatenate([self.versions, np.full(extra, -1, dtype=np.int64)])
        self.node_ok = np.concatenate([self.node_ok, np.zeros(extra, dtype=bool)])
        self.node_versions = np.concatenate([self.node_versions, np.full(extra, -1, dtype=np.int64)])
        self.scores = {k: np.concatenate([v, np.zeros(extra)]) for k, v in self.scores.items()}

    def set_feasible(self, dirty: np.ndarray, ok: np.ndarray) -> None:
        """Rows `dirty` re-evaluated: those in `ok` (a subset) feasible, the others not."""
        if dirty.size <= _FEW:
            # The usual refresh of one or a few rows: element by element.
            feasible = self.feasible
            now_ok = set(ok.tolist())
            for r in dirty.tolist():
                v = r in now_ok
                if feasible.item(r) != v:
                    feasible[r] = v
                    self._rows = None
            return
        before = self.feasible[dirty]
        self.feasible[dirty] = False
        self.feasible[ok] = True
        if self._rows is not None and not np.array_equal(before, self.feasible[dirty]):
            self._rows = None

    def feasible_rows(self, n: int) -> np.ndarray:
        """The feasible rows among the first `n`, ascending (kept until a row flips; callers
        must not modify the array)."""
        rows = self._rows
        if rows is None or (rows.size and rows[-1] >= n):
            rows = self._rows = np.flatnonzero(self.feasible[:n])
            rows.setflags(write=False)
        return rows

    def node_dirty(self, snap: Snapshot, rows: np.ndarray) -> np.ndarray:
        """Of `rows` (dirty, live), those whose node object changed since the NODE_ONLY
        plugins last saw them; marks them seen at the current node version."""
        now = snap.node_version[rows]
        changed = rows[self.node_versions[rows] != now]
        self.node_versions[rows] = now
        return changed

    def dirty_rows(self, snap: Snapshot) -> np.ndarray:
        """Rows changed since last evaluated; marks them evaluated at the current version."""
        n = snap.n
        self.grow(n)
        bumped = snap.rows_bumped_since(self.seen) if 0 <= self.seen <= snap.version else None
        self.seen = snap.version
        if bumped is not None:
            # The usual case: the few rows changed since this signature's last cycle, read
            # off the snapshot's bump log instead of comparing every row's version.
            if not bumped:
                return _NO_ROWS
            dirty = np.array(sorted(set(bumped)), dtype=np.int64)  # np.unique: 3x the cost
            now = snap.row_version[dirty]
            # A row whose pods were only relabelled keeps its row_version: not dirty here.
            changed = self.versions[dirty] != now
            dirty, now = dirty[changed], now[changed]
            self.versions[dirty] = now
            return dirty
        rv = snap.row_version[:n]
        dirty = np.flatnonzero(self.versions[:n] != rv)
        self.versions[dirty] = rv[dirty]
        return dirty


class SignatureCache:
    """LRU of SignatureEntry by key (signature + the node-local plugins skipped for it)."""

    def __init__(self, capacity: int = 256) -> None:
        self._entries: OrderedDict[Hashable, SignatureEntry] = OrderedDict()
        self._capacity = capacity
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, snap: Snapshot) -> SignatureEntry:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            entry = self._entries[key] = SignatureEntry(snap.n)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        else:
            self.hits += 1
            self._entries.move_to_end(key)
        return entry

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
