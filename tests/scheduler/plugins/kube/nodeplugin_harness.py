"""Builders and runners for the ports of kube-scheduler's node plugin tests.

The builders mirror kube's test wrappers (pkg/scheduler/testing): `node()` is
st.MakeNode() (32 pods of capacity unless told), `pod()` takes containers as request maps.
The runners turn our vectorised results back into what kube's tests compare: one node's
Filter status as (code, [reasons]) or None, and integer node scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, Taint, Toleration
from phalanx.api.pod import ResourceRequirements
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler, resource_scoring_rows
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.snapshot import Snapshot

Res = Mapping[str, Any]

_HANDLE: Any = None


def handle() -> Any:
    """A real plugin handle (built once; plugins under test only read it)."""
    global _HANDLE
    if _HANDLE is None:
        _HANDLE = Scheduler(MemoryCluster()).handles["phalanx-scheduler"]
    return _HANDLE


def node(
    name: str = "",
    *,
    labels: Mapping[str, str] | None = None,
    capacity: Res | None = None,
    pods: str | None = "32",
    taints: Sequence[tuple[str, str, str]] = (),
    unschedulable: bool = False,
) -> Node:
    res = {"pods": pods} if pods is not None else {}
    res.update({k: str(v) for k, v in (capacity or {}).items()})
    return Node(
        metadata=ObjectMeta(name=name, labels=dict(labels or {})),
        spec=NodeSpec(
            unschedulable=unschedulable,
            taints=[Taint(key=k, value=v or None, effect=e) for k, v, e in taints] or None,
        ),
        status=NodeStatus(allocatable=res, capacity=res),
    )


def container(
    requests: Res | None = None,
    *,
    limits: Res | None = None,
    name: str = "c",
    sidecar: bool = False,
) -> Container:
    res = None
    if requests is not None or limits is not None:
        res = ResourceRequirements(
            requests={k: str(v) for k, v in requests.items()} if requests is not None else None,
            limits={k: str(v) for k, v in limits.items()} if limits is not None else None,
        )
    return Container(
        name=name, image="pause", resources=res, restart_policy="Always" if sidecar else None
    )


def pod(
    name: str = "p",
    *,
    containers: Iterable[Container | Res | None] = (),
    init: Iterable[Container] = (),
    overhead: Res | None = None,
    pod_level: Res | None = None,
    node_name: str | None = None,
    nominated: str | None = None,
    uid: str | None = None,
    **spec: Any,
) -> Pod:
    """A pod; `containers` entries are Containers, request maps, or None (no resources).

    No containers by default, as kube's st.MakePod(): the API server refuses such a pod,
    but kube's rows use it for "requests nothing, not even the per-container defaults"."""
    cs = [
        c if isinstance(c, Container) else container(c, name=f"con{i}")
        for i, c in enumerate(containers)
    ]
    p = Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid),
        spec=PodSpec(
            containers=cs or [container(name="placeholder")],
            init_containers=list(init) or None,
            overhead={k: str(v) for k, v in overhead.items()} if overhead else None,
            resources=ResourceRequirements(requests={k: str(v) for k, v in pod_level.items()})
            if pod_level
            else None,
            node_name=node_name,
            **spec,
        ),
    )
    if not cs:
        p.spec.containers = []  # after validation (see the docstring)
    if nominated:
        p.status.nominated_node_name = nominated
    return p


def snapshot(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
    snap = Snapshot()
    for n in nodes:
        snap.set_node(n)
    for p in pods:
        assert snap.add_pod(PodInfo(p), p.spec.node_name or "")
    return snap


def filter_status(
    plugin: Any, p: Pod | PodInfo, snap: Snapshot, node_name: str, state: CycleState | None = None
) -> tuple[Code, list[str]] | None:
    """kube's Filter status for one node: None (fits) or (code, reasons in order)."""
    info = p if isinstance(p, PodInfo) else PodInfo(p)
    row = snap.index[node_name]
    res = plugin.filter(state or CycleState(), info, snap, np.asarray([row], dtype=np.int64))
    if res.feasible[0]:
        return None
    reasons: list[str] = []
    hard = False
    for r in res.rejections:
        if r.mask[0]:
            if r.reason not in reasons:
                reasons.append(r.reason)
            hard |= r.unresolvable
    if not reasons:
        reasons, hard = [res.default_reason], res.unresolvable
    return (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if hard else Code.UNSCHEDULABLE), reasons


def scores(
    plugin: Any,
    p: Pod | PodInfo,
    snap: Snapshot,
    *,
    normalize: bool = False,
    state: CycleState | None = None,
) -> list[tuple[str, int]]:
    """(node name, score) over the snapshot's nodes in insertion order, normalised if asked."""
    info = p if isinstance(p, PodInfo) else PodInfo(p)
    rows = snap.valid_rows()
    st = state or CycleState()
    raw = np.asarray(plugin.score(st, info, snap, rows), dtype=np.float64)
    # Few rows take the resource scorers' per-row path; the vectorised one must agree.
    small, resource_scoring_rows.SMALL = resource_scoring_rows.SMALL, -1
    try:
        vectorised = np.asarray(plugin.score(st, info, snap, rows), dtype=np.float64)
    finally:
        resource_scoring_rows.SMALL = small
    assert np.array_equal(raw, vectorised), (raw, vectorised)
    if normalize:
        raw = plugin.normalize_score(st, info, raw)
    assert np.all(raw == np.round(raw)), f"scores must be whole numbers, got {raw}"
    return [(snap.names[r], int(v)) for r, v in zip(rows.tolist(), raw.tolist(), strict=True)]


def toleration(
    key: str | None = None,
    value: str | None = None,
    effect: str | None = None,
    operator: str | None = None,
) -> Toleration:
    return Toleration(key=key, value=value, effect=effect, operator=operator)


def on(node_name: str, i: int, *requests: Res | None) -> Pod:
    """An existing pod bound to `node_name` (kube's st.MakePod().Node(n).Req(...)...):
    one container per request map, none when no map is given."""
    return pod(f"{node_name}-{i}", containers=requests, node_name=node_name)


def fit_plugin(strategy: Mapping[str, Any]) -> Any:
    """NodeResourcesFit with this scoringStrategy."""
    from phalanx.scheduler.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs

    return NodeResourcesFit(
        handle(), NodeResourcesFitArgs.model_validate({"scoringStrategy": dict(strategy)})
    )
