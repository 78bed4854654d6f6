"""Builders and checks for the PodTopologySpread tables (ported from kube-scheduler 1.36).

The builders mirror the fluent pod/node/selector wrappers kube's tables are written with, so a
row reads like the kube row it ports: `make_pod("p").label("foo", "").spread(1, "zone", HARD,
FOO)`. `snapshot()` places the existing pods on their nodes; the plugin runs against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from phalanx.api.base import OwnerReference
from phalanx.api.core import Affinity, Node, Pod, Toleration
from phalanx.cluster.selectors import parse_label_selector
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.podtopologyspread import (
    FILTER_KEY,
    SCORE_KEY,
    FilterState,
    PodTopologySpread,
    ScoreState,
)
from phalanx.scheduler.snapshot import Snapshot
from phalanx.scheduler.spread import HOSTNAME, ZONE, Constraint  # noqa: F401 (the tables')
from phalanx.scheduler.spread_defaults import DefaultSelectors

from ..helpers import node as plain_node
from ..helpers import pod as plain_pod

HARD, SOFT = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
TAINTS = [(UNSCHEDULABLE_TAINT, "", "NoSchedule")]
MAX_INT32 = 2**31 - 1
NEW_PATHS = (("", MAX_INT32), ("", MAX_INT32))  # kube's newCriticalPaths(): no domain at all


class _Selector(dict):
    """A metav1.LabelSelector under construction (a dict in the API's camelCase form)."""

    def label(self, key: str, value: str) -> _Selector:
        self.setdefault("matchLabels", {})[key] = value
        return self

    def exists(self, key: str) -> _Selector:
        self.setdefault("matchExpressions", []).append({"key": key, "operator": "Exists"})
        return self


def selector() -> _Selector:
    """kube's st.MakeLabelSelector(): `{}` (every pod) until labels or expressions are added."""
    return _Selector()


class make_pod:  # noqa: N801 - reads like kube's st.MakePod()
    def __init__(self, name: str = "") -> None:
        self._name = name
        self._ns = "default"
        self._labels: dict[str, str] = {}
        self._node: str | None = None
        self._spread: list[dict[str, Any]] = []
        self._selector: dict[str, str] | None = None
        self._affinity: dict[str, Any] | None = None
        self._tolerations: list[Toleration] = []
        self._terminating = False
        self._owner: tuple[str, tuple[str, str]] | None = None
        self._uid: str | None = None
        self._nominated: str | None = None

    def name(self, name: str) -> make_pod:
        self._name = name
        return self

    def namespace(self, ns: str) -> make_pod:
        self._ns = ns
        return self

    def label(self, key: str, value: str) -> make_pod:
        self._labels[key] = value
        return self

    def node(self, name: str) -> make_pod:
        self._node = name
        return self

    def spread(
        self, max_skew: int, key: str, when: str, sel: Mapping[str, Any] | None = None,
        min_domains: int | None = None, affinity: str | None = None, taints: str | None = None,
        keys: list[str] | None = None,
    ) -> make_pod:
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
        if sel is not None:
            c["labelSelector"] = dict(sel)
        for k, v in (("minDomains", min_domains), ("nodeAffinityPolicy", affinity),
                     ("nodeTaintsPolicy", taints), ("matchLabelKeys", keys)):
            if v is not None:
                c[k] = v
        self._spread.append(c)
        return self

    def node_selector(self, labels: dict[str, str]) -> make_pod:
        self._selector = dict(labels)
        return self

    def _required(self, expr: dict[str, Any]) -> make_pod:
        self._affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
        return self

    def node_affinity_in(
        self, key: str, values: list[str], kind: str = "matchExpressions"
    ) -> make_pod:
        return self._required({"key": key, "operator": "In", "values": values})

    def node_affinity_not_in(self, key: str, values: list[str]) -> make_pod:
        return self._required({"key": key, "operator": "NotIn", "values": values})

    def toleration(self, key: str) -> make_pod:
        self._tolerations.append(Toleration(key=key, operator="Exists"))
        return self

    def terminating(self) -> make_pod:
        self._terminating = True
        return self

    def owner(self, name: str, kind: tuple[str, str]) -> make_pod:
        self._owner = (name, kind)
        return self

    def uid(self, uid: str) -> make_pod:
        self._uid = uid
        return self

    def nominated(self, node: str) -> make_pod:
        self._nominated = node
        return self

    def obj(self) -> Pod:
        affinity = (
            Affinity.model_validate({"nodeAffinity": self._affinity}) if self._affinity else None
        )
        p = plain_pod(self._name, namespace=self._ns, labels=self._labels, affinity=affinity,
                      node_selector=self._selector, tolerations=self._tolerations or None)
        p.spec.topology_spread_constraints = [dict(c) for c in self._spread] or None
        p.spec.node_name = self._node
        if self._terminating:
            p.metadata.deletion_timestamp = datetime(2026, 1, 1, tzinfo=UTC)
        if self._owner is not None:
            name, (api_version, kind) = self._owner
            p.metadata.owner_references = [OwnerReference(
                api_version=api_version, kind=kind, name=name, uid=name, controller=True)]
        if self._uid is not None:
            p.metadata.uid = self._uid
        p.status.nominated_node_name = self._nominated
        return p


class make_node:  # noqa: N801 - reads like kube's st.MakeNode()
    def __init__(self, name: str = "") -> None:
        self._name = name
        self._labels: dict[str, str] = {}
        self._taints: list[tuple[str, str, str]] = []

    def name(self, name: str) -> make_node:
        self._name = name
        return self

    def label(self, key: str, value: str) -> make_node:
        self._labels[key] = value
        return self

    def taints(self, taints: list[tuple[str, str, str]]) -> make_node:
        self._taints = list(taints)
        return self

    def obj(self) -> Node:
        return plain_node(self._name, labels=self._labels, taints=self._taints or None)


# --- the objects default constraints read -------------------------------------------------


@dataclass(frozen=True)
class service:  # noqa: N801 - a v1.Service's selector
    selector: dict[str, str]


@dataclass(frozen=True)
class replicaset:  # noqa: N801 - an apps/v1 ReplicaSet's name and selector
    name: str
    selector: dict[str, Any]


def default(max_skew: int, key: str, when: str) -> dict[str, Any]:
    """A profile default constraint (no selector: it is derived per pod)."""
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}


