"""Runs one profile's plugins at each extension point, in order (kube-scheduler's frameworkImpl).

Construction resolves the profile against the plugin registry once; the run_* methods are the
hot path and avoid per-call lookups. Filter results of NODE_LOCAL plugins are cached per pod
signature and refreshed only on snapshot rows that changed (see signature_cache.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import NODE_RESOURCES_FIT, SchedulerProfile, _snake
from .pluginargs import aggregate, profile_args
from .resolve import ProfileError, num_nodes_to_score, resolve_profile
from .cycle_state import CycleState
from .interface import MAX_NODE_SCORE, Handle
from .registry import EXTENSION_POINTS, get_plugin
from .signature_cache import SignatureCache, SignatureEntry
from .status import Code, Status
from .types import ClusterEventWithHint, Diagnosis, FilterResult, FitError, PodInfo, PostFilterResult, QueuedPodInfo
from .waiting import WaitingPodImpl, WaitingPods

if TYPE_CHECKING:
    from phalanx.scheduler.snapshot import Snapshot

log = logging.getLogger(__name__)


# CycleState key: the SignatureEntry feasible_rows used this cycle.
_SIGNATURE_ENTRY = "framework/signatureEntry"
_NOTHING = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def _no_resources(pod: PodInfo, snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
    return _NOTHING


class Framework:
    """One profile: its plugin instances and the ordered lists per extension point."""

    def __init__(self, profile: SchedulerProfile, handle: Handle, waiting: WaitingPods,
                 args: dict[str, Any] | None = None) -> None:
        """`args`: the profile's validated pluginConfig args by plugin (pluginargs.py);
        validated here when not given."""
        self.profile = profile
        self.name = profile.scheduler_name
        self.handle = handle
        self.waiting = waiting
        if args is None:
            args, errors = profile_args(0, profile)
            if errors:
                raise ProfileError(aggregate(errors))
        self._args = args
        resolved = resolve_profile(profile)
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
        # Node-local filters split by what they read: the node object alone, or its usage too.
        self.node_only_filters = [p for p in self.node_local_filters if getattr(p, "NODE_ONLY", False)]
        self.usage_filters = [p for p in self.node_local_filters if not getattr(p, "NODE_ONLY", False)]
        self.other_filters = [p for p in self.filter_plugins if not getattr(p, "NODE_LOCAL", False)]
        self.before_post_filter_plugins = at("beforePostFilter")
        self.post_filter_plugins = at("postFilter")
        self.pre_score_plugins = at("preScore")
        self.score_plugins = at("score")
        # kube: "a weight of zero is not permitted": unset or 0 means 1.
        self.score_weights = [float(r.weight or 1) for r in resolved["score"]]
        self.reserve_plugins = at("reserve")
        self.permit_plugins = at("permit")
        self.pre_bind_plugins = at("preBind")
        self.bind_plugins = at("bind")
        self.post_bind_plugins = at("postBind")
        if not self.bind_plugins:
            raise ProfileError(f"profile {self.name!r}: at least one bind plugin required")
        self.node_local_scores = [
            (p, w) for p, w in zip(self.score_plugins, self.score_weights, strict=True) if getattr(p, "NODE_LOCAL", False)
        ]
        self.node_only_scores = [p for p, _ in self.node_local_scores if getattr(p, "NODE_ONLY", False)]
        self.usage_scores = [p for p, _ in self.node_local_scores if not getattr(p, "NODE_ONLY", False)]
        self.filter_cache = SignatureCache()
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        # fit_vector(pod, snap): the (columns, amounts) a pod needs room for in this profile,
        # for the checks beside Filter (a gang's room, preemption, held room): what its
        # NodeResourcesFit filter checks (ignored resources left out), nothing without one.
        nrf = self.plugins.get(NODE_RESOURCES_FIT)
        self.fit_vector = nrf.fit_vector if nrf in self.filter_plugins else _no_resources

    def _instantiate(self, name: str) -> Any:
        cls = get_plugin(name)
        if cls is None:
            raise ProfileError(f"profile {self.name!r}: unknown plugin {name!r}")
        args = self._args.get(name)
        if args is None:
            args_model = getattr(cls, "Args", None)
            args = args_model.model_validate({}) if args_model is not None else {}
        return cls(self.handle, args)

    def extension_points(self) -> dict[str, list[str]]:
        """Point -> plugin names in run order (for `phalanx scheduler --show-config` and tests)."""
        out: dict[str, list[str]] = {}
        for point in EXTENSION_POINTS:
            plugins = [self.queue_sort] if point == "queueSort" else getattr(self, f"{_snake(point)}_plugins")
            out[point] = [p.NAME for p in plugins]
        return out

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the cluster events that may help pods it rejected.

        A deliberate difference from kube-scheduler, which registers a plugin without
        `events_to_register` for every event: here it is registered for none, so a pod only
        it rejected waits for the other rejecting plugins' events or the periodic flush.
        Every plugin that can reject a pod must say which events help (GangReservation does
        not yet). Registering it for every event retried such pods on every bind: replaying
        bench/traces/odd-gpus.csv then took 1.5x the scheduling attempts (19,183 against
        12,576) for no more GPU utilisation (issue 21)."""
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
        """Rows passing every Filter (no diagnosis). Node-local filters (and raw node-local
        scores, for run_score) come from the signature cache, refreshed on changed rows."""
        skip = state.skip_filter_plugins
        if self.node_local_filters or self.node_local_scores:
            key = (pod.signature, tuple(p.NAME for p in self.node_local_filters if p.NAME in skip))
            entry = self.filter_cache.get(key, snap)
            dirty = entry.dirty_rows(snap)
            if dirty.size:
                self._refresh(entry, state, pod, snap, dirty)
            state.write(_SIGNATURE_ENTRY, entry)
            rows = entry.feasible_rows(snap.n)
        else:
            rows = snap.valid_rows()
        if allowed is not None:
            rows = np.intersect1d(rows, allowed, assume_unique=True)
        for p in self.other_filters:
            if rows.size == 0:
                break
            if p.NAME in skip:
                continue
            rows = p.filter(state, pod, snap, rows).kept(rows)
        return rows

    def _refresh(self, entry: SignatureEntry, state: CycleState, pod: PodInfo, snap: Snapshot,
                 dirty: np.ndarray) -> None:
        """Re-evaluate the node-local plugins on the rows changed since the entry last saw
        them: the NODE_ONLY ones only where the node object changed, the rest everywhere."""
        skip = state.skip_filter_plugins
        live = dirty[snap.valid[dirty]]  # removed nodes stay infeasible
        moved = entry.node_dirty(snap, live)
        if moved.size:
            ok = moved
            for p in self.node_only_filters:
                if ok.size == 0:
                    break
                if p.NAME not in skip:
                    ok = p.filter(state, pod, snap, ok).kept(ok)
            entry.node_ok[moved] = False
            entry.node_ok[ok] = True
        ok = live[entry.node_ok[live]]
        for p in self.usage_filters:
            if ok.size == 0:
                break
            if p.NAME not in skip:
                ok = p.filter(state, pod, snap, ok).kept(ok)
        entry.set_feasible(dirty, ok)
        for plugins, rows in ((self.node_only_scores, moved), (self.usage_scores, live)):
            if not rows.size:
                continue
            for p in plugins:
                raw = entry.scores.get(p.NAME)
                if raw is None:
                    raw = entry.scores[p.NAME] = np.zeros(entry.feasible.shape[0])
                raw[rows] = p.score(state, pod, snap, rows)

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
        if res.all_passed:
            return rows
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
        """Weighted total per row of `idx`. Node-local plugins' raw scores are read from the
        signature entry feasible_rows left in the cycle state (same cycle, same snapshot)."""
        skip = state.skip_score_plugins
        entry: SignatureEntry | None = state.read(_SIGNATURE_ENTRY)
        rows: list[np.ndarray] = []
        weights: list[float] = []
        for p, w in zip(self.score_plugins, self.score_weights, strict=True):
            if p.NAME in skip:
                continue
            cached = entry.scores.get(p.NAME) if entry is not None else None
            s = cached[idx] if cached is not None else np.asarray(p.score(state, pod, snap, idx), dtype=np.float64)
            norm = getattr(p, "normalize_score", None)
            if norm is not None:
                s = norm(state, pod, s)
            rows.append(s)
            weights.append(w)
        if not rows:
            return np.zeros(idx.size, dtype=np.float64)
        # Clamp each plugin's scores into [0, MAX_NODE_SCORE], weigh and add them up, all
        # plugins at once: a sum over axis 0 adds the rows in plugin order, so the totals
        # are exactly those of adding one plugin after the other.
        scores = np.array(rows, dtype=np.float64)
        np.maximum(scores, 0.0, out=scores)
        np.minimum(scores, MAX_NODE_SCORE, out=scores)
        scores *= np.array(weights)[:, None]
        return scores.sum(axis=0)

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


__all__: Sequence[str] = ["Framework", "ProfileError", "num_nodes_to_score"]
