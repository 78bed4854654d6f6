"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

As kube-scheduler 1.36: a node with a NoSchedule or NoExecute taint the pod does not
tolerate is rejected ("node(s) had untolerated taint(s)", preemption cannot help); Score
counts the PreferNoSchedule taints the pod does not tolerate, and normalisation reverses it
(fewest such taints: 100). Toleration matching is core/v1's ToleratesTaint (the alpha
`Gt`/`Lt` operators are refused by our API, as by the API server with their feature gate
off, its default).

Nodes share few distinct taint sets (the snapshot interns them), and pods share few
distinct toleration lists, so matching is done once per (tolerations, taint set) pair and a
Filter over thousands of nodes is a single table lookup.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.api.core import Node, Pod, Toleration
from phalanx.scheduler.framework.config import TAINT_TOLERATION
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.types import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.scoring import default_normalize
from phalanx.scheduler.snapshot import Snapshot, Taint

REASON = "node(s) had untolerated taint(s)"
_DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")


def toleration_tolerates(t: Toleration, taint: Taint) -> bool:
    """core/v1 Toleration.ToleratesTaint: an empty effect or key matches any; `Exists`
    matches any value; an empty operator means `Equal` (values compared, even with no key)."""
    key, value, effect = taint
    if t.effect and t.effect != effect:
        return False
    if t.key and t.key != key:
        return False
    op = t.operator or "Equal"
    if op == "Equal":
        return (t.value or "") == value
    return op == "Exists"


def tolerates(tolerations: Sequence[Toleration] | None, taint: Taint) -> bool:
    """Whether any toleration matches the taint."""
    return any(toleration_tolerates(t, taint) for t in tolerations or ())


def untolerated(tolerations: Sequence[Toleration] | None, taints: Sequence[Taint]) -> Taint | None:
    """The first NoSchedule/NoExecute taint not tolerated (kube's FindMatchingUntoleratedTaint)."""
    for t in taints:
        if t[2] in _DO_NOT_SCHEDULE and not tolerates(tolerations, t):
            return t
    return None


def node_taints(node: Node) -> list[Taint]:
    return [(t.key, t.value or "", t.effect) for t in node.spec.taints or ()]


@dataclass(slots=True)
class _Table:
    """Per taint-set id: filter verdict and the count of intolerable PreferNoSchedule taints."""

    ok: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    prefer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))


@register_plugin
class TaintToleration(Plugin):
    NAME = TAINT_TOLERATION
    NODE_LOCAL = True
    NODE_ONLY = True

    def __init__(self, handle: Any, args: Any = None) -> None:
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
            new = snap.taint_sets[done:]
            ok = np.fromiter((untolerated(tolerations, ts) is None for ts in new), bool, len(new))
            prefer = np.fromiter(
                (
                    sum(
                        1
                        for t in ts
                        if t[2] == "PreferNoSchedule" and not tolerates(tolerations, t)
                    )
                    for ts in new
                ),
                np.float64,
                len(new),
            )
            table.ok = np.concatenate([table.ok, ok])
            table.prefer = np.concatenate([table.prefer, prefer])
        return table

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        ok = self._table(pod, snap).ok[snap.taint_set_ids[idx]]
        return FilterResult(ok, [Rejection(REASON, ~ok, True)] if not ok.all() else [])

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        return self._table(pod, snap).prefer[snap.taint_set_ids[idx]]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_change_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION),
                pod_toleration_hint,
                the_pod_itself,
            ),
        ]


def node_change_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """Helps only when the node goes from having an untolerated taint (or not existing) to
    having none."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.QUEUE
    tolerations = pod.pod.spec.tolerations
    was_untolerated = old is None or untolerated(tolerations, node_taints(old)) is not None
    is_untolerated = untolerated(tolerations, node_taints(new)) is not None
    return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.QUEUE_SKIP


def pod_toleration_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """A pod's new toleration can only help that pod."""
    if not isinstance(new, Pod) or (old is not None and not isinstance(old, Pod)):
        return QueueingHint.QUEUE
    same = (new.metadata.uid or new.key) == pod.uid
    return QueueingHint.QUEUE if same else QueueingHint.QUEUE_SKIP


def the_pod_itself(old: Any, new: Any) -> list[str]:
    """Event targets: the updated pod alone (keeps a pod update O(1) in the queue)."""
    obj = new if new is not None else old
    return [obj.key] if isinstance(obj, Pod) else []
