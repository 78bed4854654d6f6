"""Builders for the InterPodAffinity tables ported from kube-scheduler 1.36: a pod builder
shaped like kube's `st.MakePod()`, nodes, namespaces, and runners that drive the plugin on a
Snapshot as kube's tests drive theirs (PreFilter then Filter per node; PreScore, Score,
NormalizeScore)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from phalanx.api.core import Namespace, Node, Pod
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING_ANTI,
    InterPodAffinity,
)
from phalanx.scheduler.snapshot import Snapshot

REQUIRED, PREFERRED = "required", "preferred"

# kube's per-node Filter statuses.
AFFINITY_NOT_MATCH = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI_NOT_MATCH = (Code.UNSCHEDULABLE, REASON_ANTI)
EXISTING_ANTI_NOT_MATCH = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI)

# The namespaces kube's scoring_test.go registers (and filtering's single-node table uses).
NS_T1 = {"team": "team1"}
NS_T2 = {"team": "team2"}
TEAM_NAMESPACES = {
    "subteam1.team1": NS_T1,
    "subteam2.team1": NS_T1,
    "subteam1.team2": NS_T2,
    "subteam2.team2": NS_T2,
}


def sel_in(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def sel_not_in(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "NotIn", "values": list(values)}]}


def sel_exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def expr(key: str, op: str, values: Sequence[str] = ()) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(
    topology_key: str,
    selector: Mapping[str, Any] | None,
    *,
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": topology_key}
    if selector is not None:
        t["labelSelector"] = dict(selector)
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = dict(namespace_selector)
    return t


def weighted(weight: int, t: Mapping[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": dict(t)}


def affinity(
    *,
    required: Sequence[Mapping[str, Any]] = (),
    preferred: Sequence[Mapping[str, Any]] = (),
    anti_required: Sequence[Mapping[str, Any]] = (),
    anti_preferred: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A v1.Affinity (camelCase) with pod (anti-)affinity terms; weighted items for the
    preferred lists."""
    out: dict[str, Any] = {}
    pa: dict[str, Any] = {}
    paa: dict[str, Any] = {}
    if required:
        pa["requiredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in required]
    if preferred:
        pa["preferredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in preferred]
    if anti_required:
        paa["requiredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in anti_required]
    if anti_preferred:
        paa["preferredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in anti_preferred]
    if pa:
        out["podAffinity"] = pa
    if paa:
        out["podAntiAffinity"] = paa
    return out


class MakePod:
    """kube's st.MakePod(), for the fields these tables use."""

    def __init__(self) -> None:
        self.d: dict[str, Any] = {
            "metadata": {"name": "", "namespace": ""},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }

    def name(self, n: str) -> MakePod:
        self.d["metadata"]["name"] = n
        return self

    def uid(self, u: str) -> MakePod:
        self.d["metadata"]["uid"] = u
        return self

    def namespace(self, ns: str) -> MakePod:
        self.d["metadata"]["namespace"] = ns
        return self

    def label(self, k: str, v: str) -> MakePod:
        self.d["metadata"].setdefault("labels", {})[k] = v
        return self

    def labels(self, labels: Mapping[str, str]) -> MakePod:
        self.d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def node(self, n: str) -> MakePod:
        self.d["spec"]["nodeName"] = n
        return self

    def nominated(self, n: str) -> MakePod:
        self.d["status"] = {"nominatedNodeName": n}
        return self

    def affinity(self, aff: Mapping[str, Any]) -> MakePod:
        self.d["spec"]["affinity"] = copy.deepcopy(dict(aff))
        return self

    def _add(self, anti: bool, topology_key: str, sel: Mapping[str, Any], kind: str) -> MakePod:
        aff = self.d["spec"].setdefault("affinity", {})
        group = aff.setdefault("podAntiAffinity" if anti else "podAffinity", {})
        t = term(topology_key, sel)
        if kind == REQUIRED:
            group.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(t)
        else:
            group.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                weighted(1, t)
            )
        return self

    def pod_affinity(self, tk: str, sel: Mapping[str, Any], kind: str = REQUIRED) -> MakePod:
        return self._add(False, tk, sel, kind)

    def pod_anti_affinity(self, tk: str, sel: Mapping[str, Any], kind: str = REQUIRED) -> MakePod:
        return self._add(True, tk, sel, kind)

    def pod_affinity_in(self, key: str, tk: str, vals: Sequence[str]) -> MakePod:
        return self._add(False, tk, sel_in(key, vals), REQUIRED)

    def pod_affinity_not_in(self, key: str, tk: str, vals: Sequence[str]) -> MakePod:
        return self._add(False, tk, sel_not_in(key, vals), REQUIRED)

    def pod_affinity_exists(self, key: str, tk: str) -> MakePod:
        return self._add(False, tk, sel_exists(key), REQUIRED)

    def pod_anti_affinity_in(self, key: str, tk: str, vals: Sequence[str]) -> MakePod:
        return self._add(True, tk, sel_in(key, vals), REQUIRED)

    def pod_anti_affinity_not_in(self, key: str, tk: str, vals: Sequence[str]) -> MakePod:
        return self._add(True, tk, sel_not_in(key, vals), REQUIRED)

    def pod_anti_affinity_exists(self, key: str, tk: str) -> MakePod:
        return self._add(True, tk, sel_exists(key), REQUIRED)

    def obj(self) -> Pod:
        return Pod.model_validate(copy.deepcopy(self.d))


def make_node(name: str, labels: Mapping[str, str] | None = None) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": dict(labels or {})}})


class _Store:
    def __init__(self, objs: dict[str, Namespace]) -> None:
        self._objs = objs

    def get(self, name: str) -> Namespace | None:
        return self._objs.get(name)


class Informers:
    """The scheduler's informer factory, reduced to the Namespace lister the plugin reads."""

    def __init__(self, namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self._ns = _Store(
            {
                n: Namespace.model_validate({"metadata": {"name": n, "labels": dict(lbl)}})
                for n, lbl in namespaces.items()
            }
        )

    def informer(self, cls: type) -> _Store:
        assert cls is Namespace
        return self._ns


class Handle:
    def __init__(self, namespaces: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.informers = Informers(namespaces or {})


def plugin(
    namespaces: Mapping[str, Mapping[str, str]] | None = None, **args: Any
) -> InterPodAffinity:
    return InterPodAffinity(Handle(namespaces), args)


def named(pods: Iterable[Pod], prefix: str = "existing") -> list[Pod]:
    """kube's snapshots hold nameless pods side by side; ours key pods by namespace/name, so
    nameless pods get distinct names (their names matter to no row)."""
    out = []
    for i, p in enumerate(pods):
        if not p.metadata.name:
            p = p.model_copy(deep=True)
            p.metadata.name = f"{prefix}-{i}"
        out.append(p)
    return out


def snapshot(pods: Iterable[Pod], nodes: Iterable[Node]) -> Snapshot:
    """kube's cache.NewSnapshot: pods on nodes that are not listed are not counted."""
    s = Snapshot()
    for n in nodes:
        s.set_node(n)
    for p in named(pods):
        s.add_pod(PodInfo(p), p.spec.node_name or "")
    return s


def incoming(p: Pod) -> PodInfo:
    if not p.metadata.name:
        p = p.model_copy(deep=True)
        p.metadata.name = "incoming"
    return PodInfo(p)


NodeStatus = tuple[Code, str] | None


def run_filter(
    pl: InterPodAffinity, pod: Pod, snap: Snapshot
) -> tuple[Status, dict[str, NodeStatus]]:
    """PreFilter, then Filter over every node: node name -> None (fits) or (code, reason).
    Every rejected node must carry exactly one reason, as kube's per-node Status does."""
    info = incoming(pod)
    state = CycleState()
    _, st = pl.pre_filter(state, info, snap)
    if not st.is_success:
        return st, {}
    rows = snap.valid_rows()
    res = pl.filter(state, info, snap, rows)
    out: dict[str, NodeStatus] = {}
    for i, row in enumerate(rows.tolist()):
        name = snap.names[row]
        if res.feasible[i]:
            assert not any(r.mask[i] for r in res.rejections), name
            out[name] = None
            continue
        hits = [r for r in res.rejections if r.mask[i]]
        assert len(hits) == 1, f"{name}: {[r.reason for r in hits]}"
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if hits[0].unresolvable else Code.UNSCHEDULABLE
        out[name] = (code, hits[0].reason)
    return st, out


def run_score(
    pl: InterPodAffinity, pod: Pod, snap: Snapshot
) -> tuple[Status, list[tuple[str, int]] | None]:
    """PreScore, Score and NormalizeScore over every node, in node order."""
    info = incoming(pod)
    state = CycleState()
    rows = snap.valid_rows()
    st = pl.pre_score(state, info, snap, rows)
    if not st.is_success:
        return st, None
    raw = pl.score(state, info, snap, rows)
    norm = np.asarray(pl.normalize_score(state, info, raw)).tolist()
    assert all(float(v).is_integer() for v in norm), norm  # kube's scores are int64
    return st, [(snap.names[r], int(v)) for r, v in zip(rows.tolist(), norm, strict=True)]
