"""Nodes as NumPy columns, with the pods (bound and assumed) counted against them.

One row per node. Resources are a float matrix (rows x resources) of allocatable and
requested amounts in canonical units (phalanx.scheduler.resources), so a Filter over 5,000
nodes is one vectorised comparison. Labels are interned per key into int32 columns (0 = the
node lacks the label) built on first use; taints are interned into taint-set ids so a pod's
tolerations are matched once per distinct taint set, not once per node.

Every change to a row bumps `row_version[row]`, which lets the framework refresh cached filter
results only on the rows that changed. The scheduling cycle is synchronous, so it reads the
live snapshot without copying; the cache (cache.py) applies informer events and assumed pods.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from phalanx.scheduler.affinity import NO_TERMS, PodLabelIndex
from phalanx.scheduler.framework.types import PodInfo
from phalanx.scheduler.hostports import HostPortIndex
from phalanx.scheduler.volumes import count_claims
from phalanx.scheduler.resources import CPU, EPHEMERAL_STORAGE, GPU, MEMORY, PODS, node_allocatable

if TYPE_CHECKING:
    from phalanx.api.core import Node

DEFAULT_MAX_PODS = 110.0
BASE_RESOURCES = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE, GPU)
Taint = tuple[str, str, str]  # (key, value, effect)


class Snapshot:
    """The scheduler's view of nodes. Read by plugins; written only by the cache."""

    def __init__(self, capacity: int = 64) -> None:
        self._cap = max(8, capacity)
        self.n = 0  # rows in use (valid or freed)
        self._free: list[int] = []  # freed rows, reused lowest first (deterministic)
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nodes: list[Node | None] = []
        self.resources: list[str] = list(BASE_RESOURCES)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.layout_version = 0  # bumps when a resource column is added
        r = len(self.resources)
        self.allocatable = np.zeros((self._cap, r), dtype=np.float64)
        self.requested = np.zeros((self._cap, r), dtype=np.float64)
        # Requested as scoring counts it: like `requested`, except that pods asking no cpu or
        # memory count kube's defaults there (100m, 200Mi), so best-effort pods still spread.
        self.score_requested = np.zeros((self._cap, r), dtype=np.float64)
        self.valid = np.zeros(self._cap, dtype=bool)
        self.unschedulable = np.zeros(self._cap, dtype=bool)
        self.row_version = np.zeros(self._cap, dtype=np.int64)
        # The version at which each row's node object last changed (set, removed); pod adds
        # and removals bump `row_version` only (NODE_ONLY plugins' results survive them).
        self.node_version = np.zeros(self._cap, dtype=np.int64)
        self.version = 0
        # The row of every bump since version `bump_log_base` (version v's row is
        # bump_log[v - bump_log_base - 1]): who changed since version x, without scanning
        # row_version. Restarted when it gets long; readers then compare row_version.
        self.bump_log: list[int] = []
        self.bump_log_base = 0
        self.node_labels: list[dict[str, str]] = []
        self._label_values: dict[str, dict[str, int]] = {}
        self._label_cols: dict[str, np.ndarray] = {}
        self._numeric_cols: dict[str, np.ndarray] = {}
        self.taint_set_ids = np.zeros(self._cap, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]  # id 0 = no taints
        self._taint_set_index: dict[tuple[Taint, ...], int] = {(): 0}
        self.pods: list[dict[str, PodInfo]] = []
        # pod key -> (row, columns, amounts, scoring columns, scoring amounts)
        self._pod_rows: dict[str, tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        # How many counted pods have each priority: preemption asks whether any pod at all
        # has a lower priority before it walks every node's pods for victims.
        self._priorities: Counter[int] = Counter()
        self._valid_rows_cache: tuple[int, np.ndarray] | None = None
        self._vectors_by_shape: dict[Any, tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._node_set_version = 0  # bumps when nodes are added or removed
        # Inter-pod affinity (plugins/interpodaffinity.py): pods with any term, pods with
        # required anti-affinity terms (key -> (row, pod)), and a label index of every pod,
        # built on first use.
        self.with_affinity: dict[str, tuple[int, PodInfo]] = {}
        self.with_required_anti: dict[str, tuple[int, PodInfo]] = {}
        self._label_index: PodLabelIndex | None = None
        # NodePorts: host ports in use per row; VolumeRestrictions: counted pods per claim
        # ("namespace/claim"). Only pods that have ports / PVC volumes touch them.
        self.host_ports = HostPortIndex()
        self.pvc_users: dict[str, int] = {}

    # --- reading ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    def valid_rows(self) -> np.ndarray:
        """Indices of live nodes, ascending (cached until the node set changes)."""
        c = self._valid_rows_cache
        if c is None or c[0] != self._node_set_version:
            c = (self._node_set_version, np.flatnonzero(self.valid[: self.n]))
            self._valid_rows_cache = c
        return c[1]

    @property
    def node_set_version(self) -> int:
        """Bumps whenever a node is added or removed (a row's node may have changed)."""
        return self._node_set_version

    def row(self, node_name: str) -> int | None:
        return self.index.get(node_name)

    def node(self, row: int) -> Node | None:
        return self.nodes[row] if row < self.n else None

    def pods_on(self, row: int) -> dict[str, PodInfo]:
        """Pods counted on a node (bound and assumed), by key. Read-only."""
        return self.pods[row]

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod counted on a node (None: no pods)."""
        return min(self._priorities) if self._priorities else None

    def pod_row(self, pod_key: str) -> int | None:
        entry = self._pod_rows.get(pod_key)
        return entry[0] if entry else None

    def column(self, resource: str) -> int:
        """The column of `resource`, added (zero everywhere) if no node had it yet."""
        i = self.resource_index.get(resource)
        if i is None:
            i = len(self.resources)
            self.resources.append(resource)
            self.resource_index[resource] = i
            pad = np.zeros((self._cap, 1), dtype=np.float64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad.copy()])
            self.score_requested = np.hstack([self.score_requested, pad.copy()])
            self.layout_version += 1
        return i

    def request_vector(self, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        """(columns the pod requests, amounts), `pods`=1 included. Cached on the PodInfo."""
        v = self._vectors(pod)
        return v[1], v[2]

    def score_vector(self, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        """Like request_vector, with kube's scoring defaults for unset cpu/memory."""
        v = self._vectors(pod)
        return v[3], v[4]

    def _vectors(self, pod: PodInfo) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        c = pod._vector_cache
        if c is not None and c[0] == self.layout_version:
            return c
        # Pods with equal requests (a gang's members) share one set of vectors.
        shape = pod.signature[1]
        c = self._vectors_by_shape.get(shape)
        if c is not None and c[0] == self.layout_version:
            pod._vector_cache = c
            return c
        items = sorted(pod.requests.items())
        cols = [self.column(r) for r, _ in items] + [self.resource_index[PODS]]
        vals = [v for _, v in items] + [1.0]
        sitems = sorted(pod.score_requests.items())
        scols = [self.column(r) for r, _ in sitems] + [self.resource_index[PODS]]
        svals = [v for _, v in sitems] + [1.0]
        out = (
            self.layout_version,
            np.asarray(cols, dtype=np.int64),
            np.asarray(vals, dtype=np.float64),
            np.asarray(scols, dtype=np.int64),
            np.asarray(svals, dtype=np.float64),
        )
        pod._vector_cache = out
        if len(self._vectors_by_shape) > 4096:
            self._vectors_by_shape.clear()
        self._vectors_by_shape[shape] = out
        return out

    def free(self, rows: np.ndarray | slice | None = None) -> np.ndarray:
        """allocatable - requested for `rows` (all rows in use when None)."""
        if rows is None:
            rows = slice(0, self.n)
        return self.allocatable[rows] - self.requested[rows]

    def label_column(self, key: str) -> np.ndarray:
        """int32 value ids of label `key` per row (0: absent). Built on first use, then kept."""
        col = self._label_cols.get(key)
        if col is None:
            col = np.zeros(self._cap, dtype=np.int32)
            for row in range(self.n):
                if self.valid[row]:
                    v = self.node_labels[row].get(key)
                    if v is not None:
                        col[row] = self.label_value_id(key, v, create=True)
            self._label_cols[key] = col
        return col

    def label_value_id(self, key: str, value: str, *, create: bool = False) -> int:
        """The id of `value` in label `key`'s column, -1 if no node carries it (and not create)."""
        if not create and key not in self._label_cols:
            self.label_column(key)  # interns the values nodes carry
        values = self._label_values.setdefault(key, {})
        vid = values.get(value)
        if vid is None:
            if not create:
                return -1
            vid = len(values) + 1
            values[value] = vid
        return vid

    def label_values(self, key: str) -> dict[str, int]:
        """Known values of a label key -> id (e.g. the topology domains of a level)."""
        self.label_column(key)
        return dict(self._label_values.get(key, {}))

    def numeric_label_column(self, key: str) -> np.ndarray:
        """float per row of an integer label (NaN when absent or not a number), for Gt/Lt."""
        col = self._numeric_cols.get(key)
        if col is None:
            col = np.full(self._cap, np.nan)
            for row in range(self.n):
                if self.valid[row]:
                    col[row] = _as_number(self.node_labels[row].get(key))
            self._numeric_cols[key] = col
        return col

    # --- writing (cache only) -----------------------------------------------------------

    def _bump(self, row: int, *, node_local: bool = True) -> None:
        """Log `row` as changed. `node_local=False`: only its pods' labels changed, which
        node-local results do not read, so its `row_version` stays."""
        self.version += 1
        if node_local:
            self.row_version[row] = self.version
        log = self.bump_log
        if len(log) >= 4 * self._cap:
            log.clear()
            self.bump_log_base = self.version - 1
        log.append(row)

    def rows_bumped_since(self, version: int) -> list[int] | None:
        """Rows changed after snapshot version `version` (repeats possible), or None when
        the log no longer reaches back that far."""
        start = version - self.bump_log_base
        if start < 0:
            return None
        return self.bump_log[start:]

    def _grow(self) -> None:
        old = self._cap
        self._cap = old * 2

        def grow(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            shape = (self._cap,) + a.shape[1:]
            out = np.full(shape, fill, dtype=a.dtype)
            out[:old] = a
            return out

        self.allocatable = grow(self.allocatable)
        self.requested = grow(self.requested)
        self.score_requested = grow(self.score_requested)
        self.valid = grow(self.valid)
        self.unschedulable = grow(self.unschedulable)
        self.row_version = grow(self.row_version)
        self.node_version = grow(self.node_version)
        self.taint_set_ids = grow(self.taint_set_ids)
        self._label_cols = {k: grow(v) for k, v in self._label_cols.items()}
        self._numeric_cols = {k: grow(v, np.nan) for k, v in self._numeric_cols.items()}

    def set_node(self, node: Node) -> int:
        """Add or update a node; returns its row. Pods on it are kept."""
        name = node.metadata.name or ""
        row = self.index.get(name)
        if row is None:
            if self._free:
                row = heapq.heappop(self._free)
            else:
                if self.n == self._cap:
                    self._grow()
                row = self.n
                self.n += 1
                self.names.append("")
                self.nodes.append(None)
                self.node_labels.append({})
                self.pods.append({})
            self.index[name] = row
            self.names[row] = name
            self.valid[row] = True
            self.requested[row] = 0.0
            self.score_requested[row] = 0.0
            self.pods[row] = {}
            self._node_set_version_bump()
        self.nodes[row] = node
        alloc = node_allocatable(node)
        alloc.setdefault(PODS, DEFAULT_MAX_PODS)
        cols = [self.column(r) for r in alloc]  # may add columns (reallocates matrices)
        self.allocatable[row] = 0.0
        self.allocatable[row, cols] = list(alloc.values())
        self.unschedulable[row] = bool(node.spec.unschedulable)
        labels = dict(node.metadata.labels)
        self.node_labels[row] = labels
        for key, col in self._label_cols.items():
            v = labels.get(key)
            col[row] = 0 if v is None else self.label_value_id(key, v, create=True)
        for key, col in self._numeric_cols.items():
            col[row] = _as_number(labels.get(key))
        taints = tuple(sorted((t.key, t.value or "", t.effect) for t in (node.spec.taints or ())))
        tid = self._taint_set_index.get(taints)
        if tid is None:
            tid = len(self.taint_sets)
            self.taint_sets.append(taints)
            self._taint_set_index[taints] = tid
        self.taint_set_ids[row] = tid
        self._bump(row)
        self.node_version[row] = self.version
        return row

    def remove_node(self, name: str) -> list[PodInfo]:
        """Remove a node; returns the pods that were counted on it."""
        row = self.index.pop(name, None)
        if row is None:
            return []
        pods = list(self.pods[row].values())
        for p in pods:
            self._pod_rows.pop(p.key, None)
            self._uncount_priority(p)
            self._uncount_affinity(p)
            self._uncount_ports_and_claims(p, row)
        self.pods[row] = {}
        self.valid[row] = False
        self.nodes[row] = None
        self.names[row] = ""
        self.node_labels[row] = {}
        self.allocatable[row] = 0.0
        self.requested[row] = 0.0
        self.score_requested[row] = 0.0
        for col in self._label_cols.values():
            col[row] = 0
        for col in self._numeric_cols.values():
            col[row] = np.nan
        self.taint_set_ids[row] = 0
        heapq.heappush(self._free, row)
        self._node_set_version_bump()
        self._bump(row)
        self.node_version[row] = self.version
        return pods

    def label_index(self) -> PodLabelIndex:
        """Every counted pod by namespace and label (built now if nobody asked before)."""
        if self._label_index is None:
            index = PodLabelIndex()
            for row in range(self.n):
                for info in self.pods[row].values():
                    index.add(info, row)
            self._label_index = index
        return self._label_index

    def _count_affinity(self, pod: PodInfo, row: int) -> None:
        self._count_terms(pod, row)
        if self._label_index is not None:
            self._label_index.add(pod, row)

    def _count_terms(self, pod: PodInfo, row: int) -> None:
        terms = pod.pod_terms
        if terms is not NO_TERMS:
            self.with_affinity[pod.key] = (row, pod)
            if terms.required_anti_affinity:
                self.with_required_anti[pod.key] = (row, pod)

    def _uncount_terms(self, pod_key: str) -> None:
        if self.with_affinity.pop(pod_key, None) is not None:
            self.with_required_anti.pop(pod_key, None)

    def _uncount_affinity(self, pod: PodInfo) -> None:
        self._uncount_terms(pod.key)
        if self._label_index is not None:
            self._label_index.remove(pod)

    def _uncount_ports_and_claims(self, pod: PodInfo, row: int) -> None:
        if pod.host_ports:
            self.host_ports.remove(row, pod.host_ports)
        if pod.claims:
            count_claims(self.pvc_users, pod.claims.pvc_keys, -1)

    def _uncount_priority(self, pod: PodInfo) -> None:
        left = self._priorities[pod.priority] - 1
        if left:
            self._priorities[pod.priority] = left
        else:
            del self._priorities[pod.priority]

    def _node_set_version_bump(self) -> None:
        self._node_set_version += 1

    def add_pod(self, pod: PodInfo, node_name: str) -> bool:
        """Count a pod on a node (bound or assumed). False when the node is unknown."""
        row = self.index.get(node_name)
        if row is None:
            return False
        if pod.key in self._pod_rows:
            self.remove_pod(pod.key)
        _, cols, vals, scols, svals = self._vectors(pod)
        # Columns are unique per pod, so fancy-index += is exact (no np.add.at needed).
        self.requested[row, cols] += vals
        self.score_requested[row, scols] += svals
        self.pods[row][pod.key] = pod
        self._priorities[pod.priority] += 1
        # Column indices stay valid: the layout only ever appends columns.
        self._pod_rows[pod.key] = (row, cols, vals, scols, svals)
        self._count_affinity(pod, row)
        if pod.host_ports:
            self.host_ports.add(row, pod.host_ports)
        if pod.claims:
            count_claims(self.pvc_users, pod.claims.pvc_keys, 1)
        self._bump(row)
        return True

    def relabel_pod(self, pod: PodInfo) -> bool:
        """A counted pod whose labels changed and nothing else counted here (its node,
        requests, ports and volumes are the same): swapped in place. The row is logged for
        the label-dependent counts (spread, inter-pod affinity); node-local results stay
        valid. False when the pod is not counted."""
        entry = self._pod_rows.get(pod.key)
        if entry is None:
            return False
        row = entry[0]
        pods = self.pods[row]
        old = pods[pod.key]
        pods[pod.key] = pod
        self._uncount_terms(pod.key)
        self._count_terms(pod, row)
        if self._label_index is not None:
            self._label_index.replace(old, pod, row)
        self._bump(row, node_local=False)
        return True

    def remove_pod(self, pod_key: str) -> PodInfo | None:
        entry = self._pod_rows.pop(pod_key, None)
        if entry is None:
            return None
        row, cols, vals, scols, svals = entry
        self.requested[row, cols] -= vals
        self.score_requested[row, scols] -= svals
        pod = self.pods[row].pop(pod_key, None)
        if pod is not None:
            self._uncount_priority(pod)
            self._uncount_affinity(pod)
            self._uncount_ports_and_claims(pod, row)
        self._bump(row)
        return pod

    def remove_pods(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.remove_pod(k)


def _as_number(value: str | None) -> float:
    if value is None:
        return np.nan
    try:
        return float(int(value))
    except ValueError:
        return np.nan
