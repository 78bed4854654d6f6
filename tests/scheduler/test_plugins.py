"""The built-in plugins against a Snapshot, vectorised over every node."""

from __future__ import annotations

import numpy as np

from phalanx.api.core import (
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Toleration,
)
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.plugins.nodeaffinity import NodeAffinity as NodeAffinityPlugin
from phalanx.scheduler.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from phalanx.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.tainttoleration import TaintToleration, tolerates
from phalanx.scheduler.snapshot import Snapshot

from .helpers import node, pod


def snap_of(*nodes) -> Snapshot:
    s = Snapshot()
    for n in nodes:
        s.set_node(n)
    return s


def names(s: Snapshot, rows: np.ndarray, ok: np.ndarray) -> list[str]:
    return [s.names[r] for r in rows[ok]]


def run_filter(plugin, p, s: Snapshot):
    rows = s.valid_rows()
    res = plugin.filter(CycleState(), PodInfo(p), s, rows)
    return names(s, rows, res.feasible), res


HANDLE = Scheduler(MemoryCluster()).handles["phalanx-scheduler"]


def test_resources_fit_checks_every_requested_resource():
    s = snap_of(node("small", cpu=2), node("big", cpu=16), node("gpu", cpu=16, gpu=8), node("full", cpu=16, pods=1))
    s.add_pod(PodInfo(pod("existing", cpu="100m")), "full")
    plugin = NodeResourcesFit(HANDLE)
    ok, res = run_filter(plugin, pod("p", cpu="4", gpu=2), s)
    assert ok == ["gpu"]
    reasons = {r.reason: int(r.mask.sum()) for r in res.rejections}
    assert reasons == {"Insufficient cpu": 1, "Insufficient nvidia.com/gpu": 3, "Too many pods": 1}
    ok, _ = run_filter(plugin, pod("q", cpu="4"), s)
    assert ok == ["big", "gpu"]


def test_resources_fit_counts_assumed_pods_and_exact_millicores():
    s = snap_of(node("n", cpu="1"))
    plugin = NodeResourcesFit(HANDLE)
    for i in range(10):
        assert run_filter(plugin, pod(f"p{i}", cpu="100m", memory=None), s)[0] == ["n"]
        s.add_pod(PodInfo(pod(f"p{i}", cpu="100m", memory=None)), "n")
    assert run_filter(plugin, pod("one-more", cpu="100m", memory=None), s)[0] == []
    s.remove_pod("default/p3")
    assert run_filter(plugin, pod("one-more", cpu="100m", memory=None), s)[0] == ["n"]


def test_extended_resource_no_node_has_is_insufficient():
    s = snap_of(node("a"), node("b"))
    ok, res = run_filter(NodeResourcesFit(HANDLE), pod("p", extra={"example.com/fpga": "1"}), s)
    assert ok == [] and res.rejections[0].reason == "Insufficient example.com/fpga"


def test_least_and_most_allocated_scores():
    s = snap_of(node("empty", cpu=8, memory="8Gi"), node("half", cpu=8, memory="8Gi"))
    s.add_pod(PodInfo(pod("x", cpu="4", memory="4Gi")), "half")
    p = PodInfo(pod("p", cpu="2", memory="2Gi"))
    rows = s.valid_rows()
    least_args = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type": "LeastAllocated"}})
    least = NodeResourcesFit(HANDLE, least_args).score(CycleState(), p, s, rows)
    np.testing.assert_allclose(least, [75.0, 25.0])
    most = NodeResourcesFit(HANDLE, NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type": "MostAllocated"}}))
    np.testing.assert_allclose(most.score(CycleState(), p, s, rows), [25.0, 75.0])
    # The default packs (MostAllocated; GPUs weigh 10, absent here, so cpu and memory decide).
    np.testing.assert_allclose(NodeResourcesFit(HANDLE).score(CycleState(), p, s, rows), [25.0, 75.0])
    gpu_pack = NodeResourcesFit(
        HANDLE,
        NodeResourcesFitArgs.model_validate(
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "nvidia.com/gpu", "weight": 1}]}}
        ),
    )
    s2 = snap_of(node("g1", gpu=8), node("g2", gpu=8), node("cpu"))
    s2.add_pod(PodInfo(pod("y", gpu=4)), "g2")
    sc = gpu_pack.score(CycleState(), PodInfo(pod("q", gpu=2)), s2, s2.valid_rows())
    np.testing.assert_allclose(sc, [25.0, 75.0, 0.0])
    # Default: the half-full GPU node wins for a GPU pod; GPUs outweigh cpu and memory.
    sc = NodeResourcesFit(HANDLE).score(CycleState(), PodInfo(pod("q", gpu=2)), s2, s2.valid_rows())
    assert sc[1] > sc[0] and sc[1] > 60


