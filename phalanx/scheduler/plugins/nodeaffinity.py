"""NodeAffinity: spec.nodeSelector and required node affinity filter; preferred terms score.

As kube-scheduler 1.36's plugin: PreFilter narrows the nodes to those a `metadata.name`
matchField names (or rejects a pod whose terms name no node in common) and is skipped for
pods without a node selector or required affinity; Filter checks the plugin's
`addedAffinity` first ("scheduler-enforced"), then the pod's; Score sums the weights of the
matched preferred terms (the pod's and `addedAffinity`'s), normalised so the best node
gets 100. Term semantics (and parse errors) are in phalanx.scheduler.nodeselector.

```yaml
pluginConfig:
- name: NodeAffinity
  args:
    addedAffinity:                      # applied to every pod of this profile
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [a]}]}]
```

Selectors are compiled once per distinct (nodeSelector, nodeAffinity) into vectorised
checks on the snapshot's interned label columns.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import model_validator

from phalanx.api.base import KubeModel
from phalanx.api.core import Node
from phalanx.api.core import NodeAffinity as NodeAffinitySpec
from phalanx.scheduler.framework.config import NODE_AFFINITY
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import Plugin
from phalanx.scheduler.framework.pluginargs import raise_errors
from phalanx.scheduler.framework.registry import register_plugin
from phalanx.scheduler.framework.status import Status
from phalanx.scheduler.framework.types import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Rejection,
)
from phalanx.scheduler.nodeselector import (
    OBJECT_NAME_FIELD,
    Preferred,
    RequiredAffinity,
    Selector,
    format_errors,
    parse_preferred,
    parse_selector,
    required_affinity,
)
from phalanx.scheduler.scoring import default_normalize
from phalanx.scheduler.snapshot import Snapshot

REASON = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
# Why nodes outside PreFilter's node names were not tried (kube's framework wording).
REASON_NOT_NAMED = f"node(s) didn't satisfy plugin(s) [{NODE_AFFINITY}]"

_ADDED = "addedAffinity"
_ADDED_REQUIRED = f"{_ADDED}.requiredDuringSchedulingIgnoredDuringExecution"
_ADDED_PREFERRED = f"{_ADDED}.preferredDuringSchedulingIgnoredDuringExecution"


class NodeAffinityArgs(KubeModel):
    """kube-scheduler's NodeAffinityArgs: node affinity added to every pod of the profile."""

    added_affinity: NodeAffinitySpec | None = None

    @model_validator(mode="after")
    def _parses(self) -> NodeAffinityArgs:
        added = self.added_affinity
        if added is None:
            return self
        errors: list[str] = []
        if added.required_during_scheduling_ignored_during_execution is not None:
            sel = added.required_during_scheduling_ignored_during_execution
            errors += parse_selector(sel, _ADDED_REQUIRED).errors
        prefs = added.preferred_during_scheduling_ignored_during_execution
        errors += parse_preferred(prefs, _ADDED_PREFERRED).errors
        raise_errors(errors)
        return self


@dataclass(slots=True)
class _PodAffinity:
    """A pod's node affinity, parsed once per distinct (nodeSelector, nodeAffinity)."""

    required: RequiredAffinity
    has_required: bool  # a nodeSelector or required terms (else Filter passes every node)
    skip_pre_filter: bool  # nothing for PreFilter/Filter to do (kube's nil checks)
    node_names: frozenset[str] | None  # matchFields metadata.name narrowing (None: all)
    conflict: bool  # every term names nodes, none in common
    preferred: Preferred | None  # None: the pod has no preferred terms field