def stand_in_selectors(objs: Iterable[Any]) -> DefaultSelectors:
    """DefaultSelectors over stand-ins for kube's listers (Services and ReplicaSets)."""
    objs = list(objs)
    services = [o.selector for o in objs if isinstance(o, service)]
    sets = {o.name: o.selector for o in objs if isinstance(o, replicaset)}

    def controllers(api_version: str, kind: str, ns: str, name: str) -> tuple[bool, Any]:
        if (api_version, kind) == ("apps/v1", "ReplicaSet") and name in sets:
            return True, sets[name]
        return False, None

    return DefaultSelectors(lambda ns: services, controllers)


class _Handle:
    informers = None


def make_plugin(args: dict[str, Any] | None = None, objs: Iterable[Any] = ()) -> PodTopologySpread:
    plugin = PodTopologySpread(_Handle(), args if args is not None else {"defaultingType": "List"})
    plugin.default_selectors = stand_in_selectors(objs)
    return plugin


def snapshot(nodes: Iterable[make_node], pods: Iterable[make_pod] = ()) -> Snapshot:
    snap = Snapshot()
    for n in nodes:
        snap.set_node(n.obj())
    for p in pods:
        obj = p.obj()
        snap.add_pod(PodInfo(obj), obj.spec.node_name or "")
    return snap


def rows_of(snap: Snapshot, nodes: Iterable[make_node]) -> np.ndarray:
    return np.asarray([snap.row(n.obj().name) for n in nodes], dtype=np.int64)


# --- expected states ------------------------------------------------------------------------


@dataclass(frozen=True)
class C:
    """An expected constraint (kube's topologySpreadConstraint)."""

    max_skew: int
    key: str
    selector: Mapping[str, Any] | None
    min_domains: int = 1
    affinity: str = HONOR
    taints: str = IGNORE

    def check(self, got: Constraint) -> None:
        assert (got.max_skew, got.topology_key, got.min_domains) == (
            self.max_skew, self.key, self.min_domains)
        assert got.honor_affinity == (self.affinity == HONOR)
        assert got.honor_taints == (self.taints == HONOR)
        if self.selector is None:
            assert got.selector is None
        else:
            assert got.selector is not None
            want = parse_label_selector(dict(self.selector))
            assert set(got.selector.requirements) == set(want.requirements)