def test_taints_filter_and_prefer_no_schedule_scores():
    s = snap_of(
        node("plain"),
        node("gpu", taints=[("nvidia.com/gpu", "present", "NoSchedule")]),
        node("soft", taints=[("spot", "", "PreferNoSchedule")]),
        node("evict", taints=[("broken", "", "NoExecute")]),
    )
    plugin = TaintToleration(HANDLE)
    ok, res = run_filter(plugin, pod("p"), s)
    assert ok == ["plain", "soft"]
    assert sorted(r.reason for r in res.rejections) == ["node(s) had untolerated taint(s)"]  # kube 1.36
    assert all(r.unresolvable for r in res.rejections)
    tol = [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
    assert run_filter(plugin, pod("g", tolerations=tol), s)[0] == ["plain", "gpu", "soft"]
    everything = [Toleration(operator="Exists")]
    assert run_filter(plugin, pod("all", tolerations=everything), s)[0] == ["plain", "gpu", "soft", "evict"]
    rows = s.valid_rows()
    pi = PodInfo(pod("p"))
    raw = plugin.score(CycleState(), pi, s, rows)
    np.testing.assert_allclose(plugin.normalize_score(CycleState(), pi, raw), [100, 100, 0, 100])


def test_toleration_matching_rules():
    assert tolerates([Toleration(key="k", value="v", effect="NoSchedule")], ("k", "v", "NoSchedule"))
    assert not tolerates([Toleration(key="k", value="v", effect="NoSchedule")], ("k", "w", "NoSchedule"))
    assert not tolerates([Toleration(key="k", value="v", effect="NoExecute")], ("k", "v", "NoSchedule"))
    assert tolerates([Toleration(key="k", operator="Exists")], ("k", "anything", "NoExecute"))
    assert not tolerates([Toleration(operator="Exists", key="other")], ("k", "", "NoSchedule"))
    assert not tolerates(None, ("k", "", "NoSchedule"))


def test_node_selector_and_required_affinity():
    s = snap_of(
        node("a1", labels={"zone": "a", "gpu": "h100", "rank": "3"}),
        node("a2", labels={"zone": "a", "rank": "10"}),
        node("b1", labels={"zone": "b", "gpu": "a100"}),
    )
    plugin = NodeAffinityPlugin(HANDLE)
    assert run_filter(plugin, pod("p", node_selector={"zone": "a"}), s)[0] == ["a1", "a2"]
    assert run_filter(plugin, pod("p", node_selector={"zone": "c"}), s)[0] == []

    def aff(*terms):
        return Affinity(
            node_affinity=NodeAffinity(
                required_during_scheduling_ignored_during_execution=NodeSelector(node_selector_terms=list(terms))
            )
        )

    def term(*reqs, fields=None):
        return NodeSelectorTerm(match_expressions=list(reqs) or None, match_fields=fields)

    def req(key, op, *values):
        return NodeSelectorRequirement(key=key, operator=op, values=list(values) or None)

    cases = {
        "in": (aff(term(req("gpu", "In", "h100", "a100"))), ["a1", "b1"]),
        "notin-matches-absent": (aff(term(req("gpu", "NotIn", "h100"))), ["a2", "b1"]),
        "exists": (aff(term(req("gpu", "Exists"))), ["a1", "b1"]),
        "doesnotexist": (aff(term(req("gpu", "DoesNotExist"))), ["a2"]),
        "gt": (aff(term(req("rank", "Gt", "5"))), ["a2"]),
        "lt": (aff(term(req("rank", "Lt", "5"))), ["a1"]),
        "terms-are-ored": (aff(term(req("zone", "In", "b")), term(req("rank", "Gt", "5"))), ["a2", "b1"]),
        "exprs-are-anded": (aff(term(req("zone", "In", "a"), req("gpu", "Exists"))), ["a1"]),
        "match-fields": (aff(term(fields=[req("metadata.name", "In", "b1")])), ["b1"]),
        "empty-term-matches-nothing": (aff(NodeSelectorTerm()), []),
    }
    for name, (affinity, expected) in cases.items():
        ok, res = run_filter(plugin, pod("p", affinity=affinity), s)
        assert ok == expected, name
        if len(expected) < 3:
            assert res.default_reason == "node(s) didn't match Pod's node affinity/selector" and res.unresolvable


def test_preferred_affinity_scores_normalised():
    s = snap_of(node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}), node("c"))
    affinity = Affinity(
        node_affinity=NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                PreferredSchedulingTerm(
                    weight=10,
                    preference=NodeSelectorTerm(match_expressions=[NodeSelectorRequirement(key="zone", operator="In", values=["a"])]),
                ),
                PreferredSchedulingTerm(
                    weight=5,
                    preference=NodeSelectorTerm(match_expressions=[NodeSelectorRequirement(key="zone", operator="Exists")]),
                ),
            ]
        )
    )
    plugin = NodeAffinityPlugin(HANDLE)
    p = PodInfo(pod("p", affinity=affinity))
    raw = plugin.score(CycleState(), p, s, s.valid_rows())
    # kube's integer division: 100 * 5 / 15 = 33
    np.testing.assert_allclose(plugin.normalize_score(CycleState(), p, raw), [100.0, 33.0, 0.0])


def test_unschedulable_nodes_only_take_pods_tolerating_it():
    s = snap_of(node("ok"), node("cordoned", unschedulable=True))
    plugin = NodeUnschedulable(HANDLE)
    ok, res = run_filter(plugin, pod("p"), s)
    assert ok == ["ok"] and res.default_reason == "node(s) were unschedulable"
    tol = [Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")]
    assert run_filter(plugin, pod("p", tolerations=tol), s)[0] == ["ok", "cordoned"]
