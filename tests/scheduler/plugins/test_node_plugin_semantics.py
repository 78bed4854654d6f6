"""kube-scheduler semantics of the node plugins that kube's own test rows leave unpinned
(each found by changing the code and seeing the ported rows still pass)."""

from __future__ import annotations

from phalanx.api.core import Affinity, Toleration
from phalanx.scheduler.framework import PodInfo
from phalanx.scheduler.framework.config import (
    DEFAULT_PLUGINS,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
)
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.plugins.nodeaffinity import REASON, NodeAffinity
from phalanx.scheduler.plugins.noderesources import NodeResourcesFit
from phalanx.scheduler.plugins.tainttoleration import toleration_tolerates
from phalanx.scheduler.resources import pod_requests

from .kube.nodeplugin_harness import filter_status, handle, node, pod, snapshot


def test_toleration_without_key_and_equal_operator_matches_any_key_with_that_value():
    # core/v1 ToleratesTaint compares keys only when the toleration names one.
    t = Toleration(operator="Equal", value="v")
    assert toleration_tolerates(t, ("any", "v", "NoSchedule"))
    assert not toleration_tolerates(t, ("any", "w", "NoSchedule"))
    assert toleration_tolerates(Toleration(), ("any", "", "NoExecute"))


def _affinity(term: dict) -> Affinity:
    return Affinity.model_validate(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    )


def test_match_fields_are_not_checked_on_a_node_without_a_name():
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}
    p = pod(affinity=_affinity(term))
    snap = snapshot([node(""), node("node2")])
    pl = NodeAffinity(handle())
    assert filter_status(pl, p, snap, "") is None
    assert filter_status(pl, p, snap, "node2") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])


def test_gt_parses_labels_as_go_does():
    term = {"matchExpressions": [{"key": "v", "operator": "Gt", "values": ["5"]}]}
    p = pod(affinity=_affinity(term))
    snap = snapshot([node("plus", labels={"v": "+6"}), node("underscore", labels={"v": "1_0"})])
    pl = NodeAffinity(handle())
    assert filter_status(pl, p, snap, "plus") is None
    assert filter_status(pl, p, snap, "underscore") is not None  # ParseInt refuses "1_0"


def test_a_request_equal_to_the_node_size_leaves_preemption_a_chance():
    # Unresolvable only when the request exceeds the whole node.
    snap = snapshot(
        [node("n", capacity={"cpu": "2"})], [pod("x", containers=[{"cpu": "1"}], node_name="n")]
    )
    got = filter_status(NodeResourcesFit(handle()), pod(containers=[{"cpu": "2"}]), snap, "n")
    assert got == (Code.UNSCHEDULABLE, ["Insufficient cpu"])


def test_requests_round_up_and_skip_what_kube_does_not_count():
    p = pod(containers=[{"cpu": "0.0001", "memory": "1.5", "storage": "1Gi", "pods": "3"}])
    assert pod_requests(p) == {"cpu": 1.0, "memory": 2.0}


def test_container_layout_is_part_of_the_signature():
    # Equal requests, different per-container defaults: node-local scores must not be shared.
    one, two = PodInfo(pod(containers=[None])), PodInfo(pod(containers=[None, None]))
    assert one.requests == two.requests and one.signature != two.signature
    assert two.score_requests["cpu"] == 2 * one.score_requests["cpu"]


def test_default_profile_has_kube_balanced_allocation_next_to_fit():
    names = [n for n, _ in DEFAULT_PLUGINS]
    assert dict(DEFAULT_PLUGINS)[NODE_RESOURCES_BALANCED_ALLOCATION] == 1
    assert names.index(NODE_RESOURCES_BALANCED_ALLOCATION) == names.index(NODE_RESOURCES_FIT) + 1
