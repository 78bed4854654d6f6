"""Koordinator's core/ganggroup_test.go, ported: the state a gang group shares (Koordinator's
GangGroupInfo: representative, waiting gangs, satisfied-once flag).

Here that state is split between the gang manager's `UnitState` (one per gang group: its
representative and Permit deadline, made on use and forgotten with the group's last gang) and
each gang's `GangState` (its members waiting at Permit, `once_satisfied`). The rows drive it
through the manager's extension-point calls, as the plugin does.

Differences, marked in the rows: releasing the representative hands the role to the next
pending member at once (Koordinator clears it and lets the next PreEnqueue take it), so the
"cleared" rows check that the pod is no longer the representative.

Rows not expressible:
- TestSetInitialized_ConcurrentSafe, TestSetResourceSatisfied_ConcurrentSafe,
  TestSetBindingMembers_ConcurrentSafe: the gang state lives on one asyncio event loop and is
  never touched from two threads; there is no lock to test.
- TestAddWaitingGang_MetricIncrementedOnFirstCall, ..._MetricNotIncrementedOnSubsequentCall,
  ..._EmptyGroupNoMetricChange, TestRemoveWaitingGang_MetricDecrementedWhenSetBecomesEmpty,
  ..._MetricNotDecrementedWhenSetStillNonEmpty, ..._NoMetricChangeWhenAlreadyEmpty,
  TestClearWaitingGang_MetricDecrementedWhenWasNonEmpty, ..._MetricNotDecrementedWhenAlreadyEmpty:
  Koordinator's `waiting_gang_group_number` gauge; Phalanx exports no such metric (the gangs
  waiting at Permit are in `phalanx explain` and the GangScheduled condition).
- TestRemoveWaitingGang_ClearsBindingMemberPodsWhenEmpty, ..._DoesNotClearBindingMemberPodsWhen
  NonEmpty, TestClearWaitingGang_ClearsBindingMemberPods, TestSetBindingMembers_GetBinding
  Members_RoundTrip, TestSetBindingMembers_CanOverwrite, TestGetBindingMembers_NilWhenNotSet:
  the binding member set feeds Koordinator's PreBind annotations, which Phalanx does not write
  (see test_core.py).
"""

from __future__ import annotations

from .kit import GROUPS, MODE, Koord, kpod, make_pg

GROUP3 = '["default/gang-a","default/gang-b","default/gang-c"]'


def _group(k: Koord, names: list[str], min_member: int = 2, **ann: str) -> None:
    groups = "[" + ",".join(f'"default/{n}"' for n in names) + "]"
    for n in names:
        k.add_pg(make_pg(n, min_member=min_member, timeout=60, ann={GROUPS: groups, **ann}))


def _members(k: Koord, gang: str, n: int) -> list[str]:
    pods = [kpod(f"{gang}-{i}", pg=gang) for i in range(n)]
    k.add(*pods)
    return [p.key for p in pods]


def test_NewGangGroupInfo_FieldInitialization() -> None:
    k = Koord()
    _group(k, ["gang-a", "gang-b"])
    st = k.gang("default", "gang-a")
    assert st is not None
    u = k.manager.unit(st)
    assert u is k.manager.unit(k.gang("default", "gang-b"))  # one per group
    assert u.representative is None and u.deadline is None and not u.failed and u.plan is None
    assert not st.once_satisfied and not st.waiting


def test_SetInitialized_TransitionsToTrue() -> None:
    """A gang named by its pods is initialised when its PodGroup arrives."""
    k = Koord()
    k.add(kpod("p", pg="g1"))
    st = k.gang("default", "g1")
    assert st is not None and st.spec is None
    k.add_pg(make_pg("g1"))
    assert st.spec is not None


def test_SetResourceSatisfied_OnceTrue_IsIrreversible() -> None:
    k = Koord()
    k.add_pg(make_pg("g1", min_member=1))
    (a,) = _members(k, "g1", 1)
    st = k.gang("default", "g1")
    assert st is not None and not st.once_satisfied
    k.manager.reserved(a, "n1")
    assert not k.manager.permit(a, 0.0).wait
    assert st.once_satisfied
    k.manager.bound(a, "n1")
    assert st.once_satisfied
    # Irreversible while the PodGroup exists, even with every pod gone (koord-scheduler).
    k.delete(kpod("g1-0", pg="g1"))
    assert st.once_satisfied and k.gang("default", "g1") is st


def test_AddWaitingGang_InsertsAllGroupIDs() -> None:
    k = Koord()
    _group(k, ["gang-a", "gang-b", "gang-c"])
    a = _members(k, "gang-a", 2)
    for name in ("gang-b", "gang-c"):
        _members(k, name, 2)
    k.manager.reserved(a[0], "n1")
    assert k.manager.permit(a[0], 0.0).wait
    # The group waits as one: every gang of it shares the Permit deadline now running.
    units = {id(k.manager.unit(k.gang("default", n))) for n in ("gang-a", "gang-b", "gang-c")}
    assert len(units) == 1 and k.manager.unit(k.gang("default", "gang-a")).deadline == 60.0


def _two_waiting(k: Koord, **ann: str) -> tuple[str, str]:
    _group(k, ["gang-a", "gang-b"], min_member=2, **ann)
    a, b = _members(k, "gang-a", 2)[0], _members(k, "gang-b", 2)[0]
    for key in (a, b):
        k.manager.reserved(key, "n1")
        assert k.manager.permit(key, 0.0).wait
    return a, b


def test_RemoveWaitingGang_RemovesSingleID() -> None:
    """NonStrict: one gang's waiting member released leaves the other gang waiting."""
    k = Koord()
    a, b = _two_waiting(k, **{MODE: "NonStrict"})
    reject, timed_out = k.manager.unreserved(a, 1.0)
    assert reject == [] and not timed_out
    assert not k.gang("default", "gang-a").waiting
    assert k.gang("default", "gang-b").waiting == {b}


