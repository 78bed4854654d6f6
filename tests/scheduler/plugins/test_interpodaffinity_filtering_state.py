"""kube-scheduler 1.36's interpodaffinity/filtering_test.go, the PreFilter state tables, row
by row (ids = kube's names).

TestGetTPMapMatchingIncomingAffinityAntiAffinity: the affinity / anti-affinity counts per
topology pair, compared as kube compares them.
TestPreFilterStateAddRemovePod: kube adds and removes a pod through PreFilterExtensions; we
have none (our cycles read the live snapshot), so the row adds the pod to the snapshot and
removes it again: the counts after the add must be kube's expected ones and equal to those of
a snapshot built with every pod; after the remove, equal to the original ones.

Deliberate difference: TestPreFilterDisabled expects Filter to fail with an Error when
PreFilter did not run. Ours computes the counts from the snapshot instead (preemption's
what-ifs call Filter with a fresh CycleState after removing victims); the port checks that.

Not ported: TestPreFilterStateClone. Our state is never changed after PreFilter (there are no
AddPod/RemovePod extensions), so nothing clones it.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.interpodaffinity import FilterState

from .interpodaffinity_kit import ANTI_NOT_MATCH as ANTI
from .interpodaffinity_kit import (
    MakePod,
    expr,
    incoming,
    make_node,
    plugin,
    run_filter,
    sel_in,
    snapshot,
    term,
)


def _nodes(*specs: tuple[str, dict[str, str]]) -> list[Any]:
    return [make_node(n, lbl) for n, lbl in specs]


def _rzh(name: str, zone: str) -> tuple[str, dict[str, str]]:
    return name, {"region": "r1", "zone": zone, "hostname": name}


def test_pre_filter_disabled() -> None:
    """kube: Filter without PreFilter is an Error. Ours (deliberately): Filter computes the
    counts from the snapshot, as preemption's what-ifs need, and answers as with PreFilter."""
    nodes = _nodes(_rzh("nodeA", "z1"), _rzh("nodeB", "z2"))
    snap = snapshot([MakePod().node("nodeA").labels({"foo": ""}).obj()], nodes)
    pod = MakePod().pod_anti_affinity_exists("foo", "zone").obj()
    pl = plugin()
    rows = snap.valid_rows()
    without = pl.filter(CycleState(), incoming(pod), snap, rows)
    assert without.feasible.tolist() == [False, True]
    assert [r.reason for r in without.rejections] == [ANTI[1]]
    assert run_filter(pl, pod, snap)[1] == {"nodeA": ANTI, "nodeB": None}
    # Nothing to check (no terms, no existing anti-affinity): every node passes.
    plain = pl.filter(CycleState(), incoming(MakePod().obj()), snap, rows)
    assert plain.feasible.all()


# --- the counts -----------------------------------------------------------------------------


def _named(counts: dict[tuple[str, int], int], snap: Any) -> dict[tuple[str, str], int]:
    """Counts keyed by (key, label value) as kube's topologyToMatchedTermCount."""
    out = {}
    for (key, vid), n in counts.items():
        value = {v: k for k, v in snap.label_values(key).items()}[vid]
        out[(key, value)] = n
    return out


def _state(pod: Any, snap: Any) -> FilterState:
    fs = plugin().filter_state(incoming(pod), snap)
    return fs if fs is not None else FilterState()


def _counts(fs: FilterState, snap: Any) -> tuple[dict, dict, dict]:
    return (
        _named(fs.existing_anti_affinity_counts, snap),
        _named(fs.affinity_counts, snap),
        _named(fs.anti_affinity_counts, snap),
    )


def _normal(*labels: str) -> Any:
    p = MakePod().name("normal").node("nodeA")
    for lbl in labels:
        p.label(lbl, "")
    return p.obj()


