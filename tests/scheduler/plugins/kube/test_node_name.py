"""kube-scheduler 1.36's nodename/node_name_test.go, row by row (ids = kube's names), plus
how the scheduler treats a pod that names its node: it never schedules it (as kube)."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import CycleState
from phalanx.scheduler.plugins.nodename import REASON, NodeName


from .volume_harness import (
    filter_status,
    node,
    pod,
    pre_filter_status,
    run,
    snapshot,
    unresolvable,
)

ROWS = [
    ("no host specified", None, "foo", None),
    ("host matches", "foo", "foo", None),
    ("host doesn't match", "bar", "foo", unresolvable(REASON)),
]


@pytest.mark.parametrize(("wanted", "node_name", "want"), [r[1:] for r in ROWS],
                         ids=[r[0] for r in ROWS])
def test_node_name(wanted, node_name, want) -> None:
    snap = snapshot([node(node_name), node("other")])
    plugin = NodeName(None)
    p = pod("p", node_name=wanted)
    state = CycleState()
    pre = pre_filter_status(plugin, p, snap, state)
    if wanted is None:
        assert pre is not None and pre[1] == []  # skipped: no node named, nothing to check
    assert filter_status(plugin, p, snap, node_name, state) == want


def test_pod_with_node_name_is_never_scheduled() -> None:
    """The API server treats spec.nodeName as a binding: the scheduler leaves such a pod
    alone, even on a node it does not fit (kube's scheduler only sees unassigned pods)."""

    async def body(client, sched):
        from phalanx.api.core import Pod

        from ...helpers import pod as big_pod

        p = big_pod("named", cpu="64")
        p.spec.node_name = "a"
        await client.create(p)
        await sched.wait_idle(timeout=30)
        got = await client.get(Pod, "named", "default")
        assert got.spec.node_name == "a"
        assert sched.attempts == 0 and sched.diagnosis("default/named") is None

    run(body, nodes=[node("a")])
