"""SchedulingQueue: ordering, backoff, the unschedulable pool, gating and event moves."""

from __future__ import annotations

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import ActionType, ClusterEvent, PodInfo, Status
from phalanx.scheduler.framework.types import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_FORCE_ACTIVATE,
    NODE,
    ClusterEventWithHint,
)
from phalanx.scheduler.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, SchedulingQueue

from .helpers import node, pod


class FakeTime:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make_queue(**kw) -> tuple[SchedulingQueue, FakeTime]:
    t = FakeTime()
    sched = Scheduler(MemoryCluster())
    return SchedulingQueue(sched.frameworks, t, **kw), t


def info(p: Pod, created: float = 0.0) -> PodInfo:
    pi = PodInfo(p)
    pi.created = created
    return pi


def pop_all(q: SchedulingQueue) -> list[str]:
    out = []
    while (qpi := q.pop_nowait()) is not None:
        out.append(qpi.info.name)
        q.done(qpi.key)
    return out


def test_active_queue_orders_by_priority_then_age():
    q, t = make_queue()
    q.add(info(pod("low-old", priority=1)))
    t.t += 1
    q.add(info(pod("high", priority=10)))
    t.t += 1
    q.add(info(pod("low-new", priority=1)))
    q.add(info(pod("mid", priority=5)))
    assert pop_all(q) == ["high", "mid", "low-old", "low-new"]


def test_backoff_doubles_up_to_the_cap():
    q, _ = make_queue(initial_backoff=1, max_backoff=10)
    assert [q.backoff_duration(a) for a in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_error_goes_to_backoff_and_returns_when_it_expires():
    q, t = make_queue(initial_backoff=1, max_backoff=10)
    q.add(info(pod("a")))
    qpi = q.pop_nowait()
    q.requeue_failed(qpi, Status.error("boom"))
    assert q.where("default/a") == BACKOFF
    assert q.pop_nowait() is None
    t.t += 0.5
    assert q.pop_nowait() is None
    t.t += 0.5
    qpi = q.pop_nowait()
    assert qpi is not None and qpi.attempts == 2
    q.requeue_failed(qpi, Status.error("boom"))
    t.t += 1.5
    assert q.pop_nowait() is None  # second backoff is 2s
    t.t += 0.5
    assert q.pop_nowait() is not None


def test_unschedulable_pod_moves_only_on_events_its_plugins_registered():
    q, t = make_queue()
    q.add(info(pod("a", gpu=1)))
    qpi = q.pop_nowait()
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.requeue_failed(qpi, Status.unschedulable("Insufficient nvidia.com/gpu"))
    assert q.where("default/a") == UNSCHEDULABLE
    # A label change on a node cannot help a resources rejection.
    assert q.on_event(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), node("x"), node("x")) == 0
    # A new node without GPUs cannot either (NodeResourcesFit's queueing hint says skip).
    assert q.on_event(ClusterEvent(NODE, ActionType.ADD), None, node("cpu-only")) == 0
    assert q.where("default/a") == UNSCHEDULABLE
    # A GPU node can; the pod is still backing off, so it goes to backoffQ first.
    assert q.on_event(ClusterEvent(NODE, ActionType.ADD), None, node("gpu", gpu=8)) == 1
    assert q.where("default/a") == BACKOFF
    t.t += 1
    assert pop_all(q) == ["a"]


def test_assigned_pod_delete_moves_resource_rejections():
    q, t = make_queue()
    q.add(info(pod("a")))
    qpi = q.pop_nowait()
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.requeue_failed(qpi, Status.unschedulable("Insufficient cpu"))
    t.t += 60
    bound = pod("x")
    bound.spec.node_name = "n1"  # an assigned pod: its deletion frees room on n1
    assert q.on_event(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, bound) == 0
    assert q.on_event(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), bound, None) == 1
    assert q.where("default/a") == ACTIVE


def test_unschedulable_pods_are_retried_after_the_max_duration():
    q, t = make_queue(max_in_unschedulable=300)
    q.add(info(pod("a")))
    qpi = q.pop_nowait()
    qpi.unschedulable_plugins = {"TaintToleration"}
    q.requeue_failed(qpi, Status.unschedulable("taint"))
    t.t += 299
    q._flush_unschedulable_timeouts()
    assert q.where("default/a") == UNSCHEDULABLE
    t.t += 1
    q._flush_unschedulable_timeouts()
    assert q.where("default/a") == ACTIVE


def test_scheduling_gates_hold_the_pod_until_removed():
    q, _ = make_queue()
    gated = pod("a", gates=["example.com/wait"])
    q.add(info(gated))
    assert q.where("default/a") == UNSCHEDULABLE and q.get("default/a").gated
    assert q.counts()["gated"] == 1
    assert pop_all(q) == []
    # Forced moves and timeouts never bypass PreEnqueue.
    q.on_event(EVENT_FORCE_ACTIVATE)
    assert q.get("default/a").gated
    q.update(info(pod("a")))  # gate removed
    assert q.where("default/a") == ACTIVE
    assert pop_all(q) == ["a"]