NODE_C = C(1, "node", FOO)
ZONE_C = C(1, "zone", FOO)


def _names(snap: Snapshot, key: str) -> dict[int, str]:
    names = {vid: value for value, vid in snap.label_values(key).items()}
    names[0] = ""
    return names


def domain_counts(
    snap: Snapshot, key: str, counts: np.ndarray, present: np.ndarray
) -> dict[str, int]:
    names = _names(snap, key)
    return {names[int(v)]: int(counts[v]) for v in np.flatnonzero(present)}


def critical_paths(counts: Mapping[str, int]) -> tuple[tuple[str, int], tuple[str, int]]:
    """The two domains with the fewest matching pods (kube's criticalPaths, ties by name)."""
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))[:2]
    while len(ranked) < 2:
        ranked.append(("", MAX_INT32))
    return ranked[0], ranked[1]


def _sorted_paths(p: tuple[tuple[str, int], tuple[str, int]]) -> tuple[Any, ...]:
    a, b = p
    return (b, a) if a[1] == b[1] and a[0] > b[0] else (a, b)


@dataclass
class Want:
    """An expected PreFilter state: constraints, critical paths, matching pods per domain."""

    constraints: list[C]
    paths: list[Any] = field(default_factory=list)
    counts: list[dict[str, int]] = field(default_factory=list)

    def check(self, fs: FilterState, snap: Snapshot) -> None:
        assert len(fs.constraints) == len(self.constraints)
        for want, got in zip(self.constraints, fs.constraints, strict=True):
            want.check(got)
        got_counts = [domain_counts(snap, c.topology_key, fs.counts[i], fs.present[i])
                      for i, c in enumerate(fs.constraints)]
        assert got_counts == self.counts
        got_paths = [critical_paths(c) for c in got_counts]
        assert got_paths == [_sorted_paths(p) for p in self.paths]


@dataclass
class ScoreWant:
    """An expected PreScore state: constraints, ignored nodes, counts per domain, weights (the
    domain count each weight is log(n + 2) of)."""

    constraints: list[C]
    ignored: set[str]
    counts: list[dict[str, int]]
    weights: list[int]

    def check(self, ss: ScoreState, snap: Snapshot) -> None:
        assert len(ss.constraints) == len(self.constraints)
        for want, got in zip(self.constraints, ss.constraints, strict=True):
            want.check(got)
        ignored = ss.ignored[: snap.n] if ss.ignored is not None else np.zeros(0, dtype=bool)
        assert {snap.names[r] for r in np.flatnonzero(ignored)} == self.ignored
        got = []
        for i, c in enumerate(ss.constraints):
            counts, present = ss.counts[i], ss.present[i]
            got.append({} if counts is None or present is None
                       else domain_counts(snap, c.topology_key, counts, present))
        assert got == self.counts
        assert ss.weights == [math.log(n + 2) for n in self.weights]


def pre_filter_state(plugin: PodTopologySpread, pod: make_pod, snap: Snapshot) -> Any:
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(pod.obj()), snap)
    return status, state.read(FILTER_KEY)


def pre_score_state(
    plugin: PodTopologySpread, pod: make_pod, snap: Snapshot, idx: np.ndarray
) -> Any:
    state = CycleState()
    status = plugin.pre_score(state, PodInfo(pod.obj()), snap, idx)
    return status, state.read(SCORE_KEY)


class Row:
    """One ported kube row: its name (the test id) and its fields (absent ones read None)."""

    def __init__(self, name: str, **fields: Any) -> None:
        self.name = name
        self.__dict__.update(fields)

    def __getattr__(self, key: str) -> Any:
        return None

    def __repr__(self) -> str:
        return f"Row({self.name!r})"


def ids(rows: list[Row]) -> list[str]:
    return [r.name for r in rows]