TP_MAP: list[tuple[str, list, Any, dict, dict]] = [
    ("nil test", [], MakePod().name("aaa-normal").obj(), {}, {}),
    (
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")], MakePod().name("aaa-normal").obj(), {}, {},
    ),
    (
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        MakePod().name("aaa-anti").pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname").obj(),
        {}, {},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        MakePod().name("affi-antiaffi").pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname").obj(),
        {("hostname", "nodeA"): 1}, {("hostname", "nodeA"): 1},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        MakePod().name("affi-antiaffi").pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname").pod_anti_affinity_exists("aaa", "hostname").obj(),
        {("hostname", "nodeA"): 2}, {("hostname", "nodeA"): 1},  # 2: one for each term
    ),
    (
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        MakePod().name("affi-antiaffi").pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname").pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname").obj(),
        {}, {("hostname", "nodeA"): 1},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial "
        "term - case 1",
        [_normal("aaa", "bbb")],
        MakePod().name("anaffi-antiaffiti").pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("ccc", "hostname").pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("ccc", "hostname").obj(),
        {}, {("hostname", "nodeA"): 1},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial "
        "term - case 2",
        [_normal("bbb")],
        MakePod().name("affi-antiaffi").pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname").pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname").obj(),
        {}, {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize(("pods", "pod", "want_affinity", "want_anti"), [r[1:] for r in TP_MAP],
                         ids=[r[0] for r in TP_MAP])
def test_get_tp_map_matching_incoming_affinity_anti_affinity(
    pods: list, pod: Any, want_affinity: dict, want_anti: dict
) -> None:
    snap = snapshot(pods, [make_node("nodeA", {"hostname": "nodeA"})])
    _, affinity_counts, anti_counts = _counts(_state(pod, snap), snap)
    assert affinity_counts == want_affinity
    assert anti_counts == want_anti


def _term_in(key: str, values: list[str], tk: str) -> dict[str, Any]:
    return term(tk, sel_in(key, values))


ANTI_FOO_BAR = {"requiredDuringSchedulingIgnoredDuringExecution": [
    _term_in("foo", ["bar"], "region")]}
_COMPLEX = [
    _term_in("foo", ["bar", "buzz"], "region"),
    term("zone", {"matchExpressions": [expr("service", "NotIn", ["bar", "security", "test"])]}),
]
ANTI_COMPLEX = {"requiredDuringSchedulingIgnoredDuringExecution": _COMPLEX}
AFFINITY_COMPLEX = {"requiredDuringSchedulingIgnoredDuringExecution": _COMPLEX}
SELECTOR1 = {"foo": "bar"}
ADD_REMOVE_NODES = _nodes(("nodeA", {"region": "r1", "zone": "z11"}),
                          ("nodeB", {"region": "r1", "zone": "z12"}),
                          ("nodeC", {"region": "r2", "zone": "z21"}))

ADD_REMOVE: list[tuple[str, Any, list, Any, dict, dict]] = [
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        MakePod().name("pending").labels(SELECTOR1)
        .affinity({"podAntiAffinity": ANTI_FOO_BAR}).obj(),
        [MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
         MakePod().name("p2").node("nodeC").affinity({"podAntiAffinity": ANTI_FOO_BAR}).obj()],
        MakePod().name("addedPod").labels(SELECTOR1).node("nodeB")
        .affinity({"podAntiAffinity": ANTI_FOO_BAR}).obj(),
        {("region", "r1"): 2}, {},
    ),
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        MakePod().name("pending").labels(SELECTOR1)
        .affinity({"podAntiAffinity": ANTI_COMPLEX}).obj(),
        [MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
         MakePod().name("p2").node("nodeC").affinity({"podAntiAffinity": ANTI_FOO_BAR}).obj()],
        MakePod().name("addedPod").labels(SELECTOR1).node("nodeA")
        .affinity({"podAntiAffinity": ANTI_COMPLEX}).obj(),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {},
    ),
    (
        "preFilterState matching pod affinity and anti-affinity are updated correctly after "
        "adding and removing a pod",
        MakePod().name("pending").labels(SELECTOR1)
        .affinity({"podAffinity": AFFINITY_COMPLEX}).obj(),
        [MakePod().name("p1").labels(SELECTOR1).node("nodeA").obj(),
         MakePod().name("p2").node("nodeC").affinity(
             {"podAntiAffinity": ANTI_FOO_BAR, "podAffinity": AFFINITY_COMPLEX}).obj()],
        MakePod().name("addedPod").labels(SELECTOR1).node("nodeA")
        .affinity({"podAntiAffinity": ANTI_COMPLEX}).obj(),
        {}, {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


@pytest.mark.parametrize(("pending", "existing", "added", "want_anti", "want_affinity"),
                         [r[1:] for r in ADD_REMOVE], ids=[r[0] for r in ADD_REMOVE])
def test_pre_filter_state_add_remove_pod(
    pending: Any, existing: list, added: Any, want_anti: dict, want_affinity: dict
) -> None:
    all_pods = snapshot([*existing, added], ADD_REMOVE_NODES)
    want_all = _counts(_state(pending, all_pods), all_pods)

    snap = snapshot(existing, ADD_REMOVE_NODES)
    original = _counts(_state(pending, snap), snap)  # builds the label index
    snap.add_pod(PodInfo(added), added.spec.node_name)
    after_add = _counts(_state(pending, snap), snap)
    assert after_add[2] == want_anti
    assert after_add[1] == want_affinity
    assert after_add == want_all
    snap.remove_pod(PodInfo(added).key)
    assert _counts(_state(pending, snap), snap) == original
