"""PodTopologySpread: `spec.topologySpreadConstraints`, with kube-scheduler 1.36's semantics.

Filter (DoNotSchedule constraints). Per constraint, PreFilter counts the pods its selector
matches (same namespace, not terminating; bound and assumed, so a gang's members placed earlier
in the same attempt count) per value of the topology key, over the nodes that carry every
constraint's key and pass its node inclusion policies (nodeAffinityPolicy Honor: the pod's
nodeSelector and required node affinity; nodeTaintsPolicy Honor: its tolerations of NoSchedule
and NoExecute taints). The global minimum is the smallest count over those domains, or 0 when
there are fewer than minDomains of them. A node passes when, for each constraint in order,

    it has the topology key        else "node(s) didn't match pod topology spread constraints
                                         (missing required label)", UnschedulableAndUnresolvable
    count(its domain) + (1 if the pod matches the selector) - minimum <= maxSkew
                                   else "node(s) didn't match pod topology spread constraints",
                                         Unschedulable (preemption may help)

Score (ScheduleAnyway constraints): per node, sum over constraints of
count(domain) * log(domains among the scored nodes + 2) + (maxSkew - 1), rounded; hostname
domains count the node's own pods; nodes missing a key are ignored (0) unless the constraints
are the system defaults. NormalizeScore maps s to 100 * (max + min - s) / max (integer), so the
emptiest domains score highest.

Pods without constraints use the profile's defaults (spread_defaults.py), which apply only when
Services or a controller select the pod. Pods with neither skip at PreFilter and PreScore for
the cost of a cached attribute read. Filter recomputes its counts from the snapshot when
PreFilter did not run (preemption's and the gang planner's what-ifs with pods removed).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.cluster.selectors import SelectorError
from phalanx.scheduler.framework.config import POD_TOPOLOGY_SPREAD
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    Rejection,
)
from phalanx.scheduler.nodeselector import RequiredAffinity, required_affinity
from phalanx.scheduler.plugins.podtopologyspread_hints import SpreadHints
from phalanx.scheduler.plugins.tainttoleration import tolerates
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.spread import (
    DO_NOT_SCHEDULE,
    HOSTNAME,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    MatchCounter,
    has_all_keys,
    lookup,
    parse_constraints,
    with_selector,
)
from phalanx.scheduler.spread_defaults import SYSTEM, DefaultSelectors, PodTopologySpreadArgs

REASON_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_LABEL = REASON_SKEW + " (missing required label)"
FILTER_KEY = "PodTopologySpread/preFilter"
SCORE_KEY = "PodTopologySpread/preScore"
_IGNORED_KEY = "PodTopologySpread/ignored"  # Score -> NormalizeScore: ignored, aligned to idx


@dataclass(slots=True)
class FilterState:
    """Per DoNotSchedule constraint: matching pods per domain (label value id), which domains
    are eligible, the global minimum and whether the incoming pod matches itself."""

    constraints: tuple[Constraint, ...]
    counts: list[np.ndarray] = field(default_factory=list)
    present: list[np.ndarray] = field(default_factory=list)
    mins: list[int] = field(default_factory=list)
    self_match: list[int] = field(default_factory=list)


@dataclass(slots=True)
class ScoreState:
    """Per ScheduleAnyway constraint: matching pods per domain (None for hostname: counted per
    node), the topology weight; `ignored` marks nodes (snapshot rows) scored 0 (None: none
    is, as under the system defaults)."""

    constraints: tuple[Constraint, ...]
    ignored: np.ndarray | None
    counts: list[np.ndarray | None] = field(default_factory=list)
    present: list[np.ndarray | None] = field(default_factory=list)
    per_row: list[np.ndarray | None] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)


class _PerSelector:
    """Matching pods per row for a constraint's selector (MatchCounter: kept across cycles,
    refreshed on the rows that changed)."""

    def __init__(self, counter: MatchCounter, snap: Snapshot, namespace: str) -> None:
        self.counter, self.snap, self.namespace = counter, snap, namespace

    def __call__(self, c: Constraint) -> np.ndarray:
        return self.counter.per_row(self.snap, c.selector, self.namespace)


@register_plugin
class PodTopologySpread(Plugin, SpreadHints):
    NAME = POD_TOPOLOGY_SPREAD
    Args = PodTopologySpreadArgs

    def __init__(self, handle: Any, args: Any = None) -> None:
        args = (
            args
            if isinstance(args, PodTopologySpreadArgs)
            else PodTopologySpreadArgs.model_validate(args or {})
        )
        super().__init__(handle, args)
        self.system_defaulted = args.defaulting_type == SYSTEM
        defaults = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else args.default_constraints
        # Default constraints carry no selector: it is derived per pod (spread_defaults.py).
        self._default_hard = parse_constraints(defaults, {}, DO_NOT_SCHEDULE, "defaultConstraints")
        self._default_soft = parse_constraints(defaults, {}, SCHEDULE_ANYWAY, "defaultConstraints")
        informers = getattr(handle, "informers", None)
        self.default_selectors = (
            DefaultSelectors.from_informers(informers)
            if informers is not None and (self._default_hard or self._default_soft)
            else DefaultSelectors()
        )
        self._affinity: dict[Hashable, RequiredAffinity] = {}
        self._taints: dict[Hashable, np.ndarray] = {}
        self._counter = MatchCounter()
        self._with_defaults: dict[tuple[bool, Any], tuple[Constraint, ...]] = {}

    # --- constraints -------------------------------------------------------------------

    def _defaults(self, pod: PodInfo, base: tuple[Constraint, ...]) -> tuple[Constraint, ...]:
        if not base:
            return ()
        selector = self.default_selectors.for_pod(pod)
        if selector.empty:
            return ()
        # Pods behind the same Services share their default constraints.
        key = (base is self._default_hard, selector)
        found = self._with_defaults.get(key)
        if found is None:
            if len(self._with_defaults) >= 4096:
                self._with_defaults.clear()
            found = self._with_defaults[key] = with_selector(base, selector)
        return found

    def hard_constraints(self, pod: PodInfo) -> tuple[Constraint, ...]:
        """The pod's DoNotSchedule constraints, its own or the defaults (kube's getConstraints).
        Raises SelectorError for a selector that does not parse."""
        sp = pod.spread
        if sp.error:
            raise SelectorError(sp.error)
        return sp.hard if sp.own else self._defaults(pod, self._default_hard)

    def soft_constraints(self, pod: PodInfo) -> tuple[Constraint, ...]:
        sp = pod.spread
        if sp.error:
            raise SelectorError(sp.error)
        return sp.soft if sp.own else self._defaults(pod, self._default_soft)

    # --- node inclusion policies --------------------------------------------------------

    def _required_affinity(self, pod: PodInfo) -> RequiredAffinity:
        """The pod's nodeSelector and required node affinity (kube's RequiredNodeAffinity)."""
        key = (pod.signature[2], pod.signature[3])
        req = self._affinity.get(key)
        if req is None:
            if len(self._affinity) > 4096:
                self._affinity.clear()
            req = self._affinity[key] = required_affinity(pod.pod.spec)
        return req

    def _tolerated(self, pod: PodInfo, snap: Snapshot) -> np.ndarray:
        """Per taint-set id: the pod tolerates every NoSchedule/NoExecute taint of the set."""
        key = pod.signature[4]
        table = self._taints.get(key)
        done = 0 if table is None else table.size
        if done < len(snap.taint_sets):
            tolerations = pod.pod.spec.tolerations
            more = [
                all(
                    tolerates(tolerations, t)
                    for t in taints
                    if t[2] in ("NoSchedule", "NoExecute")
                )
                for taints in snap.taint_sets[done:]
            ]
            table = np.concatenate([table if table is not None else np.zeros(0, bool), more])
            table = table.astype(bool)
            if len(self._taints) > 4096:
                self._taints.clear()
            self._taints[key] = table
        assert table is not None
        return table

    def _included(
        self, pod: PodInfo, c: Constraint, snap: Snapshot, rows: np.ndarray
    ) -> np.ndarray:
        """The rows whose node counts for constraint `c` (its node inclusion policies)."""
        if c.honor_affinity and rows.size:
            req = self._required_affinity(pod)
            if req.node_selector or req.selector is not None:
                rows = rows[req.mask(snap, rows)]
        if c.honor_taints and rows.size:
            rows = rows[self._tolerated(pod, snap)[snap.taint_set_ids[rows]]]
        return rows

    # --- Filter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.hard_constraints(pod)
        except SelectorError as exc:
            return None, Status.error(f"obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, Status.skip()
        state.write(FILTER_KEY, self.filter_state(pod, constraints, snap))
        return None, Status()

    def filter_state(
        self, pod: PodInfo, constraints: tuple[Constraint, ...], snap: Snapshot
    ) -> FilterState:
        """kube's calPreFilterState, vectorised over the snapshot's rows."""
        fs = FilterState(constraints)
        rows = snap.valid_rows()
        base = rows[has_all_keys(snap, rows, constraints)]
        per_selector = _PerSelector(self._counter, snap, pod.namespace)
        for c in constraints:
            incl = self._included(pod, c, snap, base)
            dom = snap.label_column(c.topology_key)[incl]
            size = int(dom.max()) + 1 if dom.size else 1
            present = np.zeros(size, dtype=bool)
            present[dom] = True
            counts = np.bincount(dom, weights=per_selector(c)[incl], minlength=size)
            counts = counts.astype(np.int64)
            domains = int(present.sum())
            minimum = int(counts[present].min()) if domains else 0
            fs.counts.append(counts)
            fs.present.append(present)
            fs.mins.append(0 if domains < c.min_domains else minimum)
            fs.self_match.append(1 if c.matches(pod.labels) else 0)
        return fs

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        fs: FilterState | None = state.read(FILTER_KEY)
        if fs is None:  # no PreFilter (a what-if): from the snapshot as it is now
            try:
                constraints = self.hard_constraints(pod)
            except SelectorError:
                constraints = ()
            if not constraints:
                return FilterResult.all_pass(idx.size)
            fs = self.filter_state(pod, constraints, snap)
        decided = np.zeros(idx.size, dtype=bool)
        missing = np.zeros(idx.size, dtype=bool)
        skewed = np.zeros(idx.size, dtype=bool)
        # Constraints in order: the first one a node fails decides its reason, as in kube.
        for i, c in enumerate(fs.constraints):
            col = snap.label_column(c.topology_key)[idx]
            miss = (col == 0) & ~decided
            missing |= miss
            decided |= miss
            skew = lookup(fs.counts[i], col) + fs.self_match[i] - fs.mins[i]
            bad = (skew > c.max_skew) & ~decided
            skewed |= bad
            decided |= bad
        if not decided.any():
            return FilterResult(~decided)
        rejections = []
        if missing.any():
            rejections.append(Rejection(REASON_LABEL, missing, unresolvable=True))
        if skewed.any():
            rejections.append(Rejection(REASON_SKEW, skewed))
        return FilterResult(~decided, rejections)

    # --- Score -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        sp = pod.spread
        if not sp.own and not self._default_soft:
            return Status.skip()
        all_rows = snap.valid_rows()
        if all_rows.size == 0:
            return Status.skip()
        try:
            constraints = self.soft_constraints(pod)
        except SelectorError as exc:
            return Status.error(f"obtaining pod's soft topology spread constraints: {exc}")
        if not constraints:
            return Status.skip()
        state.write(SCORE_KEY, self.score_state(pod, constraints, snap, idx))
        return Status()

    def score_state(
        self, pod: PodInfo, constraints: tuple[Constraint, ...], snap: Snapshot, idx: np.ndarray
    ) -> ScoreState:
        """kube's initPreScoreState + PreScore: `idx` are the nodes to score."""
        # Nodes must carry every key, unless the constraints are the system defaults (a node
        # without a zone label still gets hostname spreading; "no zone" is then a domain).
        require_all = pod.spread.own or not self.system_defaulted
        ignored = None
        scored = idx
        if require_all:
            has = has_all_keys(snap, idx, constraints)
            if not has.all():
                ignored = np.zeros(snap.n, dtype=bool)
                ignored[idx[~has]] = True
                scored = idx[has]
        ss = ScoreState(constraints, ignored)
        per_selector = _PerSelector(self._counter, snap, pod.namespace)
        for c in constraints:
            if c.topology_key == HOSTNAME:  # counted per node at Score
                ss.counts.append(None)
                ss.present.append(None)
                ss.per_row.append(per_selector(c))
                ss.weights.append(math.log(scored.size + 2))
                continue
            col = snap.label_column(c.topology_key)
            dom_scored = col[scored]
            size = int(dom_scored.max()) + 1 if dom_scored.size else 1
            present = np.zeros(size, dtype=bool)
            present[dom_scored] = True
            # Only nodes with matching pods add to a domain's count: kube walks every node,
            # the counts come out the same from the few that hold such pods.
            per = per_selector(c)
            rows = np.flatnonzero(per != 0)  # numpy finds non-zeros in a bool array ~3x faster
            if require_all:
                rows = rows[has_all_keys(snap, rows, constraints)]
            rows = self._included(pod, c, snap, rows)
            dom = col[rows]
            keep = dom < size
            keep[keep] = present[dom[keep]]
            counts = np.bincount(dom[keep], weights=per[rows[keep]], minlength=size)
            ss.counts.append(counts.astype(np.int64))
            ss.present.append(present)
            ss.per_row.append(None)
            ss.weights.append(math.log(int(present.sum()) + 2))
        return ss

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        ss: ScoreState | None = state.read(SCORE_KEY)
        total = np.zeros(idx.size, dtype=np.float64)
        if ss is None:
            return total
        for i, c in enumerate(ss.constraints):
            col = snap.label_column(c.topology_key)[idx]
            per_row, counts = ss.per_row[i], ss.counts[i]
            if per_row is not None:  # hostname: the node's own pods
                cnt = per_row[idx]
            else:
                assert counts is not None
                cnt = lookup(counts, col)
            total += np.where(col > 0, cnt * ss.weights[i] + (c.max_skew - 1), 0.0)
        total = np.floor(total + 0.5)  # Go's math.Round (scores are never negative)
        ignored = None
        if ss.ignored is not None:
            ignored = lookup(ss.ignored, idx)
            total[ignored] = 0.0
        state.write(_IGNORED_KEY, ignored)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """kube's NormalizeScore: 100 * (max + min - s) // max over the nodes not ignored."""
        if scores.size == 0 or state.read(SCORE_KEY) is None:
            return scores
        ignored = state.read(_IGNORED_KEY)
        s = scores.astype(np.int64)
        # None in the usual case: every node counts, no mask to apply.
        valid = None if ignored is None else ~ignored
        counted = s if valid is None else s[valid]
        if counted.size == 0:
            return np.zeros(scores.size, dtype=np.float64)
        lo, hi = int(counted.min()), int(counted.max())
        if hi == 0:
            norm = np.full(counted.size, MAX_NODE_SCORE, dtype=np.float64)
        else:
            norm = ((int(MAX_NODE_SCORE) * (hi + lo - counted)) // hi).astype(np.float64)
        if valid is None:
            return norm
        out = np.zeros(scores.size, dtype=np.float64)
        out[valid] = norm
        return out

    # --- queueing ----------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return self.spread_events()


__all__ = ["FilterState", "PodTopologySpread", "REASON_LABEL", "REASON_SKEW", "ScoreState"]