def test_ClearWaitingGang_ClearsAllIDs() -> None:
    """Strict: a failed member clears every gang of the group."""
    k = Koord()
    a, b = _two_waiting(k)
    c = k.cache.gang_of(a).pending_members()[0].key
    assert sorted(k.manager.failed(c, "Unschedulable", "no fit", 1.0)) == sorted([a, b])
    assert not k.gang("default", "gang-a").waiting and not k.gang("default", "gang-b").waiting
    assert k.manager.unit(k.gang("default", "gang-a")).deadline is None


def test_ClearWaitingGang_NilBindingMemberPodsIsNoop() -> None:
    """Clearing a group with nothing but its waiting members (no binding set) is harmless,
    and clearing it again finds nothing."""
    k = Koord()
    a, _ = _two_waiting(k)
    c = k.cache.gang_of(a).pending_members()[0].key
    assert len(k.manager.failed(c, "Unschedulable", "no fit", 1.0)) == 2
    assert k.manager.failed(c, "Unschedulable", "no fit", 2.0) == []


def _gang_of(k: Koord, n: int, min_member: int = 1) -> list[str]:
    k.add_pg(make_pg("g1", min_member=min_member))
    return _members(k, "g1", n)


def test_RecordIfNoRepresentatives_SetsKeyWhenEmpty() -> None:
    k = Koord()
    (a,) = _gang_of(k, 1)
    k.manager.unit(k.gang("default", "g1")).representative = None
    assert k.manager.admit(a).ok
    assert k.manager.representative("coscheduling:default/g1") == a


def test_RecordIfNoRepresentatives_ReturnsExistingKeyForDifferentPod() -> None:
    k = Koord()
    a, b = _gang_of(k, 2)
    assert k.manager.admit(a).ok
    held = k.manager.admit(b)
    assert not held.ok and a in held.message
    assert k.manager.representative("coscheduling:default/g1") == a


def test_DeleteIfRepresentative_ClearsKeyWhenPodMatches() -> None:
    k = Koord()
    (a,) = _gang_of(k, 1)
    assert k.manager.admit(a).ok
    k.delete(kpod("g1-0", pg="g1"))
    assert k.manager.representative("coscheduling:default/g1") is None


def test_DeleteIfRepresentative_NoOpWhenPodDoesNotMatch() -> None:
    k = Koord()
    a, _ = _gang_of(k, 2)
    assert k.manager.admit(a).ok
    k.delete(kpod("g1-1", pg="g1"))
    assert k.manager.representative("coscheduling:default/g1") == a


def test_DeleteIfRepresentative_NoOpWhenKeyAlreadyEmpty() -> None:
    """A member bound while the gang has no representative leaves it without one."""
    k = Koord()
    a, b = _gang_of(k, 2, min_member=2)
    st = k.gang("default", "g1")
    k.manager.unit(st).representative = None
    k.manager.bound(a, "n1")
    assert k.manager.unit(st).representative is None


def test_IsRepresentative_TrueForRepresentativePod() -> None:
    k = Koord()
    (a,) = _gang_of(k, 1)
    assert k.manager.admit(a).ok and k.manager.representative("coscheduling:default/g1") == a


def test_IsRepresentative_FalseForNonRepresentativePod() -> None:
    k = Koord()
    a, b = _gang_of(k, 2)
    assert k.manager.admit(a).ok and k.manager.representative("coscheduling:default/g1") != b


def test_IsRepresentative_FalseWhenNoRepresentativeSet() -> None:
    k = Koord()
    a, b = _gang_of(k, 2, min_member=3)  # incomplete: nobody may lead yet
    assert k.manager.representative("coscheduling:default/g1") is None
    assert not k.manager.admit(a).ok


def test_ClearCurrentRepresentative_AlwaysClears() -> None:
    """Once the representative enters scheduling it is no longer the one in the queue (the
    role passes on to the next pending member: see the docstring)."""
    k = Koord()
    a, b = _gang_of(k, 2, min_member=2)
    assert k.manager.admit(a).ok
    assert k.manager.reserved(a, "n1") == [b]
    assert k.manager.representative("coscheduling:default/g1") == b


def test_ClearCurrentRepresentative_NoopWhenAlreadyEmpty() -> None:
    """With no member left pending the role stays empty."""
    k = Koord()
    (a,) = _gang_of(k, 1, min_member=2)
    st = k.gang("default", "g1")
    k.manager.unit(st).representative = None
    k.manager.reserved(a, "n1")
    assert k.manager.unit(st).representative is None


def test_GangGroupInfo_FullLifecycle() -> None:
    k = Koord()
    _group(k, ["gang-a", "gang-b"], min_member=1)
    (a,) = _members(k, "gang-a", 1)
    (b,) = _members(k, "gang-b", 1)
    assert k.manager.admit(a).ok and k.manager.representative("coscheduling:default/gang-a") == a
    k.manager.reserved(a, "n1")
    assert k.manager.permit(a, 0.0).wait  # gang-b has nothing placed: the group waits
    unit = k.manager.unit(k.gang("default", "gang-a"))
    assert unit.deadline == 60.0 and k.gang("default", "gang-a").waiting == {a}
    k.manager.reserved(b, "n1")
    decision = k.manager.permit(b, 1.0)
    assert not decision.wait and decision.allow == [a]
    assert all(k.gang("default", n).once_satisfied for n in ("gang-a", "gang-b"))
    assert unit.deadline is None and not k.gang("default", "gang-a").waiting
    k.manager.bound(a, "n1")
    k.manager.bound(b, "n1")
    assert unit.representative is None
