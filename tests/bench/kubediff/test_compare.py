"""The `0/N nodes are available: ...` parser and the comparison of two outcomes (no server).

The kube-scheduler messages are verbatim from kube-scheduler 1.36 runs of kubediff."""

import pytest

from phalanx.bench.kubediff.compare import (
    INFEASIBLE_NODE,
    PREEMPTION,
    REASONS,
    SCHEDULABILITY,
    TOTAL,
    UNPARSABLE,
    MessageError,
    Outcome,
    compare,
    parse_message,
)

KUBE_TAINTS = (
    "0/8 nodes are available: 1 Insufficient memory, 1 node(s) didn't match pod affinity rules, "
    "2 node(s) were unschedulable, 4 node(s) had untolerated taint(s). no new claims to "
    "deallocate, preemption: 0/8 nodes are available: 1 No preemption victims found for "
    "incoming pod, 7 Preemption is not helpful for scheduling.")
KUBE_PREFILTER_RESULT = (
    "0/4 nodes are available: 1 Insufficient example.com/gpu, 3 node(s) didn't satisfy "
    "plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/4 nodes are "
    "available: 4 Preemption is not helpful for scheduling.")
KUBE_PREFILTER_REJECT = (
    "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: "
    "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
PHALANX = (
    "0/8 nodes are available: 4 node(s) had untolerated taint(s), 2 node(s) were "
    "unschedulable, 1 Insufficient memory, 1 node(s) didn't match pod affinity rules. "
    "preemption: no lower-priority pods to preempt for ns/p")


def test_kube_message_with_dra_and_preemption_tails():
    p = parse_message(KUBE_TAINTS)
    assert p.total == 8
    assert p.reasons == {"Insufficient memory": 1, "node(s) didn't match pod affinity rules": 1,
                         "node(s) were unschedulable": 2, "node(s) had untolerated taint(s)": 4}
    assert p.prefilter == ""
    assert p.postfilter.startswith("no new claims to deallocate, preemption: 0/8")
    assert p.preemption_parsed is not None
    assert p.preemption_parsed.reasons == {"No preemption victims found for incoming pod": 1,
                                           "Preemption is not helpful for scheduling": 7}


def test_reason_with_brackets_and_spaces_is_one_reason():
    p = parse_message(KUBE_PREFILTER_RESULT)
    assert p.reasons == {"Insufficient example.com/gpu": 1,
                         "node(s) didn't satisfy plugin(s) [NodeAffinity]": 3}


def test_prefilter_rejection_has_no_counts():
    p = parse_message(KUBE_PREFILTER_REJECT)
    assert (p.total, p.reasons) == (3, {})
    assert p.prefilter == "pod has unbound immediate PersistentVolumeClaims"
    assert p.preemption_parsed is not None and p.preemption_parsed.total == 3


def test_phalanx_message_with_free_text_preemption():
    p = parse_message(PHALANX)
    assert p.total == 8 and sum(p.reasons.values()) == 8
    assert p.preemption == "no lower-priority pods to preempt for ns/p"
    assert p.preemption_parsed is None


@pytest.mark.parametrize("message, total", [
    ("0/0 nodes are available:", 0),
    ("0/0 nodes are available.", 0),
    ("0/3 nodes are available: 3 Insufficient cpu.", 3),
])
def test_heads_without_tails(message, total):
    assert parse_message(message).total == total


@pytest.mark.parametrize("message", [
    "", "Reserve: rejected", "preemption: 0/3 nodes are available: 3 x.",
    "1/3 nodes are available: 3 x."])
def test_not_a_fit_error(message):
    with pytest.raises(MessageError, match="0/N nodes are available"):
        parse_message(message)


def _no(msg):
    return Outcome("s", False, message=msg, reason="Unschedulable")


def test_same_counts_in_another_order_agree_and_preemption_wording_is_only_recorded():
    diffs = compare(_no(KUBE_TAINTS), _no(PHALANX))
    assert [(d.kind, d.blocking) for d in diffs] == [(PREEMPTION, False)]


def test_count_and_wording_differences_are_blocking():
    phalanx = PHALANX.replace("4 node(s) had untolerated taint(s)",
                              "3 node(s) had untolerated taint {a: b}, 1 Insufficient cpu")
    (d, _) = compare(_no(KUBE_TAINTS), _no(phalanx))
    assert d.kind == REASONS and d.blocking
    assert "only kube: 4 node(s) had untolerated taint(s)" in d.detail
    assert "only phalanx: 1 Insufficient cpu; 3 node(s) had untolerated taint {a: b}" in d.detail


def test_total_and_schedulability():
    kinds = [d.kind for d in compare(_no("0/3 nodes are available: 3 x."),
                                     _no("0/4 nodes are available: 4 x."))]
    assert kinds == [TOTAL, REASONS]
    (d,) = compare(Outcome("k", True, node="n1"), _no("0/3 nodes are available: 3 x."))
    assert d.kind == SCHEDULABILITY and "only kube-scheduler bound the pod" in d.detail


def test_infeasible_node_and_unparsable():
    (d,) = compare(Outcome("k", True), Outcome("p", True, node="n2"),
                   node_check="infeasible: 0/3 nodes are available: ...")
    assert d.kind == INFEASIBLE_NODE and "n2" in d.detail
    (d,) = compare(_no("Permit: rejected"), _no("0/3 nodes are available: 3 x."))
    assert d.kind == UNPARSABLE
