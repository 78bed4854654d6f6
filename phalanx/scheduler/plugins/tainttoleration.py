"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Nodes share few distinct taint sets (the snapshot interns them), and pods share few
distinct toleration lists, so matching is done once per (tolerations, taint set) pair and a
Filter over thousands of nodes is a single table lookup.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.api.core import Toleration
from phalanx.scheduler.framework.config import TAINT_TOLERATION
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
    Rejection,
)
from phalanx.scheduler.snapshot import Snapshot, Taint


def tolerates(tolerations: Sequence[Toleration] | None, taint: Taint) -> bool:
    """Whether any toleration matches the taint (core/v1 Toleration.ToleratesTaint)."""
    key, value, effect = taint
    for t in tolerations or ():
        if t.effect and t.effect != effect:
            continue
        op = t.operator or "Equal"
        if op == "Exists":
            if not t.key or t.key == key:
                return True
        elif t.key == key and (t.value or "") == value:
            return True
    return False


def _taint_text(taint: Taint) -> str:
    key, value, _ = taint
    return f"{{{key}: {value}}}"


@dataclass(slots=True)
class _Table:
    """Per taint-set id: filter verdict, its reason, and the PreferNoSchedule count."""

    ok: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    prefer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    reasons: list[str] = field(default_factory=list)


@register_plugin
class TaintToleration(Plugin):
    NAME = TAINT_TOLERATION
    NODE_LOCAL = True

    def __init__(self, handle, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(handle, args)
        self._tables: dict[Hashable, _Table] = {}

    def _table(self, pod: PodInfo, snap: Snapshot) -> _Table:
        tolerations = pod.pod.spec.tolerations
        key: Hashable = pod.signature[4] if tolerations else None  # the frozen tolerations
        table = self._tables.get(key)
        if table is None:
            if len(self._tables) > 4096:
                self._tables.clear()
            table = self._tables[key] = _Table()
        n = len(snap.taint_sets)
        done = table.ok.size
        if done < n:
            ok = np.empty(n - done, dtype=bool)
            prefer = np.zeros(n - done, dtype=np.float64)
            for i, taints in enumerate(snap.taint_sets[done:]):
                bad = [t for t in taints if t[2] in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)]
                ok[i] = not bad
                table.reasons.append(f"node(s) had untolerated taint {_taint_text(bad[0])}" if bad else "")
                prefer[i] = sum(1 for t in taints if t[2] == "PreferNoSchedule" and not tolerates(tolerations, t))
            table.ok = np.concatenate([table.ok, ok])
            table.prefer = np.concatenate([table.prefer, prefer])
        return table

    def filter(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> FilterResult:
        table = self._table(pod, snap)
        tids = snap.taint_set_ids[idx]
        ok = table.ok[tids]
        if ok.all():
            return FilterResult(ok)
        bad_tids = np.unique(tids[~ok])
        by_reason: dict[str, np.ndarray] = {}
        for tid in bad_tids.tolist():
            reason = table.reasons[tid]
            m = tids == tid
            by_reason[reason] = by_reason[reason] | m if reason in by_reason else m
        return FilterResult(ok, [Rejection(r, m, True) for r, m in by_reason.items()])

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        return self._table(pod, snap).prefer[snap.taint_set_ids[idx]]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        # Fewer intolerable PreferNoSchedule taints is better (kube's reverse normalisation).
        top = scores.max() if scores.size else 0.0
        if top == 0:
            return np.full(scores.size, MAX_NODE_SCORE)
        return MAX_NODE_SCORE - scores * (MAX_NODE_SCORE / top)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT))]
