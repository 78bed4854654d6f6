"""InterPodAffinity: podAffinity / podAntiAffinity, with kube-scheduler's semantics.

Filter (required terms), a node passes when:
- no pod already counted (bound, or assumed: a gang's peers placed earlier in the same
  attempt count too) has a required anti-affinity term that matches this pod and whose
  topology domain the node is in ("node(s) didn't satisfy existing pods anti-affinity
  rules": the symmetric check);
- for each of this pod's required affinity terms, the node has the term's topologyKey and
  some matching pod runs in the node's domain; unless no pod anywhere matches any of the
  terms and the pod matches all of them itself (the first pod of a group that wants to be
  together), where any node with the keys passes ("node(s) didn't match pod affinity
  rules", unresolvable: preemption removes pods, it cannot add the ones wanted);
- for each of its required anti-affinity terms, no matching pod runs in the node's domain
  ("node(s) didn't match pod anti-affinity rules"); nodes without the key pass.

Score (preferred terms), per topology domain: + weight for each existing pod matching one
of this pod's preferred affinity terms, - weight per anti-affinity term; and, symmetric, +
`hardPodAffinityWeight` for each existing pod whose required affinity term matches this pod,
+/- weight for its preferred (anti-)affinity terms that do (unless
`ignorePreferredTermsOfExistingPods`). A node scores the sum over its domains; the scores are
then normalised to 0..100 over the scored nodes (min-max; all equal -> 0), as kube does.

Cheap when nobody uses it: the snapshot keeps the pods that have terms; a pod without terms
in a cluster where no pod has required anti-affinity skips the Filter, and skips the Score
when no pod has terms at all. Otherwise PreFilter counts, per term, the matching pods per
domain once (a label index answers which pods match), and Filter/Score are vectorised lookups
of those domain sets in the snapshot's int32 label columns. Filter recomputes them itself
when PreFilter did not run (preemption's what-ifs with victims removed).

Namespaces: a term's `namespaces`, else the declaring pod's own namespace; a
`namespaceSelector` adds the namespaces whose labels match (`{}`: all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from phalanx.api.base import KubeModel
from phalanx.api.core import Namespace
from phalanx.scheduler.affinity import NO_TERMS, Term
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
from phalanx.scheduler.snapshot import Snapshot

REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
FILTER_KEY = "InterPodAffinity/filter"
SCORE_KEY = "InterPodAffinity/score"


class InterPodAffinityArgs(KubeModel):
    hard_pod_affinity_weight: int = Field(default=1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(slots=True)
class FilterState:
    # topology key -> domain value ids some existing pod's anti-affinity forbids
    existing_anti: dict[str, np.ndarray] = field(default_factory=dict)
    # per required affinity term: (key, domain ids holding a matching pod)
    affinity: list[tuple[str, np.ndarray]] = field(default_factory=list)
    # no pod matches any affinity term, and the pod matches all of them itself
    first_of_its_kind: bool = False
    anti: list[tuple[str, np.ndarray]] = field(default_factory=list)


def _ids(values: set[int]) -> np.ndarray:
    return np.fromiter(sorted(values), dtype=np.int32, count=len(values))


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
        if self._namespaces is None:
            return None
        ns = self._namespaces.get(name)
        return ns.metadata.labels if ns is not None else None

    # --- Filter ------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        terms = pod.pod_terms
        if (
            not snap.with_required_anti
            and not terms.required_affinity
            and not terms.required_anti_affinity
        ):
            return None, Status.skip()
        state.write(FILTER_KEY, self._filter_state(pod, snap))
        return None, Status()

    def _domains(self, rows: Sequence[int], key: str, snap: Snapshot) -> set[int]:
        col = snap.label_column(key)
        return (
            {int(v) for v in col[np.asarray(rows, dtype=np.int64)].tolist() if v > 0}
            if rows
            else set()
        )

    def _filter_state(self, pod: PodInfo, snap: Snapshot) -> FilterState:
        fs = FilterState()
        forbidden: dict[str, set[int]] = {}
        for row, other in snap.with_required_anti.values():
            if other.key == pod.key:
                continue
            for t in other.pod_terms.required_anti_affinity:
                if t.matches(pod, self._ns_labels):
                    v = int(snap.label_column(t.topology_key)[row])
                    if v > 0:
                        forbidden.setdefault(t.topology_key, set()).add(v)
        fs.existing_anti = {k: _ids(v) for k, v in forbidden.items()}
        terms = pod.pod_terms
        if terms.required_affinity or terms.required_anti_affinity:
            index = snap.label_index()
            any_match = False
            for t in terms.required_affinity:
                rows = [r for r, o in index.matching(t, self._ns_labels) if o.key != pod.key]
                dom = self._domains(rows, t.topology_key, snap)
                any_match = any_match or bool(dom)
                fs.affinity.append((t.topology_key, _ids(dom)))
            fs.first_of_its_kind = (
                not any_match
                and bool(terms.required_affinity)
                and all(t.matches(pod, self._ns_labels) for t in terms.required_affinity)
            )
            for t in terms.required_anti_affinity:
                rows = [r for r, o in index.matching(t, self._ns_labels) if o.key != pod.key]
                fs.anti.append((t.topology_key, _ids(self._domains(rows, t.topology_key, snap))))
        return fs

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        fs: FilterState | None = state.read(FILTER_KEY)
        if fs is None:
            terms = pod.pod_terms
            if (
                not snap.with_required_anti
                and not terms.required_affinity
                and not terms.required_anti_affinity
            ):
                return FilterResult.all_pass(idx.size)
            fs = self._filter_state(pod, snap)  # no PreFilter (a what-if): from the snapshot now
        feasible = np.ones(idx.size, dtype=bool)
        rejections: list[Rejection] = []
        if fs.affinity:
            has_keys = np.ones(idx.size, dtype=bool)
            in_domains = np.ones(idx.size, dtype=bool)
            for key, dom in fs.affinity:
                col = snap.label_column(key)[idx]
                has_keys &= col > 0
                in_domains &= np.isin(col, dom)
            ok = has_keys if fs.first_of_its_kind else has_keys & in_domains
            if not ok.all():
                rejections.append(Rejection(REASON_AFFINITY, ~ok, unresolvable=True))
                feasible &= ok
        bad = np.zeros(idx.size, dtype=bool)
        for key, dom in fs.anti:
            if dom.size:
                bad |= np.isin(snap.label_column(key)[idx], dom)
        if bad.any():
            rejections.append(Rejection(REASON_ANTI, bad))
            feasible &= ~bad
        bad = np.zeros(idx.size, dtype=bool)
        for key, dom in fs.existing_anti.items():
            bad |= np.isin(snap.label_column(key)[idx], dom)
        if bad.any():
            rejections.append(Rejection(REASON_EXISTING_ANTI, bad))
            feasible &= ~bad
        return FilterResult(feasible, rejections)

    # --- Score -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        terms = pod.pod_terms
        existing = bool(snap.with_affinity)
        if not terms.has_preferred and not existing:
            return Status.skip()
        scores: dict[str, dict[int, float]] = {}

        def add(key: str, row: int, w: float) -> None:
            v = int(snap.label_column(key)[row])
            if v > 0 and w:
                d = scores.setdefault(key, {})
                d[v] = d.get(v, 0.0) + w

        if terms.has_preferred:
            index = snap.label_index()
            for sign, group in (
                (1.0, terms.preferred_affinity),
                (-1.0, terms.preferred_anti_affinity),
            ):
                for t in group:
                    for row, other in index.matching(t, self._ns_labels):
                        if other.key != pod.key:
                            add(t.topology_key, row, sign * t.weight)
        hard = float(self.args.hard_pod_affinity_weight)
        for row, other in snap.with_affinity.values():
            if other.key == pod.key:
                continue
            ot = other.pod_terms
            if hard:
                for t in ot.required_affinity:
                    if t.matches(pod, self._ns_labels):
                        add(t.topology_key, row, hard)
            if not self.args.ignore_preferred_terms_of_existing_pods:
                for t in ot.preferred_affinity:
                    if t.matches(pod, self._ns_labels):
                        add(t.topology_key, row, float(t.weight))
                for t in ot.preferred_anti_affinity:
                    if t.matches(pod, self._ns_labels):
                        add(t.topology_key, row, -float(t.weight))
        scores = {k: d for k, d in scores.items() if any(d.values())}
        if not scores:
            return Status.skip()
        state.write(SCORE_KEY, scores)
        return Status()

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
        """kube's min-max normalisation onto 0..MAX_NODE_SCORE (all equal -> 0)."""
        if scores.size == 0 or state.read(SCORE_KEY) is None:
            return scores
        lo, hi = float(scores.min()), float(scores.max())
        if hi - lo <= 0:
            return np.zeros_like(scores)
        return MAX_NODE_SCORE * (scores - lo) / (hi - lo)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A pod leaving may lift anti-affinity; one arriving may satisfy affinity; a node's
        # labels may put it into (or out of) a domain.
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    ASSIGNED_POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_LABEL
                )
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]


__all__ = ["InterPodAffinity", "InterPodAffinityArgs", "NO_TERMS", "Term"]
