"""Each extension point runs in framework order, in profile order, with kube semantics."""

from __future__ import annotations

from typing import Any

import numpy as np

from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework import (
    FilterResult,
    Plugin,
    PluginRef,
    Plugins,
    PluginSet,
    PostFilterResult,
    SchedulerProfile,
    Status,
    register_plugin,
)

from .helpers import bound_nodes, node, pod, run_scheduler

LOG: list[tuple[str, str, str]] = []  # (point, plugin, pod name)


class _Recorder(Plugin):
    """Records every call; behaviour per pod name is set in BEHAVIOUR."""

    BEHAVIOUR: dict[tuple[str, str, str], Any] = {}

    def _rec(self, point: str, pod_name: str) -> Any:
        LOG.append((point, self.NAME, pod_name))
        return self.BEHAVIOUR.get((point, self.NAME, pod_name))

    def pre_enqueue(self, pod):
        return self._rec("preEnqueue", pod.name) or Status()

    def pre_filter(self, state, pod, snap):
        return None, self._rec("preFilter", pod.name) or Status()

    def filter(self, state, pod, snap, idx):
        r = self._rec("filter", pod.name)
        return r(snap, idx) if r else FilterResult.all_pass(idx.size)

    def before_post_filter(self, state, pod, status, fit):
        return self._rec("beforePostFilter", pod.name) or Status()

    def post_filter(self, state, pod, fit):
        r = self._rec("postFilter", pod.name)
        if isinstance(r, tuple):
            return r
        return None, r or Status.unschedulable("no victims")

    def pre_score(self, state, pod, snap, idx):
        return self._rec("preScore", pod.name) or Status()

    def score(self, state, pod, snap, idx):
        self._rec("score", pod.name)
        return np.zeros(idx.size)

    def reserve(self, state, pod, node):
        return self._rec("reserve", pod.name) or Status()

    def unreserve(self, state, pod, node):
        self._rec("unreserve", pod.name)

    def permit(self, state, pod, node):
        return self._rec("permit", pod.name) or (Status(), 0.0)

    async def pre_bind(self, state, pod, node):
        return self._rec("preBind", pod.name) or Status()

    def post_bind(self, state, pod, node):
        self._rec("postBind", pod.name)


@register_plugin
class RecA(_Recorder):
    NAME = "TestRecA"


@register_plugin
class RecB(_Recorder):
    NAME = "TestRecB"


def _profile() -> SchedulerProfile:
    return SchedulerProfile(
        scheduler_name="phalanx-scheduler",
        plugins=Plugins(
            multi_point=PluginSet(enabled=[PluginRef(name="TestRecA"), PluginRef(name="TestRecB")]),
            # Only the recorders at PostFilter: the default preemption plugin would stop the chain.
            post_filter=PluginSet(
                enabled=[PluginRef(name="TestRecA"), PluginRef(name="TestRecB")], disabled=[PluginRef(name="*")]
            ),
        ),
    )


def _run(pods, nodes=None, body=None):
    LOG.clear()

    async def default_body(client, sched):
        assert await sched.wait_idle(timeout=120)
        return await bound_nodes(client)

    return run_scheduler(
        body or default_body,
        nodes=nodes or [node("n1")],
        pods=pods,
        scheduler_factory=lambda c: Scheduler(c, [_profile()]),
    )


def _points(pod_name: str) -> list[tuple[str, str]]:
    return [(pt, pl) for pt, pl, p in LOG if p == pod_name]


def teardown_function() -> None:
    _Recorder.BEHAVIOUR.clear()


def test_success_path_runs_every_point_in_order():
    placed = _run([pod("a")])
    assert placed == {"a": "n1"}
    points = _points("a")
    order = ["preEnqueue", "preFilter", "filter", "preScore", "score", "reserve", "permit", "preBind", "postBind"]
    # Points run in framework order, and each point runs A then B.
    seen = [pt for pt, _ in points]
    assert [pt for i, pt in enumerate(seen) if i == 0 or seen[i - 1] != pt] == [
        pt for pt in order if pt in seen
    ]
    for pt in set(seen):
        assert [pl for p, pl in points if p == pt] == ["TestRecA", "TestRecB"], pt
    # Single feasible node: scoring is skipped, as kube-scheduler does.
    assert "score" not in seen


def test_scoring_runs_with_several_feasible_nodes():
    _run([pod("a")], nodes=[node("n1"), node("n2")])
    seen = [pt for pt, _ in _points("a")]
    assert seen.index("filter") < seen.index("preScore") < seen.index("score") < seen.index("reserve")


def test_filter_failure_runs_before_post_filter_for_all_then_post_filter():
    _Recorder.BEHAVIOUR[("filter", "TestRecA", "a")] = lambda snap, idx: FilterResult.reject_all(idx.size, "nope")
    # B's BeforePostFilter raising must not stop anything.
    _Recorder.BEHAVIOUR[("beforePostFilter", "TestRecB", "a")] = Status()
    placed = _run([pod("a")])
    assert placed == {"a": None}
    points = _points("a")
    first_fail = points[: points.index(("postFilter", "TestRecB")) + 1]
    assert first_fail[-4:] == [
        ("beforePostFilter", "TestRecA"),
        ("beforePostFilter", "TestRecB"),
        ("postFilter", "TestRecA"),
        ("postFilter", "TestRecB"),
    ]
    # Filter B never saw the node A rejected; no reserve, no unreserve.
    assert ("filter", "TestRecB") not in points
    assert not any(pt in ("reserve", "unreserve") for pt, _ in points)