def test_activate_moves_pods_now_but_gated_only_through_pre_enqueue():
    q, _ = make_queue()
    q.add(info(pod("a")))
    q.add(info(pod("g", gates=["x"])))
    qpi = q.pop_nowait()
    q.requeue_failed(qpi, Status.unschedulable("no"))
    assert q.activate(["default/a", "default/g", "default/missing"]) == 1
    assert q.where("default/a") == ACTIVE
    assert q.where("default/g") == UNSCHEDULABLE


def test_delete_removes_the_pod_wherever_it_is():
    q, _ = make_queue()
    for name in ("a", "b", "c"):
        q.add(info(pod(name)))
    qpi = q.pop_nowait()
    q.requeue_failed(qpi, Status.error("x"))
    for key in ("default/a", "default/b", "default/c"):
        q.delete(key)
    assert len(q) == 0 and pop_all(q) == []


def test_gate_removal_event_concerns_only_that_pod():
    # Lifting one pod's gate must not re-check every other gated pod (O(N^2) for N gates).
    q, _ = make_queue()
    for name in ("a", "b", "c"):
        q.add(info(pod(name, gates=["example.com/wait"])))
    old, new = pod("a", gates=["example.com/wait"]), pod("a")
    q.update(info(new))
    moved = q.on_event(ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), old, new)
    assert moved == 0  # "a" already moved through update(); b and c are not touched
    assert q.where("default/a") == ACTIVE
    assert q.get("default/b").gated and q.get("default/c").gated


def test_a_plugin_that_registers_no_events_is_woken_only_by_the_flush():
    """A deliberate difference from kube-scheduler (Framework.events_to_register): a plugin
    without events_to_register (GangReservation) is registered for no event, not for all."""
    q, t = make_queue(max_in_unschedulable=300)
    regs = Scheduler(MemoryCluster()).frameworks["phalanx-scheduler"].events_to_register()
    assert "GangReservation" not in regs
    q.add(info(pod("a")))
    qpi = q.pop_nowait()
    qpi.unschedulable_plugins = {"GangReservation"}
    q.requeue_failed(qpi, Status.unschedulable("node(s) reserved for a gang"))
    t.t += 60
    assert q.on_event(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, pod("x")) == 0
    t.t += 240
    q._flush_unschedulable_timeouts()
    assert q.where("default/a") == ACTIVE


class _Framework:
    """Just what the queue calls: plugin "P" holds pods labelled held=1 at PreEnqueue."""

    def __init__(self, regs: list[ClusterEventWithHint]) -> None:
        self.regs = regs

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        return {"P": self.regs}

    def run_pre_enqueue(self, pi: PodInfo) -> Status:
        return Status.unresolvable("held").with_plugin("P") if pi.labels.get("held") else Status()

    def sort_key(self, qpi) -> tuple[int]:
        return (qpi.seq,)


def _held_and_rejected(gated: bool) -> tuple[SchedulingQueue, int]:
    t = FakeTime()
    reg = ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), gated=gated)
    q = SchedulingQueue({"phalanx-scheduler": _Framework([reg])}, t)  # type: ignore[dict-item]
    q.add(info(pod("held", labels={"held": "1"})))
    q.add(info(pod("tried")))
    qpi = q.pop_nowait()
    qpi.unschedulable_plugins = {"P"}
    q.requeue_failed(qpi, Status.unschedulable("no room"))
    t.t += 60
    return q, q.on_event(ClusterEvent(NODE, ActionType.ADD), None, node("n"))


def test_events_registered_for_rejections_only_never_touch_gated_pods():
    q, moved = _held_and_rejected(gated=False)
    assert moved == 1 and pop_all(q) == ["tried"]
    assert not q.has_work() and q.get("default/held").gated  # no PreEnqueue re-check queued
    q, moved = _held_and_rejected(gated=True)  # the default: gated pods are re-checked too
    assert moved == 2 and pop_all(q) == ["tried"] and q.get("default/held").gated


def test_a_released_reservation_moves_only_pods_that_failed_while_it_was_held():
    """A reservation released (cycle.py's binding failure path) gives back room that was free
    when pods that failed before it was taken tried: only the later failures may now fit."""
    q, t = make_queue()
    for name in ("early", "late"):
        q.add(info(pod(name)))
        qpi = q.pop_nowait()
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        q.requeue_failed(qpi, Status.unschedulable("Insufficient cpu"))
        t.t += 50  # "early" failed at 100; the room was taken at 125; "late" failed at 150
    released = pod("member")
    released.spec.node_name = "n1"
    assert q.on_event(EVENT_ASSIGNED_POD_DELETE, released, None, failed_since=125.0) == 1
    assert q.where("default/late") in (ACTIVE, BACKOFF)
    assert q.where("default/early") == UNSCHEDULABLE
    # Without `failed_since` (a bound pod really deleted) every such rejection may fit.
    assert q.on_event(EVENT_ASSIGNED_POD_DELETE, released, None) == 1
    assert q.where("default/early") in (ACTIVE, BACKOFF)