def _node_names(spec: Any) -> tuple[frozenset[str] | None, bool]:
    """The nodes a pod's required terms name by metadata.name In (all of them, when some
    term names none), and whether they conflict (no node is named by every requirement)."""
    na = spec.affinity.node_affinity if spec.affinity else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    if req is None or not req.node_selector_terms:
        return None, False
    names: set[str] = set()
    for term in req.node_selector_terms:
        term_names: set[str] | None = None
        for r in term.match_fields or ():
            if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                values = set(r.values or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None, False  # terms are ORed: this one allows every node
        names |= term_names
    return (None, True) if not names else (frozenset(names), False)


def _parse_pod(pod: PodInfo) -> _PodAffinity:
    spec = pod.pod.spec
    na = spec.affinity.node_affinity if spec.affinity else None
    required = required_affinity(spec)
    has_required_terms = required.selector is not None
    names, conflict = _node_names(spec)
    prefs = na.preferred_during_scheduling_ignored_during_execution if na else None
    return _PodAffinity(
        required=required,
        has_required=bool(required.node_selector) or has_required_terms,
        skip_pre_filter=not has_required_terms and spec.node_selector is None,
        node_names=names,
        conflict=conflict,
        preferred=parse_preferred(prefs) if prefs is not None else None,
    )


@register_plugin
class NodeAffinity(Plugin):
    NAME = NODE_AFFINITY
    NODE_LOCAL = True
    NODE_ONLY = True
    Args = NodeAffinityArgs

    def __init__(self, handle: Any, args: NodeAffinityArgs | None = None) -> None:
        super().__init__(handle, args or NodeAffinityArgs())
        added = self.args.added_affinity
        req = added.required_during_scheduling_ignored_during_execution if added else None
        self.added_required: Selector | None = parse_selector(req) if req is not None else None
        prefs = added.preferred_during_scheduling_ignored_during_execution if added else None
        preferred = parse_preferred(prefs)
        self.added_preferred: Preferred | None = preferred if preferred.terms else None
        self._pods: dict[Hashable, _PodAffinity] = {}

    def _get(self, pod: PodInfo) -> _PodAffinity:
        key = (pod.signature[2], pod.signature[3])  # frozen nodeSelector, nodeAffinity
        parsed = self._pods.get(key)
        if parsed is None:
            if len(self._pods) > 4096:
                self._pods.clear()
            parsed = self._pods[key] = _parse_pod(pod)
        return parsed

    def pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status]:
        parsed = self._get(pod)
        if parsed.skip_pre_filter and self.added_required is None:
            return None, Status.skip()
        if parsed.conflict:
            return None, Status.unresolvable(REASON_CONFLICT)
        if parsed.node_names is None:
            return None, Status()
        rows = sorted(snap.index[n] for n in parsed.node_names if n in snap.index)
        return PreFilterResult(np.asarray(rows, dtype=np.int64), REASON_NOT_NAMED), Status()

    def filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray
    ) -> FilterResult:
        parsed = self._get(pod)
        if self.added_required is None and not parsed.has_required:
            return FilterResult.all_pass(idx.size)
        if self.added_required is None:
            return FilterResult.from_mask(
                parsed.required.mask(snap, idx), REASON, unresolvable=True
            )
        rejections: list[Rejection] = []
        ok = np.ones(idx.size, dtype=bool)
        if self.added_required is not None:
            ok = self.added_required.mask(snap, idx)
            rejections.append(Rejection(REASON_ENFORCED, ~ok, True))
        if parsed.has_required:
            own = parsed.required.mask(snap, idx)
            rejections.append(Rejection(REASON, ok & ~own, True))
            ok &= own
        return FilterResult(ok, rejections)

    def pre_score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> Status:
        preferred = self._get(pod).preferred
        if preferred is not None and preferred.errors:
            return Status.error(format_errors(preferred.errors))
        if preferred is None and self.added_preferred is None:
            return Status.skip()
        return Status()

    def score(self, state: CycleState, pod: PodInfo, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        total = np.zeros(idx.size, dtype=np.float64)
        if self.added_preferred is not None:
            total += self.added_preferred.scores(snap, idx)
        preferred = self._get(pod).preferred
        if preferred is not None:
            total += preferred.scores(snap, idx)
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.node_change_hint,
            )
        ]

    def node_change_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A node added, or updated from not matching to matching the pod's (and the
        profile's added) required affinity, may help; other node changes cannot."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            return QueueingHint.QUEUE  # not a node: be safe, as kube is on a decode error
        if self.added_required is not None and not self.added_required.matches_node(new):
            return QueueingHint.QUEUE_SKIP
        required = self._get(pod).required
        if not required.matches_node(new):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if required.matches_node(old) else QueueingHint.QUEUE
