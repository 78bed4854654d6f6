"""InterPodAffinity: podAffinity / podAntiAffinity, with kube-scheduler 1.36's semantics.

PreFilter counts, per topology pair (key, value of a node label), three things:
- existing anti-affinity: pods already counted (bound, or assumed: a gang's peers placed
  earlier in the same attempt count too) whose required anti-affinity term matches this pod
  and whose node carries the term's key, once per matching term;
- affinity: pods that match *all* of this pod's required affinity terms, once per term whose
  key their node carries (a pod matching only some of the terms counts nowhere);
- anti-affinity: pods matching each of this pod's required anti-affinity terms, per term.
It skips the plugin when the first count is empty and the pod has no required terms.

Filter, per node, the first failing rule gives its single reason:
1. every required affinity term's key is on the node, and each term's pair has a count
   ("node(s) didn't match pod affinity rules", unresolvable: preemption removes pods, it
   cannot add the ones wanted). The first pod of its kind passes without counts: when no
   pair has an affinity count at all and the pod matches all of its own terms, any node with
   the keys passes;
2. no pair of a required anti-affinity term's key on the node has an anti-affinity count
   ("node(s) didn't match pod anti-affinity rules"; nodes without the key pass);
3. no label pair of the node has an existing anti-affinity count ("node(s) didn't satisfy
   existing pods anti-affinity rules").

PreScore adds, per topology pair: for each pod matching one of this pod's preferred affinity
(anti-affinity) terms, + (-) the term's weight; for each pod with affinity terms, +
`hardPodAffinityWeight` per required affinity term of it that matches this pod, and + (-)
the weight of each of its preferred affinity (anti-affinity) terms that match this pod; each
only where the node of the counted pod has the term's key. With
`ignorePreferredTermsOfExistingPods`, a pod without preferred terms skips scoring (kube-
scheduler skips then, and only then). A node scores the sum over its pairs; scores are then
normalised to 0..100 over the scored nodes (min-max, truncated to integers; all equal: 0).

Namespaces: a term looks at its `namespaces`, else the declaring pod's own namespace; a
`namespaceSelector` adds the existing namespaces whose labels match (`{}`: all). An existing
pod's term is matched against this pod with the labels of this pod's namespace (none known:
an empty set, as kube-scheduler does).

A pod whose terms do not parse is refused at PreFilter ("parsing pod: <field>: <why>",
unresolvable).

Cheap when nobody uses it: the snapshot keeps the pods that have terms; a pod without terms
in a cluster where no pod has required anti-affinity skips the Filter, and skips the Score
when no pod has terms at all. Otherwise the counts come from a label index (which pods match)
and NumPy over the matching pods' rows; existing pods' own terms are matched once per
distinct set of terms (replicas share one parsed PodTerms); Filter and Score are lookups of
the counted domains in the snapshot's int32 label columns. Filter computes the counts itself
when PreFilter did not run (preemption's what-ifs with victims removed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from phalanx.api.base import KubeModel
from phalanx.api.core import Namespace
from phalanx.scheduler.affinity import NO_TERMS, NamespaceLabels, PodTerms, Term
from phalanx.scheduler.framework.config import INTER_POD_AFFINITY
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    Rejection,
)
from phalanx.scheduler.plugins.interpodaffinity_hints import node_change_hint, pod_change_hint
from phalanx.scheduler.snapshot import Snapshot

REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
FILTER_KEY = "InterPodAffinity/filter"
SCORE_KEY = "InterPodAffinity/score"

# (topology key, value id of the node label in Snapshot.label_column(key)) -> matching pods
Counts = dict[tuple[str, int], int]


class InterPodAffinityArgs(KubeModel):
    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(slots=True)
class FilterState:
    existing_anti_affinity_counts: Counts = field(default_factory=dict)
    affinity_counts: Counts = field(default_factory=dict)
    anti_affinity_counts: Counts = field(default_factory=dict)
    affinity_keys: tuple[str, ...] = ()  # the distinct keys of the required affinity terms
    matches_own_affinity: bool = False  # the pod matches all its required affinity terms
    # key -> value ids whose count is positive (built once by seal(), read by Filter)
    affinity_domains: dict[str, np.ndarray] = field(default_factory=dict)
    anti_domains: dict[str, np.ndarray] = field(default_factory=dict)
    existing_anti_domains: dict[str, np.ndarray] = field(default_factory=dict)

    def seal(self) -> FilterState:
        self.affinity_domains = _domains(self.affinity_counts)
        self.anti_domains = _domains(self.anti_affinity_counts)
        self.existing_anti_domains = _domains(self.existing_anti_affinity_counts)
        return self


def _domains(counts: Counts) -> dict[str, np.ndarray]:
    by_key: dict[str, list[int]] = {}
    for (key, vid), n in counts.items():
        if n > 0:
            by_key.setdefault(key, []).append(vid)
    return {k: np.asarray(sorted(v), dtype=np.int32) for k, v in by_key.items()}


def _count(counts: Counts, key: str, rows: np.ndarray, snap: Snapshot) -> None:
    """+1 on (key, value) per row whose node carries label `key`."""
    if rows.size == 0:
        return
    values = snap.label_column(key)[rows]
    values = values[values > 0]
    if values.size == 0:
        return
    ids, n = np.unique(values, return_counts=True)
    for vid, c in zip(ids.tolist(), n.tolist(), strict=True):
        counts[(key, vid)] = counts.get((key, vid), 0) + c


def _rows(pairs: list[tuple[int, PodInfo]]) -> np.ndarray:
    return np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))


def _distinct(terms: Sequence[Term]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.topology_key for t in terms))


@register_plugin
class InterPodAffinity(Plugin):
    NAME = INTER_POD_AFFINITY
    Args = InterPodAffinityArgs

    def __init__(self, handle: Any, args: Any = None) -> None:
        args = (
            args
            if isinstance(args, InterPodAffinityArgs)
            else InterPodAffinityArgs.model_validate(args or {})
        )
        super().__init__(handle, args)
        informers = getattr(handle, "informers", None)
        # namespaceSelector needs namespace labels; the scheduler's informers start later.
        self._namespaces = informers.informer(Namespace) if informers is not None else None

    def _ns_labels(self, name: str) -> Mapping[str, str] | None:
        """A namespace's labels, None when the namespace is unknown."""
        if self._namespaces is None:
            return None
        ns = self._namespaces.get(name)
        return (ns.metadata.labels or {}) if ns is not None else None

    def _known_or_empty(self, name: str) -> Mapping[str, str]:
        """For an existing pod's terms matched against the incoming pod: kube-scheduler
        reads an unknown namespace as one without labels."""
        return self._ns_labels(name) or {}

    # --- Filter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        terms = pod.pod_terms
        if terms.error:
            return None, Status.unresolvable(f"parsing pod: {terms.error}")
        fs = self.filter_state(pod, snap)
        if fs is None:
            return None, Status.skip()
        state.write(FILTER_KEY, fs)
        return None, Status()

    def filter_state(self, pod: PodInfo, snap: Snapshot) -> FilterState | None:
        """The counts of the module docstring; None when there is nothing to check."""
        terms = pod.pod_terms
        required = terms.required_affinity or terms.required_anti_affinity
        if not snap.with_required_anti and not required:
            return None
        existing: Counts = {}
        rows_by_key: dict[str, list[int]] = {}
        ns, labels, lenient = pod.namespace, pod.labels, self._known_or_empty
        # Replicas share their PodTerms (parse_pod_terms): match each group once.
        memo: dict[int, tuple[str, ...]] = {}
        for row, other in snap.with_required_anti.values():
            if other.key == pod.key:
                continue
            group = other.pod_terms.required_anti_affinity
            keys = memo.get(id(group))
            if keys is None:
                keys = memo[id(group)] = tuple(
                    t.topology_key for t in group if t.matches_labels(ns, labels, lenient)
                )
            for key in keys:
                rows_by_key.setdefault(key, []).append(row)
        for key, rows in rows_by_key.items():
            _count(existing, key, np.asarray(rows, dtype=np.int64), snap)
        if not existing and not required:
            return None
        fs = FilterState(existing_anti_affinity_counts=existing)
        strict: NamespaceLabels = self._ns_labels
        if terms.required_affinity:
            fs.affinity_keys = _distinct(terms.required_affinity)
            first, *rest = terms.required_affinity
            matching = [
                (r, o)
                for r, o in snap.label_index().matching(first, strict)
                if o.key != pod.key and all(t.matches(o, strict) for t in rest)
            ]
            rows = _rows(matching)
            for t in terms.required_affinity:
                _count(fs.affinity_counts, t.topology_key, rows, snap)
            fs.matches_own_affinity = all(t.matches(pod, strict) for t in terms.required_affinity)
        if terms.required_anti_affinity:
            index = snap.label_index()
            for t in terms.required_anti_affinity:
                matching = [(r, o) for r, o in index.matching(t, strict) if o.key != pod.key]
                _count(fs.anti_affinity_counts, t.topology_key, _rows(matching), snap)
        return fs.seal()

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        fs: FilterState | None = state.read(FILTER_KEY)
        if fs is None:
            if pod.pod_terms.error:
                return FilterResult.reject_all(
                    idx.size, f"parsing pod: {pod.pod_terms.error}", unresolvable=True
                )
            fs = self.filter_state(pod, snap)  # no PreFilter (a what-if): from the snapshot
            if fs is None:
                return FilterResult.all_pass(idx.size)
        feasible = np.ones(idx.size, dtype=bool)
        rejections: list[Rejection] = []
        if fs.affinity_keys:
            has_keys = np.ones(idx.size, dtype=bool)
            in_domains = np.ones(idx.size, dtype=bool)
            for key in fs.affinity_keys:
                col = snap.label_column(key)[idx]
                has_keys &= col > 0
                dom = fs.affinity_domains.get(key)
                if dom is None:
                    in_domains[:] = False
                else:
                    in_domains &= np.isin(col, dom)
            first_of_its_kind = not fs.affinity_domains and fs.matches_own_affinity
            ok = has_keys if first_of_its_kind else has_keys & in_domains
            if not ok.all():
                rejections.append(Rejection(REASON_AFFINITY, ~ok, unresolvable=True))
                feasible &= ok
        # Each node gets the reason of the first rule it fails, as kube's Filter returns.
        for domains, reason in (
            (fs.anti_domains, REASON_ANTI),
            (fs.existing_anti_domains, REASON_EXISTING_ANTI),
        ):
            if not domains:
                continue
            bad = np.zeros(idx.size, dtype=bool)
            for key, dom in domains.items():
                bad |= np.isin(snap.label_column(key)[idx], dom)
            bad &= feasible
            if bad.any():
                rejections.append(Rejection(reason, bad))
                feasible &= ~bad
        return FilterResult(feasible, rejections)

    # --- Score -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        terms = pod.pod_terms
        if terms.error:
            return Status.error(f"parsing pod: {terms.error}")
        has_constraints = terms.has_preferred
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        if not has_constraints and not snap.with_affinity:
            return Status.skip()
        # Per topology key, the rows of the counted pods and the weight each adds there.
        rows_by_key: dict[str, list[int]] = {}
        weights_by_key: dict[str, list[float]] = {}

        def add(key: str, row: int, w: float) -> None:
            rows_by_key.setdefault(key, []).append(row)
            weights_by_key.setdefault(key, []).append(w)

        if has_constraints:
            index = snap.label_index()
            strict: NamespaceLabels = self._ns_labels
            for sign, group in (
                (1.0, terms.preferred_affinity),
                (-1.0, terms.preferred_anti_affinity),
            ):
                for t in group:
                    for r, o in index.matching(t, strict):
                        if o.key != pod.key:
                            add(t.topology_key, r, sign * t.weight)
        ns, labels = pod.namespace, pod.labels
        memo: dict[int, tuple[tuple[str, float], ...]] = {}  # PodTerms shared by replicas
        for row, other in snap.with_affinity.values():
            if other.key == pod.key:
                continue
            ot = other.pod_terms
            found = memo.get(id(ot))
            if found is None:
                found = memo[id(ot)] = self._symmetric(ot, ns, labels)
            for key, w in found:
                add(key, row, w)
        # key -> value id -> score; a pair is present once a counted pod's node has the key
        scores: dict[str, dict[int, float]] = {}
        for key, rows in rows_by_key.items():
            values = snap.label_column(key)[np.asarray(rows, dtype=np.int64)]
            keep = values > 0
            if not keep.any():
                continue
            ids, inverse = np.unique(values[keep], return_inverse=True)
            sums = np.bincount(inverse, weights=np.asarray(weights_by_key[key])[keep])
            scores[key] = dict(zip(ids.tolist(), sums.tolist(), strict=True))
        if not scores:
            return Status.skip()
        state.write(SCORE_KEY, scores)
        return Status()

    def _symmetric(
        self, ot: PodTerms, ns: str, labels: Mapping[str, str]
    ) -> tuple[tuple[str, float], ...]:
        """(key, weight) per term of an existing pod that matches the incoming pod (in `ns`,
        with `labels`): hardPodAffinityWeight for required affinity, +/- the weight for
        preferred affinity / anti-affinity."""
        lenient = self._known_or_empty
        hard = float(self.args.hard_pod_affinity_weight)
        out: list[tuple[str, float]] = []
        if hard > 0:
            out += [
                (t.topology_key, hard)
                for t in ot.required_affinity
                if t.matches_labels(ns, labels, lenient)
            ]
        for sign, group in ((1.0, ot.preferred_affinity), (-1.0, ot.preferred_anti_affinity)):
            out += [
                (t.topology_key, sign * t.weight)
                for t in group
                if t.matches_labels(ns, labels, lenient)
            ]
        return tuple(out)

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        scores: dict[str, dict[int, float]] | None = state.read(SCORE_KEY)
        total = np.zeros(idx.size, dtype=np.float64)
        for key, per_domain in (scores or {}).items():
            col = snap.label_column(key)[idx]
            lut = np.zeros(int(max(per_domain)) + 1 if per_domain else 1)
            for v, s in per_domain.items():
                lut[v] = s
            inside = col < lut.size
            total[inside] += lut[col[inside]]
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """kube's min-max normalisation onto 0..MAX_NODE_SCORE, truncated to integers as
        kube's int64 scores are (all equal: 0)."""
        if scores.size == 0 or state.read(SCORE_KEY) is None:
            return scores
        lo, hi = float(scores.min()), float(scores.max())
        if hi - lo <= 0:
            return np.zeros_like(scores)
        return np.trunc(MAX_NODE_SCORE * ((scores - lo) / (hi - lo)))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A pod leaving may lift anti-affinity; one arriving may satisfy affinity; a node's
        # labels may put it into (or out of) a domain. The hints are kube-scheduler's.
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    ASSIGNED_POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_LABEL
                ),
                hint=lambda pod, old, new: pod_change_hint(pod, old, new, self._known_or_empty),
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                hint=node_change_hint,
            ),
        ]


__all__ = ["InterPodAffinity", "InterPodAffinityArgs", "NO_TERMS", "Term"]
