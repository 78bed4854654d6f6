"""NodeAffinity: spec.nodeSelector and required node affinity filter; preferred terms score.

Selectors compile once per distinct (nodeSelector, nodeAffinity) into vectorised checks on
the snapshot's interned label columns: `In` is `np.isin` on int32 value ids, `Exists` a
comparison with 0, `Gt`/`Lt` a float comparison on a numeric column.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from phalanx.api.core import NodeSelectorRequirement, NodeSelectorTerm
from phalanx.scheduler.framework.config import NODE_AFFINITY
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import MAX_NODE_SCORE, Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
)
from phalanx.scheduler.snapshot import Snapshot

REASON = "node(s) didn't match Pod's node affinity/selector"

Matcher = Callable[[Snapshot, np.ndarray], np.ndarray]  # rows -> bool mask


def _requirement(req: NodeSelectorRequirement, *, field: bool = False) -> Matcher:
    key, op, values = req.key, req.operator, list(req.values or ())
    if field:
        # matchFields supports metadata.name only (as in Kubernetes).
        names = set(values) if key == "metadata.name" else set()

        def by_name(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
            rows = np.fromiter((snap.index[n] for n in names if n in snap.index), dtype=np.int64)
            hit = np.isin(idx, rows)
            return hit if op == "In" else ~hit

        return by_name
    if op in ("In", "NotIn"):

        def isin(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
            ids = [snap.label_value_id(key, v) for v in values]
            hit = np.isin(snap.label_column(key)[idx], ids)
            return hit if op == "In" else ~hit

        return isin
    if op in ("Exists", "DoesNotExist"):

        def exists(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
            present = snap.label_column(key)[idx] != 0
            return present if op == "Exists" else ~present

        return exists
    if op in ("Gt", "Lt"):
        try:
            bound = float(int(values[0]))
        except (IndexError, ValueError):
            return lambda snap, idx: np.zeros(idx.size, dtype=bool)

        def compare(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
            col = snap.numeric_label_column(key)[idx]
            with np.errstate(invalid="ignore"):
                return col > bound if op == "Gt" else col < bound

        return compare
    return lambda snap, idx: np.zeros(idx.size, dtype=bool)


def compile_term(term: NodeSelectorTerm) -> Matcher:
    """All requirements of a term must hold; an empty term matches nothing."""
    parts = [_requirement(r) for r in term.match_expressions or ()]
    parts += [_requirement(r, field=True) for r in term.match_fields or ()]
    if not parts:
        return lambda snap, idx: np.zeros(idx.size, dtype=bool)

    def match(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        out = parts[0](snap, idx)
        for p in parts[1:]:
            out &= p(snap, idx)
        return out

    return match


def compile_selector(selector: dict[str, str]) -> Matcher:
    items = sorted(selector.items())

    def match(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        out = np.ones(idx.size, dtype=bool)
        for k, v in items:
            out &= snap.label_column(k)[idx] == snap.label_value_id(k, v)
        return out

    return match


class _Compiled:
    __slots__ = ("required", "preferred")

    def __init__(self, pod: PodInfo) -> None:
        spec = pod.pod.spec
        checks: list[Matcher] = []
        if spec.node_selector:
            checks.append(compile_selector(spec.node_selector))
        na = spec.affinity.node_affinity if spec.affinity else None
        req = na.required_during_scheduling_ignored_during_execution if na else None
        if req is not None:
            terms = [compile_term(t) for t in req.node_selector_terms]

            def any_term(snap: Snapshot, idx: np.ndarray) -> np.ndarray:
                out = np.zeros(idx.size, dtype=bool)
                for t in terms:
                    out |= t(snap, idx)
                return out

            checks.append(any_term)
        self.required = checks
        prefs = na.preferred_during_scheduling_ignored_during_execution if na else None
        self.preferred = [(float(p.weight), compile_term(p.preference)) for p in prefs or () if p.weight]


@register_plugin
class NodeAffinity(Plugin):
    NAME = NODE_AFFINITY
    NODE_LOCAL = True

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        self._compiled: dict[Hashable, _Compiled] = {}

    def _get(self, pod: PodInfo) -> _Compiled:
        key = (pod.signature[2], pod.signature[3])  # frozen nodeSelector, nodeAffinity
        c = self._compiled.get(key)
        if c is None:
            if len(self._compiled) > 4096:
                self._compiled.clear()
            c = self._compiled[key] = _Compiled(pod)
        return c

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        checks = self._get(pod).required
        if not checks:
            return FilterResult.all_pass(idx.size)
        ok = checks[0](snap, idx)
        for c in checks[1:]:
            ok &= c(snap, idx)
        return FilterResult.from_mask(ok, REASON, unresolvable=True)

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        total = np.zeros(idx.size, dtype=np.float64)
        for weight, term in self._get(pod).preferred:
            total += weight * term(snap, idx)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        top = scores.max() if scores.size else 0.0
        return scores * (MAX_NODE_SCORE / top) if top > 0 else scores

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL))]
