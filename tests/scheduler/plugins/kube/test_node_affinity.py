"""kube-scheduler 1.36's pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go,
ported row by row (ids are kube's row names) against our NodeAffinity plugin.

- TestNodeAffinity: PreFilter (status, and the node names it narrows to: compared as the
  snapshot rows it returns, with a node created for every name the row expects) and Filter.
- TestNodeAffinityPriority: PreScore, Score and NormalizeScore.
- Test_isSchedulableAfterNodeChange: the node-change queueing hint.

Not ported: TestNodeAffinity's `SignPod` fragment (kube's pod signatures; ours is
PodInfo.signature, covered by the framework's tests), and the hint rows' `expectedErr`
(a non-Node object: our hints return Queue, as kube's do alongside the error).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.core import Affinity
from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.plugins.nodeaffinity import (
    REASON,
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_NOT_NAMED,
    NodeAffinity,
    NodeAffinityArgs,
)

from .nodeplugin_harness import filter_status, handle, node, pod, scores, snapshot

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
REJECTED = (UNRESOLVABLE, [REASON])
SKIP = "skip"


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def term(*exprs: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    if fields:
        out["matchFields"] = list(fields)
    return out


def name_in(*values: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *values)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def affinity(node_affinity: dict[str, Any]) -> Affinity:
    return Affinity.model_validate({"nodeAffinity": node_affinity})


def args(node_affinity: dict[str, Any]) -> NodeAffinityArgs:
    return NodeAffinityArgs.model_validate({"addedAffinity": node_affinity})


def plugin(a: NodeAffinityArgs | None = None) -> NodeAffinity:
    return NodeAffinity(handle(), a)


# (id, pod kwargs, node labels, node name, want filter, want prefilter status, want
#  prefilter names, args, run prefilter)
FILTER_ROWS: list[tuple[Any, ...]] = [
    (
        "missing labels",
        dict(node_selector={"foo": "bar"}),
        {},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "same labels",
        dict(node_selector={"foo": "bar"}),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are superset",
        dict(node_selector={"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        dict(node_selector={"foo": "bar", "baz": "blah"}),
        {"foo": "bar"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        dict(affinity=affinity(required(term(expr("foo", "In", "bar", "value2"))))),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        dict(affinity=affinity(required(term(expr("kernel-version", "Gt", "0204"))))),
        {"kernel-version": "0206"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        dict(affinity=affinity(required(term(expr("mem-type", "NotIn", "DDR", "DDR2"))))),
        {"mem-type": "DDR3"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        dict(affinity=affinity(required(term(expr("GPU", "Exists"))))),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        dict(affinity=affinity(required(term(expr("foo", "In", "value1", "value2"))))),
        {"foo": "bar"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't "
        "schedule "
        "onto the node",
        dict(affinity=affinity(required({"matchExpressions": []}))),
        {"foo": "bar"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with no Affinity will schedule onto a node",
        {},
        {"foo": "bar"},
        "",
        None,
        SKIP,
        None,
        None,
        True,
    ),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        dict(affinity=affinity({})),
        {"foo": "bar"},
        "",
        None,
        SKIP,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        dict(
            affinity=affinity(
                required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        dict(
            affinity=affinity(
                required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will "
        "schedule "
        "onto the node",
        dict(
            affinity=affinity(
                required(
                    term(expr("foo", "In", "bar", "value2")),
                    term(expr("diffkey", "In", "wrong", "value2")),
                )
            )
        ),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
        "both are "
        "satisfied, will schedule onto the node",
        dict(
            node_selector={"foo": "bar"}, affinity=affinity(required(term(expr("foo", "Exists"))))
        ),
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
        "that we are "
        "deprecating) is not satisfied, won't schedule onto the node",
        dict(
            node_selector={"foo": "bar"}, affinity=affinity(required(term(expr("foo", "Exists"))))
        ),
        {"foo": "barrrrrr"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        dict(affinity=affinity(required(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))))),
        {"foo": "bar"},
        "",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        dict(affinity=affinity(required(term(fields=(name_in("node1"),))))),
        {},
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        dict(affinity=affinity(required(term(fields=(name_in("node1"),))))),
        {},
        "node2",
        REJECTED,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        dict(
            affinity=affinity(
                required(
                    term(fields=(name_in("node1"), name_in("node2"))),
                    term(expr("foo", "In", "bar")),
                )
            )
        ),
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        dict(
            affinity=affinity(required(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))))
        ),
        {"foo": "bar"},
        "node2",
        REJECTED,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        dict(
            affinity=affinity(required(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))))
        ),
        {"foo": "bar"},
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        dict(
            affinity=affinity(
                required(
                    term(fields=(name_in("node1"),)), term(expr("foo", "In", "not-match-to-bar"))
                )
            )
        ),
        {"foo": "bar"},
        "node2",
        REJECTED,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with two terms of node.Name affinity",
        dict(
            affinity=affinity(
                required(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),)))
            )
        ),
        {},
        "node2",
        None,
        None,
        {"node1", "node2"},
        None,
        True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        dict(affinity=affinity(required(term(fields=(name_in("node1"), name_in("node2")))))),
        {"foo": "bar"},
        "node2",
        REJECTED,
        (UNRESOLVABLE, REASON_CONFLICT),
        None,
        None,
        True,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        dict(affinity=affinity(required(term(expr("zone", "In", "foo"))))),
        {"zone": "foo"},
        "node2",
        None,
        None,
        None,
        args(required(term(fields=(name_in("node2"),)))),
        True,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        dict(affinity=affinity(required(term(expr("zone", "In", "bar"))))),
        {"zone": "foo"},
        "node2",
        REJECTED,
        None,
        None,
        args(required(term(fields=(name_in("node2"),)))),
        True,
    ),
    (
        "Doesn't match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        (UNRESOLVABLE, [REASON_ENFORCED]),
        None,
        None,
        args(required(term(expr("zone", "In", "bar")))),
        True,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        dict(node_selector={"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        dict(
            affinity=affinity(
                required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    "pod_kwargs,labels,node_name,want,want_pre,want_names,plugin_args,run_pre",
    [r[1:] for r in FILTER_ROWS],
    ids=[r[0] for r in FILTER_ROWS],
)
def test_node_affinity(
    pod_kwargs, labels, node_name, want, want_pre, want_names, plugin_args, run_pre
):
    others = sorted((want_names or set()) - {node_name})
    snap = snapshot([node(node_name, labels=labels)] + [node(n) for n in others])
    pl = plugin(plugin_args)
    p = PodInfo(pod(**pod_kwargs))
    state = CycleState()
    if run_pre:
        result, status = pl.pre_filter(state, p, snap)
        if want_pre is None:
            assert status.is_success, status
        elif want_pre == SKIP:
            assert status.is_skip, status
        else:
            assert (status.code, status.message) == want_pre
        if want_names is None:
            assert result is None or result.nodes is None
        else:
            assert {snap.names[r] for r in result.nodes.tolist()} == want_names
            assert result.reason == REASON_NOT_NAMED
    assert filter_status(pl, p, snap, node_name, state) == want


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "preference": t} for w, t in weighted
        ]
    }


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)
INVALID_KEY_ERROR = (
    '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of '
    "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

# (id, pod affinity, nodes [(name, labels)], expected, args, run prescore, want prescore)
PRIORITY_ROWS: list[tuple[Any, ...]] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        None,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [("node1", 0), ("node2", 0), ("node3", 0)],
        None,
        False,
        None,
    ),
    (
        "Skip is returned in PreScore when NodeAffinity is nil",
        None,
        [("node1", LABEL1)],
        None,
        None,
        True,
        (Code.SKIP, ""),
    ),
    (
        "PreScore returns error when an incoming Pod has a broken affinity",
        preferred((2, term(expr("invalid key", "In", "bar")))),
        [("node1", LABEL1)],
        None,
        None,
        True,
        (Code.ERROR, INVALID_KEY_ERROR),
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' "
        "priority is "
        "zero",
        AFFINITY1,
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [("node1", 0), ("node2", 0), ("node3", 0)],
        None,
        True,
        None,
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [("node1", 100), ("node2", 0), ("node3", 0)],
        None,
        True,
        None,
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different "
        "priorities ",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [("node1", 18), ("node5", 100), ("node2", 36)],
        None,
        True,
        None,
    ),
    (
        "added affinity",
        None,
        [("node1", LABEL1), ("node2", LABEL2)],
        [("node1", 100), ("node2", 0)],
        args(AFFINITY1),
        True,
        None,
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [("node1", 40), ("node2", 60), ("node3", 100)],
        args(preferred((3, term(expr("key", "In", "value"))))),
        True,
        None,
    ),
    (
        "calculate the priorities correctly even if PreScore is not called",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [("node1", 18), ("node5", 100), ("node2", 36)],
        None,
        False,
        None,
    ),
]


@pytest.mark.parametrize(
    "pod_affinity,nodes,expected,plugin_args,run_pre,want_pre",
    [r[1:] for r in PRIORITY_ROWS],
    ids=[r[0] for r in PRIORITY_ROWS],
)
def test_node_affinity_priority(pod_affinity, nodes, expected, plugin_args, run_pre, want_pre):
    snap = snapshot([node(n, labels=lbl) for n, lbl in nodes])
    pl = plugin(plugin_args)
    p = PodInfo(pod(affinity=affinity(pod_affinity) if pod_affinity is not None else None))
    state = CycleState()
    if run_pre:
        status = pl.pre_score(state, p, snap, snap.valid_rows())
        if want_pre is not None:
            assert (status.code, status.message) == want_pre
            return
        assert status.is_success, status
    assert scores(pl, p, snap, normalize=True, state=state) == expected


POD_WITH_AFFINITY = dict(affinity=affinity(required(term(expr("foo", "In", "bar")))))
ADDED_FOO_BAR = args(required(term(expr("foo", "In", "bar"))))

# (id, args, old node, new node, expected hint); nodes as labels, None for no node.
HINT_ROWS: list[tuple[Any, ...]] = [
    ("backoff-wrong-new-object", None, None, "not-a-node", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", None, "not-a-node", {}, QueueingHint.QUEUE),
    ("skip-queue-on-add", None, None, {}, QueueingHint.QUEUE_SKIP),
    ("queue-on-add", None, None, {"foo": "bar"}, QueueingHint.QUEUE),
    ("skip-unrelated-changes", None, {}, {}, QueueingHint.QUEUE_SKIP),
    ("skip-unrelated-changes-on-labels", None, {}, {"k": "v"}, QueueingHint.QUEUE_SKIP),
    (
        "skip-labels-changes-on-node-from-suitable-to-unsuitable",
        None,
        {"foo": "bar"},
        {"k": "v"},
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-on-labels-change-makes-pod-schedulable", None, {}, {"foo": "bar"}, QueueingHint.QUEUE),
    (
        "skip-unrelated-change-that-keeps-pod-schedulable",
        None,
        {"foo": "bar"},
        {"foo": "bar"},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-add-scheduler-enforced-node-affinity",
        ADDED_FOO_BAR,
        None,
        {},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-add-scheduler-enforced-node-affinity",
        ADDED_FOO_BAR,
        None,
        {"foo": "bar"},
        QueueingHint.QUEUE,
    ),
]


def _as_node(spec: Any) -> Any:
    return spec if spec is None or isinstance(spec, str) else node(labels=spec)


@pytest.mark.parametrize(
    "plugin_args,old,new,expected", [r[1:] for r in HINT_ROWS], ids=[r[0] for r in HINT_ROWS]
)
def test_is_schedulable_after_node_change(plugin_args, old, new, expected):
    pl = plugin(plugin_args)
    got = pl.node_change_hint(PodInfo(pod(**POD_WITH_AFFINITY)), _as_node(old), _as_node(new))
    assert got == expected
