"""Gang rules without the framework: PreEnqueue holding, representatives, Permit, failures."""

from __future__ import annotations

from phalanx.scheduler.gang import GangCache, GangManager, GangMode, Phase

from .fakes import FakeSource, gang_obj, gid, pod

SRC = FakeSource()


def setup(**kw: float) -> tuple[GangCache, GangManager, list[list[str]]]:
    cache = GangCache({"test-scheduler": [SRC]})
    mgr = GangManager(cache, **kw)
    activated: list[list[str]] = []
    cache.add_activate_listener(activated.append)
    return cache, mgr, activated


def test_incomplete_gang_is_held_with_counts_then_representative_activated() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 3))
    cache.add_pod(pod("a", "g", t=1))
    cache.add_pod(pod("b", "g", t=2))
    adm = mgr.admit("ns/a")
    assert not adm.ok and adm.reason == Phase.INCOMPLETE
    assert "2/3 members created" in adm.message and "waiting for 1 more" in adm.message
    assert activated == []
    cache.add_pod(pod("c", "g", t=3))
    # Completion wakes exactly one pod: the oldest member becomes the representative.
    assert activated == [["ns/a"]]
    assert mgr.admit("ns/a").ok
    held = mgr.admit("ns/b")
    assert not held.ok and held.reason == "WaitingForRepresentative" and "ns/a" in held.message


def test_missing_gang_object_holds_until_it_arrives() -> None:
    cache, mgr, activated = setup()
    cache.add_pod(pod("a", "g"))
    adm = mgr.admit("ns/a")
    assert not adm.ok and adm.reason == Phase.NOT_FOUND and "ns/g" in adm.message
    cache.set_object(SRC, gang_obj("g", 1))
    assert activated == [["ns/a"]]
    assert mgr.admit("ns/a").ok


def test_representative_passes_on_at_reserve_and_permit_allows_all_at_min() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 3))
    for i, n in enumerate("abcd"):
        cache.add_pod(pod(n, "g", t=i))
    assert mgr.admit("ns/a").ok
    assert mgr.reserved("ns/a", "n1") == ["ns/b"]
    d = mgr.permit("ns/a", now=0.0)
    assert d.wait and d.timeout == mgr.default_timeout
    assert mgr.admit("ns/b").ok and not mgr.admit("ns/c").ok
    assert mgr.reserved("ns/b", "n1") == ["ns/c"]
    d = mgr.permit("ns/b", now=5.0)
    # Later members wait only for what is left of the gang's timeout.
    assert d.wait and d.timeout == mgr.default_timeout - 5.0
    # minMember is reached with c: d is an extra, so it does not become the representative
    # (placing it before Permit could take room the minimum needs); it is held meanwhile.
    assert mgr.reserved("ns/c", "n2") == []
    held = mgr.admit("ns/d")
    assert not held.ok and held.reason == "WaitingForGangMinimum"
    d = mgr.permit("ns/c", now=6.0)
    assert not d.wait and d.allow == ["ns/a", "ns/b"]
    st = cache.get(gid("g"))
    assert st is not None and st.once_satisfied
    # Permit wakes the member beyond minMember, which now schedules like an ordinary pod.
    assert activated[-1] == ["ns/d"]
    assert mgr.admit("ns/d").ok


def test_strict_failure_switches_representative_and_releases_waiting_members() -> None:
    cache, mgr, _ = setup()
    cache.set_object(SRC, gang_obj("g", 3))
    for i, n in enumerate("abc"):
        cache.add_pod(pod(n, "g", t=i))
    mgr.admit("ns/a")
    mgr.reserved("ns/a", "n1")
    mgr.permit("ns/a", 0.0)
    mgr.reserved("ns/b", "n1")
    mgr.permit("ns/b", 0.0)
    reject = mgr.failed("ns/c", "Unschedulable", "0/2 nodes are available", now=1.0)
    assert reject == ["ns/a", "ns/b"]
    assert mgr.representative(gid("g")) == "ns/c"
    st = cache.get(gid("g"))
    assert st is not None and st.last_failure is not None and st.last_failure.pod == "ns/c"
    # The rejections' Unreserve calls release nothing more (the waiting set was cleared).
    assert mgr.unreserved("ns/a", now=1.0) == ([], False)
    assert mgr.unreserved("ns/b", now=1.0) == ([], False)
    assert st.placed == 0
    # Released members are held again; only the failed pod may retry.
    assert not mgr.admit("ns/a").ok and mgr.admit("ns/c").ok


def test_non_strict_failure_keeps_the_others_reservations_and_moves_on() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 3, mode=GangMode.NON_STRICT))
    for i, n in enumerate("abc"):
        cache.add_pod(pod(n, "g", t=i))
    mgr.admit("ns/a")
    mgr.reserved("ns/a", "n1")
    mgr.permit("ns/a", 0.0)
    activated.clear()
    assert mgr.failed("ns/b", "Unschedulable", "no room", now=1.0) == []
    st = cache.get(gid("g"))
    assert st is not None and st.placed == 1 and "ns/a" in st.waiting
    # The gang keeps accumulating: c leads now; b leads again once it is the last pending.
    assert mgr.representative(gid("g")) == "ns/c" and activated == [["ns/c"]]
    mgr.admit("ns/c")
    assert mgr.reserved("ns/c", "n2") == ["ns/b"]
    assert mgr.failed("ns/b", "Unschedulable", "no room", now=2.0) == []
    assert mgr.representative(gid("g")) == "ns/b"


