"""kube-scheduler 1.36's nodeports/node_ports_test.go, row by row (ids = kube's names).

`newNodeInfo(pods...)` becomes a one-node snapshot holding those pods (bound or assumed:
the snapshot counts both alike).

Not ported:
- TestPreFilterDisabled: kube's Filter returns an internal error when its PreFilter state is
  missing. Our FilterResult has no error code; our Filter recomputes the pod's ports instead
  (the framework always runs PreFilter first, so the case does not arise in a cycle).
"""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import CycleState, PodInfo
from phalanx.scheduler.framework.types import QueueingHint
from phalanx.scheduler.hostports import fits
from phalanx.scheduler.plugins.nodeports import REASON, NodePorts, after_pod_deleted

from .volume_harness import (
    SKIP,
    filter_status,
    node,
    pod,
    port,
    port_pod,
    pre_filter_status,
    snapshot,
    unschedulable,
)


def _sidecar_pod(sidecar: bool):
    p = port("TCP//8001")
    p.container_port = 8001
    return pod("p", init_ports=[p], sidecar=sidecar)


NODE_PORTS_ROWS = [
    ("skip filter", pod("p"), [], SKIP, None),
    ("other port", port_pod("m1", "UDP/127.0.0.1/8080"), [("UDP/127.0.0.1/9090",)], None, None),
    ("same udp port", port_pod("m1", "UDP/127.0.0.1/8080"), [("UDP/127.0.0.1/8080",)], None,
     unschedulable(REASON)),
    ("same tcp port", port_pod("m1", "TCP/127.0.0.1/8080"), [("TCP/127.0.0.1/8080",)], None,
     unschedulable(REASON)),
    ("different host ip", port_pod("m1", "TCP/127.0.0.1/8080"), [("TCP/127.0.0.2/8080",)], None,
     None),
    ("different protocol", port_pod("m1", "UDP/127.0.0.1/8080"), [("TCP/127.0.0.1/8080",)], None,
     None),
    ("second udp port conflict", port_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     [("UDP/127.0.0.1/8080",)], None, unschedulable(REASON)),
    ("first tcp port conflict", port_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     [("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")], None, unschedulable(REASON)),
    ("first tcp port conflict due to 0.0.0.0 hostIP", port_pod("m1", "TCP/0.0.0.0/8001"),
     [("TCP/127.0.0.1/8001",)], None, unschedulable(REASON)),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP",
     port_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), [("TCP/127.0.0.1/8001",)], None,
     unschedulable(REASON)),
    ("second tcp port conflict to 0.0.0.0 hostIP", port_pod("m1", "TCP/127.0.0.1/8001"),
     [("TCP/0.0.0.0/8001",)], None, unschedulable(REASON)),
    ("second different protocol", port_pod("m1", "UDP/127.0.0.1/8001"),
     [("TCP/0.0.0.0/8001",)], None, None),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", port_pod("m1", "UDP/127.0.0.1/8001"),
     [("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")], None, unschedulable(REASON)),
    ("non-sidecar initContainer using hostPort", _sidecar_pod(False), [("TCP/0.0.0.0/8001",)],
     SKIP, None),
    ("TCP hostPort conflict from sidecar initContainer", _sidecar_pod(True),
     [("TCP/0.0.0.0/8001",)], None, unschedulable(REASON)),
]


@pytest.mark.parametrize(("want_pod", "existing", "want_pre", "want_filter"),
                         [r[1:] for r in NODE_PORTS_ROWS], ids=[r[0] for r in NODE_PORTS_ROWS])
def test_node_ports(want_pod, existing, want_pre, want_filter) -> None:
    snap = snapshot([node("m1")], [
        (pod(f"e{i}", node_name="m1", ports=[port(s) for s in specs]), "m1")
        for i, specs in enumerate(existing)])
    plugin = NodePorts(None)
    state = CycleState()
    assert pre_filter_status(plugin, want_pod, snap, state) == want_pre
    if want_pre == SKIP:
        return
    assert filter_status(plugin, want_pod, snap, "m1", state) == want_filter


def _host_port_pod(port_number: int, node_name: str | None = None):
    p = port(f"TCP//{port_number}")
    p.container_port = 80
    return pod("x", node_name=node_name, ports=[p])


HINT_ROWS = [
    ("backoff-wrong-old-object", "not-a-pod", QueueingHint.QUEUE),
    ("skip-queue-on-unscheduled", pod("x"), QueueingHint.QUEUE_SKIP),
    ("skip-queue-on-non-hostport", pod("x", node_name="fake-node"), QueueingHint.QUEUE_SKIP),
    ("skip-queue-on-unrelated-hostport", _host_port_pod(8081, "fake-node"),
     QueueingHint.QUEUE_SKIP),
    ("queue-on-released-hostport", _host_port_pod(8080, "fake-node"), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(("old", "want"), [r[1:] for r in HINT_ROWS], ids=[r[0] for r in HINT_ROWS])
def test_is_schedulable_after_pod_deleted(old, want) -> None:
    assert after_pod_deleted(PodInfo(_host_port_pod(8080)), old, None) == want


FITS_ROWS = [
    ("non-conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True),
    ("multiple non-conflicting ports",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True),
    ("same ports on different protocols", ["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True),
    ("conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False),
    ("multiple ports, some conflicting",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False),
]


@pytest.mark.parametrize(("want", "used", "expect"), [r[1:] for r in FITS_ROWS],
                         ids=[r[0] for r in FITS_ROWS])
def test_fits(want, used, expect) -> None:
    mine = PodInfo(port_pod("p", *want)).host_ports
    theirs = PodInfo(port_pod("m1", *used)).host_ports
    assert fits(mine, theirs) is expect
    # The snapshot's index agrees with the pairwise check.
    snap = snapshot([node("m1")], [(port_pod("m1", *used), "m1")])
    assert filter_status(NodePorts(None), port_pod("p", *want), snap, "m1", CycleState()) == (
        None if expect else unschedulable(REASON))
