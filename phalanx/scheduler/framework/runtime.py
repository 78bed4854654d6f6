"""Runs one profile's plugins at each extension point, in order (kube-scheduler's frameworkImpl).

Construction resolves the profile against the plugin registry once; the run_* methods are the
hot path and avoid per-call lookups. Filter results of NODE_LOCAL plugins are cached per pod
signature and refreshed only on snapshot rows that changed (see FilterCache).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import OPTIONAL_DEFAULT_PLUGINS, DEFAULT_PLUGINS, PluginRef, SchedulerProfile
from .cycle_state import CycleState
from .interface import MAX_NODE_SCORE, Handle
from .registry import EXTENSION_POINTS, extension_points_of, get_plugin
from .status import Code, Status
from .types import ClusterEventWithHint, Diagnosis, FilterResult, FitError, PodInfo, PostFilterResult, QueuedPodInfo
from .waiting import WaitingPodImpl, WaitingPods

if TYPE_CHECKING:
    from phalanx.scheduler.snapshot import Snapshot

log = logging.getLogger(__name__)


class ProfileError(ValueError):
    """A profile names an unknown plugin, or a plugin at a point it does not implement."""


def _resolve(profile: SchedulerProfile) -> dict[str, list[PluginRef]]:
    """Per extension point, the enabled plugins in order (defaults merged like kube-scheduler)."""
    defaults = [PluginRef(name=n, weight=w) for n, w in DEFAULT_PLUGINS if n not in OPTIONAL_DEFAULT_PLUGINS or get_plugin(n)]
    mp = profile.plugins.multi_point
    mp_disabled = {r.name for r in mp.disabled}
    multi: list[PluginRef] = [] if "*" in mp_disabled else [r for r in defaults if r.name not in mp_disabled]
    for ref in mp.enabled:
        multi = [r for r in multi if r.name != ref.name] + [ref]
    out: dict[str, list[PluginRef]] = {}
    for point, method in EXTENSION_POINTS.items():
        ps = profile.plugins.for_point(point)
        disabled = {r.name for r in ps.disabled}
        chosen: list[PluginRef] = list(ps.enabled)
        names = {r.name for r in chosen}
        if "*" not in disabled:
            for ref in multi:
                if ref.name in names or ref.name in disabled:
                    continue
                cls = get_plugin(ref.name)
                if cls is None:
                    raise ProfileError(f"profile {profile.scheduler_name!r}: unknown plugin {ref.name!r}")
                if callable(getattr(cls, method, None)):
                    chosen.append(ref)
                    names.add(ref.name)
        out[point] = chosen
    return out


class FilterCache:
    """Feasibility of NODE_LOCAL filters per pod signature, refreshed on changed rows only.

    A gang's members share a signature, so after the first member only the rows its assumed
    peers touched are re-filtered: a few rows instead of thousands.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._entries: OrderedDict[Hashable, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._capacity = capacity
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, snap: Snapshot) -> tuple[np.ndarray, np.ndarray] | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        feasible, versions = entry
        n = snap.n
        if feasible.shape[0] < n:
            # The snapshot grew: new rows start with version -1 so they are re-evaluated.
            grow = n - feasible.shape[0]
            feasible = np.concatenate([feasible, np.zeros(grow, dtype=bool)])
            versions = np.concatenate([versions, np.full(grow, -1, dtype=np.int64)])
            self._entries[key] = (feasible, versions)
        return feasible, versions

    def put(self, key: Hashable, feasible: np.ndarray, versions: np.ndarray) -> None:
        self._entries[key] = (feasible, versions)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