def test_before_post_filter_skip_prevents_post_filter():
    _Recorder.BEHAVIOUR[("filter", "TestRecA", "a")] = lambda snap, idx: FilterResult.reject_all(idx.size, "nope")
    _Recorder.BEHAVIOUR[("beforePostFilter", "TestRecA", "a")] = Status.skip()
    _run([pod("a")])
    seen = [pt for pt, _ in _points("a")]
    assert seen.count("beforePostFilter") >= 2
    assert "postFilter" not in seen


def test_post_filter_stops_at_first_success():
    _Recorder.BEHAVIOUR[("filter", "TestRecA", "a")] = lambda snap, idx: FilterResult.reject_all(idx.size, "nope")
    _Recorder.BEHAVIOUR[("postFilter", "TestRecA", "a")] = Status()
    _run([pod("a")])
    points = _points("a")
    assert ("postFilter", "TestRecA") in points and ("postFilter", "TestRecB") not in points


def test_reserve_failure_unreserves_in_reverse_order():
    _Recorder.BEHAVIOUR[("reserve", "TestRecB", "a")] = Status.unschedulable("no")
    placed = _run([pod("a")])
    assert placed == {"a": None}
    points = _points("a")
    i = points.index(("reserve", "TestRecB"))
    assert points[i + 1 : i + 3] == [("unreserve", "TestRecB"), ("unreserve", "TestRecA")]
    assert ("permit", "TestRecA") not in points
    # BeforePostFilter runs on a failure outside Filter, PostFilter does not.
    after = [pt for pt, _ in points[i:]]
    assert "beforePostFilter" in after and "postFilter" not in after


def test_permit_wait_then_allow_binds():
    _Recorder.BEHAVIOUR[("permit", "TestRecA", "a")] = (Status.wait(), 30.0)

    async def body(client, sched):
        from phalanx.cluster.clock import wait_for_condition

        assert await wait_for_condition(lambda: len(sched.waiting) == 1, timeout=5)
        wp = next(iter(sched.waiting))
        assert wp.pending_plugins() == ["TestRecA"]
        assert (await bound_nodes(client)) == {"a": None}
        wp.allow("TestRecA")
        assert await sched.wait_idle(timeout=10)
        return await bound_nodes(client)

    assert _run([pod("a")], body=body) == {"a": "n1"}


def test_permit_timeout_unreserves_and_requeues():
    _Recorder.BEHAVIOUR[("permit", "TestRecA", "a")] = (Status.wait(), 5.0)

    async def body(client, sched):
        from phalanx.cluster.clock import wait_for_condition

        assert await wait_for_condition(lambda: ("unreserve", "TestRecA", "a") in LOG, timeout=30)
        d = sched.diagnosis("default/a")
        assert d is not None and "timeout" in d.message()
        assert sched.cache.snapshot.pod_row("default/a") is None  # forgotten
        # It is retried after backoff (and waits again).
        assert await wait_for_condition(lambda: [p for p in LOG if p[0] == "permit" and p[1] == "TestRecA"].__len__() >= 2, timeout=30)
        return True

    assert _run([pod("a")], body=body)


def test_unknown_plugin_in_profile_is_a_clear_error():
    import pytest

    from phalanx.cluster.memory import MemoryCluster
    from phalanx.scheduler.framework.runtime import ProfileError

    prof = SchedulerProfile(plugins=Plugins(filter=PluginSet(enabled=[PluginRef(name="NoSuchPlugin")])))
    with pytest.raises(ProfileError, match="NoSuchPlugin"):
        Scheduler(MemoryCluster(), [prof])


def test_post_filter_result_nominates_the_node():
    _Recorder.BEHAVIOUR[("filter", "TestRecA", "a")] = lambda snap, idx: FilterResult.reject_all(idx.size, "nope")
    _Recorder.BEHAVIOUR[("postFilter", "TestRecA", "a")] = (PostFilterResult(nominated_node="n1"), Status())

    async def body(client, sched):
        assert await sched.wait_idle(timeout=5)
        from phalanx.api.core import Pod

        p = await client.get(Pod, "a", "default")
        d = sched.diagnosis("default/a")
        return p.status.nominated_node_name, d.message()

    nominated, message = _run([pod("a")], body=body)
    assert nominated == "n1"
    assert message == "0/1 nodes are available: 1 nope. preemption: nominated node n1"


def test_pre_filter_rejection_fails_the_cycle_for_every_node():
    _Recorder.BEHAVIOUR[("preFilter", "TestRecB", "a")] = Status.unresolvable("gang incomplete")
    placed = _run([pod("a")])
    assert placed == {"a": None}
    points = _points("a")
    assert ("filter", "TestRecA") not in points
    assert ("beforePostFilter", "TestRecA") in points


def test_cycle_state_is_shared_from_pre_filter_to_bind():
    seen: list[Any] = []

    @register_plugin
    class StatePlugin(Plugin):
        NAME = "TestStateCarrier"

        def pre_filter(self, state, pod, snap):
            state.write("TestStateCarrier/x", pod.name)
            return None, Status()

        async def pre_bind(self, state, pod, node):
            seen.append(state.read("TestStateCarrier/x"))
            return Status()

    prof = SchedulerProfile(plugins=Plugins(multi_point=PluginSet(enabled=[PluginRef(name="TestStateCarrier")])))

    async def body(client, sched):
        assert await sched.wait_idle(timeout=5)

    run_scheduler(body, nodes=[node("n1")], pods=[pod("a")], scheduler_factory=lambda c: Scheduler(c, [prof]))
    assert seen == ["a"]