def test_timeout_is_recognised_in_unreserve_and_releases_the_gang() -> None:
    cache, mgr, _ = setup(default_timeout=30.0)
    cache.set_object(SRC, gang_obj("g", 3))
    for i, n in enumerate("abc"):
        cache.add_pod(pod(n, "g", t=i))
    mgr.admit("ns/a")
    mgr.reserved("ns/a", "n1")
    mgr.permit("ns/a", 100.0)
    mgr.reserved("ns/b", "n1")
    mgr.permit("ns/b", 110.0)
    reject, timed_out = mgr.unreserved("ns/a", now=130.0)
    assert timed_out and reject == ["ns/b"]
    st = cache.get(gid("g"))
    assert st is not None and st.timeouts == 1
    assert st.last_failure is not None and st.last_failure.reason == Phase.TIMED_OUT
    assert "2/3 placed" in st.last_failure.message


def test_gang_group_waits_for_every_gang_of_the_group() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("x", 1, gang_group=("x", "y")))
    cache.add_pod(pod("x1", "x"))
    adm = mgr.admit("ns/x1")
    assert not adm.ok and adm.reason == Phase.GROUP_INCOMPLETE
    cache.set_object(SRC, gang_obj("y", 2, gang_group=("x", "y")))
    cache.add_pod(pod("y1", "y", t=1))
    cache.add_pod(pod("y2", "y", t=2))
    assert activated and activated[-1]
    # One representative for the whole group.
    assert mgr.admit("ns/x1").ok and not mgr.admit("ns/y1").ok
    assert mgr.reserved("ns/x1", "n1") == ["ns/y1"]
    assert mgr.permit("ns/x1", 0.0).wait
    mgr.reserved("ns/y1", "n1")
    assert mgr.permit("ns/y1", 0.0).wait
    mgr.reserved("ns/y2", "n1")
    d = mgr.permit("ns/y2", 0.0)
    assert not d.wait and d.allow == ["ns/x1", "ns/y1"]


def test_sub_group_minimum_must_be_met_too() -> None:
    cache, mgr, _ = setup()
    cache.set_object(SRC, gang_obj("g", 2, groups={"prefill": 1, "decode": 1}))
    cache.add_pod(pod("p1", "g", group="prefill", t=0))
    cache.add_pod(pod("p2", "g", group="prefill", t=1))
    adm = mgr.admit("ns/p1")
    assert not adm.ok and "group decode: 0/1 created" in adm.message
    cache.add_pod(pod("d1", "g", group="decode", t=2))
    mgr.admit("ns/p1")
    mgr.reserved("ns/p1", "n")
    assert mgr.permit("ns/p1", 0).wait
    mgr.reserved("ns/p2", "n")
    # Two members placed (minMember 2) but no decode member yet: keep waiting.
    assert mgr.permit("ns/p2", 0).wait
    mgr.reserved("ns/d1", "n")
    assert not mgr.permit("ns/d1", 0).wait


def test_deleting_the_representative_hands_over_and_full_loss_resets_the_gang() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 2))
    a, b, c = pod("a", "g", t=0), pod("b", "g", t=1), pod("c", "g", t=2)
    for p in (a, b, c):
        cache.add_pod(p)
    assert mgr.admit("ns/a").ok
    activated.clear()
    cache.delete_pod(a)
    assert activated == [["ns/b"]] and mgr.representative(gid("g")) == "ns/b"
    # Bound members (from the informer) count; once satisfied, loss of all resets.
    cache.update_pod(None, pod("b", "g", t=1, node="n1"))
    cache.update_pod(None, pod("c", "g", t=2, node="n1"))
    st = cache.get(gid("g"))
    assert st is not None and st.placed == 2
    st.once_satisfied = True
    cache.delete_pod(pod("b", "g"))
    assert st.once_satisfied
    cache.delete_pod(pod("c", "g"))
    assert not st.once_satisfied


def test_members_with_scheduling_gates_do_not_start_the_gang() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 2))
    a, b = pod("a", "g", t=0), pod("b", "g", t=1)
    b.spec.scheduling_gates = ["grove.io/podgang-pending-creation"]  # type: ignore[attr-defined]
    cache.add_pod(a)
    cache.add_pod(b)
    adm = mgr.admit("ns/a")
    assert not adm.ok and adm.reason == Phase.INCOMPLETE and "1 still have scheduling gates" in adm.message
    b2 = pod("b", "g", t=1)
    b2.spec.scheduling_gates = []  # type: ignore[attr-defined]
    cache.update_pod(b, b2)
    assert activated == [["ns/a"]] and mgr.admit("ns/a").ok


def test_non_strict_members_that_keep_failing_do_not_hand_the_role_back_and_forth() -> None:
    cache, mgr, activated = setup()
    cache.set_object(SRC, gang_obj("g", 3, mode=GangMode.NON_STRICT))
    for i, n in enumerate("abc"):
        cache.add_pod(pod(n, "g", t=i))
    mgr.admit("ns/a")
    mgr.failed("ns/a", "Unschedulable", "no room", now=1.0)
    assert mgr.representative(gid("g")) == "ns/b"
    mgr.failed("ns/b", "Unschedulable", "no room", now=1.0)
    assert mgr.representative(gid("g")) == "ns/c"
    activated.clear()
    mgr.failed("ns/c", "Unschedulable", "no room", now=1.0)
    # Everyone pending failed since the last progress: c keeps the role and nobody is woken.
    assert mgr.representative(gid("g")) == "ns/c" and activated == []