class Framework:
    """One profile: its plugin instances and the ordered lists per extension point."""

    def __init__(self, profile: SchedulerProfile, handle: Handle, waiting: WaitingPods) -> None:
        self.profile = profile
        self.name = profile.scheduler_name
        self.handle = handle
        self.waiting = waiting
        resolved = _resolve(profile)
        self.plugins: dict[str, Any] = {}
        for refs in resolved.values():
            for ref in refs:
                if ref.name not in self.plugins:
                    self.plugins[ref.name] = self._instantiate(ref.name)
        for point, refs in resolved.items():
            method = EXTENSION_POINTS[point]
            for ref in refs:
                if not callable(getattr(self.plugins[ref.name], method, None)):
                    raise ProfileError(f"profile {self.name!r}: plugin {ref.name!r} does not implement {point}")

        def at(point: str) -> list[Any]:
            return [self.plugins[r.name] for r in resolved[point]]

        self.pre_enqueue_plugins = at("preEnqueue")
        queue_sort = at("queueSort")
        if len(queue_sort) != 1:
            raise ProfileError(f"profile {self.name!r}: exactly one queueSort plugin required, got {[p.NAME for p in queue_sort]}")
        self.queue_sort = queue_sort[0]
        self.pre_filter_plugins = at("preFilter")
        self.filter_plugins = at("filter")
        self.node_local_filters = [p for p in self.filter_plugins if getattr(p, "NODE_LOCAL", False)]
        self.other_filters = [p for p in self.filter_plugins if not getattr(p, "NODE_LOCAL", False)]
        self.before_post_filter_plugins = at("beforePostFilter")
        self.post_filter_plugins = at("postFilter")
        self.pre_score_plugins = at("preScore")
        self.score_plugins = at("score")
        self.score_weights = [float(r.weight if r.weight is not None else 1) for r in resolved["score"]]
        self.reserve_plugins = at("reserve")
        self.permit_plugins = at("permit")
        self.pre_bind_plugins = at("preBind")
        self.bind_plugins = at("bind")
        self.post_bind_plugins = at("postBind")
        if not self.bind_plugins:
            raise ProfileError(f"profile {self.name!r}: at least one bind plugin required")
        self.filter_cache = FilterCache()
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score

    def _instantiate(self, name: str) -> Any:
        cls = get_plugin(name)
        if cls is None:
            raise ProfileError(f"profile {self.name!r}: unknown plugin {name!r}")
        raw = self.profile.args_for(name)
        args_model = getattr(cls, "Args", None)
        try:
            args = args_model.model_validate(raw) if args_model is not None else raw
        except ValueError as exc:
            raise ProfileError(f"profile {self.name!r}: pluginConfig for {name}: {exc}") from exc
        return cls(self.handle, args)

    def extension_points(self) -> dict[str, list[str]]:
        """Point -> plugin names in run order (for `phalanx scheduler --show-config` and tests)."""
        out: dict[str, list[str]] = {}
        for point in EXTENSION_POINTS:
            attr = {
                "preEnqueue": "pre_enqueue_plugins",
                "queueSort": None,
                "preFilter": "pre_filter_plugins",
                "filter": "filter_plugins",
                "beforePostFilter": "before_post_filter_plugins",
                "postFilter": "post_filter_plugins",
                "preScore": "pre_score_plugins",
                "score": "score_plugins",
                "reserve": "reserve_plugins",
                "permit": "permit_plugins",
                "preBind": "pre_bind_plugins",
                "bind": "bind_plugins",
                "postBind": "post_bind_plugins",
            }[point]
            plugins = [self.queue_sort] if attr is None else getattr(self, attr)
            out[point] = [p.NAME for p in plugins]
        return out

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the cluster events that may help pods it rejected."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, p in self.plugins.items():
            fn = getattr(p, "events_to_register", None)
            if callable(fn):
                out[name] = list(fn())
        return out

    # --- queue --------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for p in self.pre_enqueue_plugins:
            st = p.pre_enqueue(pod)
            if not st.is_success:
                return st.with_plugin(p.NAME)
        return Status()

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        return self.queue_sort.sort_key(qpi)

    # --- scheduling cycle ---------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> tuple[np.ndarray | None, Status, str]:
        """Returns (allowed rows or None for all, status, why-others-excluded)."""
        allowed: np.ndarray | None = None
        why = ""
        for p in self.pre_filter_plugins:
            result, st = p.pre_filter(state, pod, snap)
            if st.is_skip:
                state.skip_filter_plugins.add(p.NAME)
                continue
            if not st.is_success:
                return None, st.with_plugin(p.NAME), why
            if result is not None and result.nodes is not None:
                nodes = np.asarray(result.nodes, dtype=np.int64)
                allowed = nodes if allowed is None else np.intersect1d(allowed, nodes, assume_unique=True)
                why = result.reason or why
        return allowed, Status(), why

    def feasible_rows(self, state: CycleState, pod: PodInfo, snap: Snapshot, allowed: np.ndarray | None) -> np.ndarray:
        """Rows passing every Filter (no diagnosis). Node-local filters come from the cache."""
        skip = state.skip_filter_plugins
        local = [p for p in self.node_local_filters if p.NAME not in skip]
        if local:
            key = (pod.signature, tuple(sorted(p.NAME for p in self.node_local_filters if p.NAME in skip)))
            entry = self.filter_cache.get(key, snap)
            n = snap.n
            rv = snap.row_version[:n]
            if entry is None:
                feasible = np.zeros(n, dtype=bool)
                versions = rv.copy()
                dirty = snap.valid_rows()
            else:
                feasible, versions = entry
                dirty = np.flatnonzero(versions[:n] != rv)
                versions[dirty] = rv[dirty]
            if dirty.size:
                feasible[dirty] = False
                ok = dirty[snap.valid[dirty]]  # removed nodes stay infeasible
                for p in local:
                    if ok.size == 0:
                        break
                    ok = ok[p.filter(state, pod, snap, ok).feasible]
                feasible[ok] = True
            if entry is None:
                self.filter_cache.put(key, feasible, versions)
            rows = np.flatnonzero(feasible[:n])
        else:
            rows = snap.valid_rows()
        if allowed is not None:
            rows = np.intersect1d(rows, allowed, assume_unique=True)
        for p in self.other_filters:
            if rows.size == 0:
                break
            if p.NAME in skip:
                continue
            rows = rows[p.filter(state, pod, snap, rows).feasible]
        return rows

    def diagnose(self, state: CycleState, pod: PodInfo, snap: Snapshot, allowed: np.ndarray | None, why: str) -> FitError:
        """Re-run every filter over all rows, counting per reason and plugin (failure path)."""
        rows = snap.valid_rows()
        diag = Diagnosis(total_nodes=int(rows.size))
        codes = np.full(snap.n, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, dtype=np.int8)
        codes[rows] = Code.SUCCESS
        if allowed is not None:
            excluded = np.setdiff1d(rows, allowed, assume_unique=True)
            if excluded.size:
                reason = why or "node(s) excluded by PreFilter"
                diag.reason_counts[reason] = int(excluded.size)
                codes[excluded] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            rows = np.intersect1d(rows, allowed, assume_unique=True)
        for p in self.filter_plugins:
            if rows.size == 0:
                break
            if p.NAME in state.skip_filter_plugins:
                continue
            res = p.filter(state, pod, snap, rows)
            rows = self._account(p.NAME, res, rows, diag, codes)
        return FitError(pod, diag, codes)

    @staticmethod
    def _account(plugin: str, res: FilterResult, rows: np.ndarray, diag: Diagnosis, codes: np.ndarray) -> np.ndarray:
        rejected = ~res.feasible
        count = int(rejected.sum())
        if not count:
            return rows
        diag.plugin_counts[plugin] = diag.plugin_counts.get(plugin, 0) + count
        diag.unschedulable_plugins.add(plugin)
        covered = np.zeros(rows.size, dtype=bool)
        unresolvable = np.zeros(rows.size, dtype=bool)
        for rej in res.rejections:
            m = rej.mask & rejected
            c = int(m.sum())
            if c:
                diag.reason_counts[rej.reason] = diag.reason_counts.get(rej.reason, 0) + c
                covered |= m
                if rej.unresolvable:
                    unresolvable |= m
        rest = rejected & ~covered
        c = int(rest.sum())
        if c:
            reason = res.default_reason or f"node(s) didn't pass {plugin}"
            diag.reason_counts[reason] = diag.reason_counts.get(reason, 0) + c
            if res.unresolvable:
                unresolvable |= rest
        codes[rows[rejected]] = Code.UNSCHEDULABLE
        codes[rows[unresolvable]] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return rows[res.feasible]

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        """All filters over `idx`, uncached (preemption what-ifs)."""
        feasible = np.ones(idx.size, dtype=bool)
        rows = idx
        pos = np.arange(idx.size)
        for p in self.filter_plugins:
            if rows.size == 0:
                break
            if p.NAME in state.skip_filter_plugins:
                continue
            ok = p.filter(state, pod, snap, rows).feasible
            feasible[pos[~ok]] = False
            rows, pos = rows[ok], pos[ok]
        return FilterResult(feasible, [], "node(s) didn't pass the filters")

    def run_pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        for p in self.pre_score_plugins:
            st = p.pre_score(state, pod, snap, idx)
            if st.is_skip:
                state.skip_score_plugins.add(p.NAME)
            elif not st.is_success:
                return st.with_plugin(p.NAME)
        return Status()

    def run_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        """Weighted total per row of `idx`."""
        total = np.zeros(idx.size, dtype=np.float64)
        skip = state.skip_score_plugins
        for p, w in zip(self.score_plugins, self.score_weights, strict=True):
            if p.NAME in skip or w == 0:
                continue
            s = np.asarray(p.score(state, pod, snap, idx), dtype=np.float64)
            norm = getattr(p, "normalize_score", None)
            if norm is not None:
                s = norm(state, pod, s)
            total += w * np.clip(s, 0.0, MAX_NODE_SCORE)
        return total

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for p in self.reserve_plugins:
            st = p.reserve(state, pod, node)
            if not st.is_success:
                return st.with_plugin(p.NAME)
        return Status()

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for p in reversed(self.reserve_plugins):
            try:
                p.unreserve(state, pod, node)
            except Exception:  # one broken plugin must not leak the others' reservations
                log.exception("unreserve of %s failed in plugin %s", pod.key, p.NAME)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Success, a rejection, or Wait (the pod is then in the waiting map)."""
        timeouts: dict[str, float] = {}
        for p in self.permit_plugins:
            st, timeout = p.permit(state, pod, node)
            if st.is_wait:
                timeouts[p.NAME] = max(0.0, float(timeout))
            elif not st.is_success:
                return st.with_plugin(p.NAME)
        if timeouts:
            self.waiting.add(WaitingPodImpl(pod, node, timeouts))
            return Status.wait()
        return Status()

    async def wait_on_permit(self, pod: PodInfo) -> Status:
        wp = self.waiting.get(pod.uid)
        if wp is None:
            return Status()
        try:
            return await wp.wait()
        finally:
            self.waiting.remove(pod.uid)

    def run_before_post_filter(self, state: CycleState, pod: PodInfo, status: Status, fit: FitError | None) -> bool:
        """Every plugin runs. Returns whether PostFilter may run."""
        run_post = True
        for p in self.before_post_filter_plugins:
            try:
                st = p.before_post_filter(state, pod, status, fit)
            except Exception:
                log.exception("beforePostFilter %s failed for %s", p.NAME, pod.key)
                continue
            if st.is_skip:
                run_post = False
        return run_post

    def run_post_filter(self, state: CycleState, pod: PodInfo, fit: FitError) -> tuple[PostFilterResult | None, Status]:
        messages: list[str] = []
        for p in self.post_filter_plugins:
            result, st = p.post_filter(state, pod, fit)
            if st.is_success:
                return result, st
            if st.message:
                messages.append(st.message)
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE or st.is_error:
                return None, st.with_plugin(p.NAME)
        return None, Status(Code.UNSCHEDULABLE, messages)

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for p in self.pre_bind_plugins:
            st = await p.pre_bind(state, pod, node)
            if not st.is_success:
                return st.with_plugin(p.NAME)
        return Status()

    async def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        for p in self.bind_plugins:
            st = await p.bind(state, pod, node)
            if st.is_skip:
                continue
            return st.with_plugin(p.NAME) if not st.is_success else st
        return Status.error("no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for p in self.post_bind_plugins:
            try:
                p.post_bind(state, pod, node)
            except Exception:
                log.exception("postBind %s failed for %s", p.NAME, pod.key)


def num_nodes_to_score(total: int, percentage: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind: score a sample on big clusters."""
    min_feasible = 100
    if total < min_feasible:
        return total
    pct = percentage
    if pct <= 0:
        pct = max(5, 50 - total // 125)
    if pct >= 100:
        return total
    return max(min_feasible, total * pct // 100)


__all__: Sequence[str] = ["Framework", "FilterCache", "ProfileError", "num_nodes_to_score"]
