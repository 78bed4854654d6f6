"""Koordinator's core/gang_cache_test.go, ported: how koord-scheduler pods and PodGroups
become gangs (one test per Go test, one parametrized case per table row, ids = row names).

Koordinator's `Gang` struct is compared through `gang_view` (kit.py). Its `WaitTime` is the
effective wait here (the gang's own, else koord-scheduler's default, 600 s as Koordinator's).

Differences, deliberate and marked where they show:
- A gang group always contains the gang itself (Koordinator takes the `groups` list as it is,
  even when it omits the gang). In `TestGangCache_OnGangDelete` the pod's gang `gangb` lists
  `default/gangA` and `default/gangB`: Koordinator's GangGroup is those two, ours adds
  `default/gangb`.

Rows not expressible: `TestGetGangGroupInfo_DeleteGangGroupInfo` calls
getGangGroupInfo(createIfNotExist) and deleteGangGroupInfo directly; here a gang group's
shared state (`GangManager.unit`) is created on use and forgotten with the group's last gang,
which `TestOnPodAdd_OnPodDeleteWithGangGroupInfo` and `TestOnPgAdd_OnPgDeleteWithGangGroupInfo`
check. The tombstone rows' `cache.DeletedFinalStateUnknown` wrapper does not exist in our
informers (a delete hands over the last object seen); their "wrong type is ignored" half is
ported against the handlers the gang runtime registers.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.scheduler.gang import Phase
from phalanx.scheduler.gang.runtime import GangRuntime

from .kit import (
    GROUPS,
    KOORD_DEFAULT_WAIT,
    LIGHT_MIN,
    LIGHT_NAME,
    MIN,
    MODE,
    NAME,
    TOTAL,
    WAIT,
    Koord,
    gang_view,
    kpod,
    make_pg,
)


def _ann(name: str, **kw: str) -> dict[str, str]:
    keys = {"min": MIN, "wait": WAIT, "mode": MODE, "groups": GROUPS, "total": TOTAL}
    return {NAME: name, **{keys[k]: v for k, v in kw.items()}}


GANGA_POD1 = kpod(
    "pod1",
    ann=_ann(
        "ganga", min="2", wait="30s", mode="NonStrict", groups='["default/ganga","default/gangb"]'
    ),
    node="nba",
)
GANGA_POD2 = kpod(
    "pod2", ann=_ann("ganga", min="7", wait="3000s", groups='["default/gangc","default/gangd"]')
)
GANGA_WANT = {
    "HasGangInit": True,
    "GangFrom": "PodAnnotation",
    "MinRequiredNumber": 2,
    "TotalChildrenNum": 2,
    "Mode": "NonStrict",
    "GangMatchPolicy": "once-satisfied",
    "WaitTime": 30.0,
    "GangGroup": ["default/ganga", "default/gangb"],
    "Children": ["default/pod1", "default/pod2"],
    "PendingChildren": ["default/pod2"],
    "WaitingForBindChildren": [],
    "BoundChildren": ["default/pod1"],
    "OnceResourceSatisfied": True,
    "Namespace": "default",
}

ON_POD_ADD: list[Any] = [
    pytest.param([kpod("empty")], {}, id="add invalid pod"),
    pytest.param(
        [kpod("p", labels_={"test": "gang"}, ann={"test": "gang"})], {}, id="add invalid pod2"
    ),
    pytest.param(
        [kpod("crdPod", pg="test")],
        {
            "default/test": {
                "HasGangInit": False,
                "GangFrom": None,
                "MinRequiredNumber": None,
                "TotalChildrenNum": None,
                "Mode": None,
                "GangMatchPolicy": "once-satisfied",
                "WaitTime": None,
                "GangGroup": ["default/test"],
                "Children": ["default/crdPod"],
                "PendingChildren": ["default/crdPod"],
                "WaitingForBindChildren": [],
                "BoundChildren": [],
                "OnceResourceSatisfied": False,
                "Namespace": "default",
            }
        },
        id="add pod announcing Gang in CRD way before CRD created,"
        "gang should be created but not initialized",
    ),
    pytest.param(
        [GANGA_POD1, GANGA_POD2],
        {"default/ganga": GANGA_WANT},
        id="add pod announcing Gang in Annotation way",
    ),
    pytest.param(
        [
            kpod("pod1", labels_={LIGHT_NAME: "ganga", LIGHT_MIN: "2"}, node="nba"),
            kpod("pod2", labels_={LIGHT_NAME: "ganga", LIGHT_MIN: "2"}),
        ],
        {
            "default/ganga": {
                **GANGA_WANT,
                "Mode": "Strict",
                "WaitTime": KOORD_DEFAULT_WAIT,
                "GangGroup": ["default/ganga"],
            }
        },
        id="add pod announcing Gang in lightweight-coscheduling way",
    ),
    pytest.param(
        [
            kpod("pod3", ann=_ann("gangb", min="xxx")),
            kpod(
                "pod4",
                ann=_ann(
                    "gangb",
                    min="2",
                    total="1",
                    mode="WenShiqi222",
                    wait="WenShiqi222",
                    groups="ganga,gangx",
                ),
            ),
        ],
        {
            "default/gangb": {
                "HasGangInit": True,
                "GangFrom": "PodAnnotation",
                "MinRequiredNumber": 2,
                "TotalChildrenNum": 2,
                "Mode": "Strict",
                "GangMatchPolicy": "once-satisfied",
                "WaitTime": KOORD_DEFAULT_WAIT,
                "GangGroup": ["default/gangb"],
                "Children": ["default/pod3", "default/pod4"],
                "PendingChildren": ["default/pod3", "default/pod4"],
                "WaitingForBindChildren": [],
                "BoundChildren": [],
                "OnceResourceSatisfied": False,
                "Namespace": "default",
            }
        },
        id="add pods announcing Gang in Annotation way,but with illegal args",
    ),
    pytest.param(
        [
            kpod("pod5", ann=_ann("gangc", min="0", wait="0", groups="[a,b]")),
            kpod("pod6", ann=_ann("gangd", min="0", wait="-20s", groups="[a,b]")),
        ],
        {
            f"default/gang{x}": {
                "HasGangInit": True,
                "GangFrom": "PodAnnotation",
                "MinRequiredNumber": 0,
                "TotalChildrenNum": 0,
                "Mode": "Strict",
                "GangMatchPolicy": "once-satisfied",
                "WaitTime": KOORD_DEFAULT_WAIT,
                "GangGroup": [f"default/gang{x}"],
                "Children": [f"default/pod{n}"],
                "PendingChildren": [f"default/pod{n}"],
                "WaitingForBindChildren": [],
                "BoundChildren": [],
                "OnceResourceSatisfied": False,
                "Namespace": "default",
            }
            for x, n in (("c", 5), ("d", 6))
        },
        id="add pods announcing Gang in Annotation way,but with illegal args#01",
    ),
]


def _views(k: Koord) -> dict[str, dict[str, Any]]:
    return {st.id.partition(":")[2]: gang_view(k, st) for st in k.cache.gangs()}


@pytest.mark.parametrize(("pods", "want"), ON_POD_ADD)
def test_GangCache_OnPodAdd(pods: list[Any], want: dict[str, Any]) -> None:
    k = Koord()
    k.add(*pods)
    assert _views(k) == want
    for gid, view in want.items():
        st = k.gang(*gid.split("/"))
        assert st is not None
        if view["MinRequiredNumber"] == 0:
            # Koordinator's minimum 0 passes every check: the pods are ordinary pods.
            assert all(k.manager.admit(m).ok for m in st.members)


@pytest.mark.parametrize(
    ("pods", "want"),
    [
        pytest.param([kpod("empty")], {}, id="add invalid pod"),
        pytest.param(
            [GANGA_POD1, GANGA_POD2],
            {"default/ganga": GANGA_WANT},
            id="add pod announcing Gang in Annotation way",
        ),
    ],
)
def test_GangCache_OnPodUpdate(pods: list[Any], want: dict[str, Any]) -> None:
    k = Koord()
    for p in pods:
        k.cache.update_pod(p, p)
    assert _views(k) == want


@pytest.mark.parametrize(
    ("pods", "pgs", "want"),
    [
        pytest.param([kpod("pod1")], [], {}, id="delete invalid pod,has no gang"),
        pytest.param(
            [kpod("pod2", "wenshiqi", labels_={"test": "gang"}, ann={"test": "gang"})],
            [],
            {},
            id="delete invalid pod2,gang has not find",
        ),
        pytest.param(
            [kpod("pod3", ann={NAME: "gangA"}), kpod("pod4", ann={NAME: "gangA"})],
            [],
            {},
            id="delete gangA's pods one by one,finally gangA should be deleted",
        ),
        pytest.param(
            [kpod("pod5", pg="gangB"), kpod("pod6", pg="gangB")],
            [make_pg("gangB", min_member=4)],
            {
                "default/gangB": {
                    "HasGangInit": True,
                    "GangFrom": "PodGroupCrd",
                    "MinRequiredNumber": 4,
                    "TotalChildrenNum": 4,
                    "Mode": "Strict",
                    "GangMatchPolicy": "once-satisfied",
                    "WaitTime": 10.0,
                    "GangGroup": ["default/gangB"],
                    "Children": [],
                    "PendingChildren": [],
                    "WaitingForBindChildren": [],
                    "BoundChildren": [],
                    "OnceResourceSatisfied": False,
                    "Namespace": "default",
                }
            },
            id="delete gangB's pods one by one,but gangB is created by CRD",
        ),
    ],
)
def test_GangCache_OnPodDelete(pods: list[Any], pgs: list[Any], want: dict[str, Any]) -> None:
    k = Koord()
    k.add_pg(*pgs)
    k.add(*pods)
    for p in pods:
        k.delete(p)
    assert _views(k) == want


@pytest.mark.parametrize(
    ("pg", "want"),
    [
        pytest.param(
            make_pg(
                "gangA",
                min_member=2,
                timeout=300,
                ann={MODE: "NonStrict", GROUPS: '["default/gangA","default/gangB"]'},
            ),
            {
                "Mode": "NonStrict",
                "MinRequiredNumber": 2,
                "TotalChildrenNum": 2,
                "GangGroup": ["default/gangA", "default/gangB"],
            },
            id="update podGroup with annotations",
        ),
        pytest.param(
            make_pg(
                "gangA",
                min_member=4,
                timeout=300,
                ann={MODE: "WenShiqi222", GROUPS: "a,b", TOTAL: "2"},
            ),
            {
                "Mode": "Strict",
                "MinRequiredNumber": 4,
                "TotalChildrenNum": 4,
                "GangGroup": ["default/gangA"],
            },
            id="update podGroup with illegal annotations",
        ),
    ],
)
def test_GangCache_OnPodGroupAdd(pg: Any, want: dict[str, Any]) -> None:
    k = Koord()
    k.add_pg(pg)
    st = k.gang("default", "gangA")
    assert st is not None
    assert gang_view(k, st) == {
        "HasGangInit": True,
        "GangFrom": "PodGroupCrd",
        "GangMatchPolicy": "once-satisfied",
        "WaitTime": 300.0,
        "Children": [],
        "PendingChildren": [],
        "WaitingForBindChildren": [],
        "BoundChildren": [],
        "OnceResourceSatisfied": False,
        "Namespace": "default",
        **want,
    }


def test_GangCache_OnGangDelete() -> None:
    k = Koord()
    # case1: a gang made from a PodGroup goes with the PodGroup.
    pg = make_pg("ganga")
    k.add_pg(pg)
    assert k.gang("default", "ganga") is not None
    k.delete_pg(pg)
    assert k.cache.gangs() == []
    # case2: a gang its pods declare is untouched by the deletion of a PodGroup.
    pod = kpod(
        "pod1",
        ann=_ann(
            "gangb",
            min="2",
            wait="30s",
            mode="NonStrict",
            groups='["default/gangA","default/gangB"]',
        ),
        node="nba",
    )
    k.add(pod)
    k.delete_pg(make_pg("gangb"))
    st = k.gang("default", "gangb")
    assert st is not None
    assert gang_view(k, st) == {
        "HasGangInit": True,
        "GangFrom": "PodAnnotation",
        "MinRequiredNumber": 2,
        "TotalChildrenNum": 2,
        "Mode": "NonStrict",
        "GangMatchPolicy": "once-satisfied",
        "WaitTime": 30.0,
        # Deliberate difference: the gang is part of its own group.
        "GangGroup": ["default/gangA", "default/gangB", "default/gangb"],
        "Children": ["default/pod1"],
        "PendingChildren": [],
        "WaitingForBindChildren": [],
        "BoundChildren": ["default/pod1"],
        "OnceResourceSatisfied": True,
        "Namespace": "default",
    }


def test_GangCache_onPodGroupUpdate() -> None:
    k = Koord()
    pg = make_pg("ganga", min_member=2, timeout=None)
    k.add_pg(pg)
    st = k.gang("default", "ganga")
    assert st is not None and st.spec is not None and st.spec.min_member == 2
    newer = pg.copy_deep()
    newer.spec.min_member = 3
    k.cache.set_object(k.source, newer)
    assert st.spec is not None and st.spec.min_member == 3


def _unit_keys(k: Koord) -> list[str]:
    return k.manager.units.keys()


def test_OnPodAdd_OnPodDeleteWithGangGroupInfo() -> None:
    k = Koord()
    k.add(GANGA_POD1, GANGA_POD2)
    st = k.gang("default", "ganga")
    assert st is not None
    k.manager.unit(st)  # the group's shared state (representative, deadline), made on use
    assert _unit_keys(k) == [k.manager.unit_key(st)]
    k.delete(GANGA_POD1)
    assert _unit_keys(k) == [k.manager.unit_key(st)]
    k.delete(GANGA_POD2)
    assert _unit_keys(k) == []


def test_OnPgAdd_OnPgDeleteWithGangGroupInfo() -> None:
    k = Koord()
    pg = make_pg("ganga", min_member=2, ann={MODE: "NonStrict"})
    pod1, pod2 = kpod("pod1", pg="ganga", node="nba"), kpod("pod2", pg="ganga")
    k.add(pod1)
    assert _unit_keys(k) == []
    k.add_pg(pg)
    k.add(pod2)
    st = k.gang("default", "ganga")
    assert st is not None
    k.manager.unit(st)
    assert _unit_keys(k) == [k.manager.unit_key(st)]
    k.delete(pod1)
    assert _unit_keys(k) == [k.manager.unit_key(st)]
    k.delete(pod2)
    assert _unit_keys(k) == [k.manager.unit_key(st)]
    k.delete_pg(pg)
    assert _unit_keys(k) == []


def _group_pods(k: Koord, group: list[str], of: str) -> list[str]:
    out: list[str] = []
    for name in group:
        st = k.gang("default", name)
        if st is not None:
            (
                out.extend(m.key for m in st.pending_members())
                if of == "pending"
                else out.extend(sorted(st.assumed))
            )
    return out


THREE_GANGS = [kpod("pod1", pg="gangA"), kpod("pod2", pg="gangB"), kpod("pod3", pg="gangC")]


@pytest.mark.parametrize("case", [pytest.param(None, id="normal flow")])
def test_GangCache_getPendingPods(case: None) -> None:
    k = Koord()
    k.add(*THREE_GANGS)
    assert _group_pods(k, ["gangA", "gangB"], "pending") == ["default/pod1", "default/pod2"]


@pytest.mark.parametrize("case", [pytest.param(None, id="normal flow")])
def test_GangCache_getPendingPodsNum(case: None) -> None:
    k = Koord()
    k.add(*THREE_GANGS)
    assert len(_group_pods(k, ["gangA", "gangB"], "pending")) == 2


def _assumed_three(k: Koord) -> None:
    k.add(*THREE_GANGS)
    for p in THREE_GANGS:
        k.cache.assume(p.key, "node-1")


@pytest.mark.parametrize("case", [pytest.param(None, id="normal flow")])
def test_GangCache_getWaitingPods(case: None) -> None:
    k = Koord()
    _assumed_three(k)
    assert _group_pods(k, ["gangA", "gangB"], "waiting") == ["default/pod1", "default/pod2"]


@pytest.mark.parametrize("case", [pytest.param(None, id="normal flow")])
def test_GangCache_getWaitingPodsNum(case: None) -> None:
    k = Koord()
    _assumed_three(k)
    assert len(_group_pods(k, ["gangA", "gangB"], "waiting")) == 2


TOMBSTONE_POD = kpod("pod1", ann={NAME: "ganga", MIN: "1"})


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(TOMBSTONE_POD, id="valid tombstone deletes pod from gang cache"),
        pytest.param("not-a-pod", id="non-pod tombstone is ignored without panic"),
        pytest.param(42, id="unknown object type is ignored without panic"),
    ],
)
def test_GangCache_onPodDelete_Tombstone(obj: Any) -> None:
    k = Koord()
    k.add(TOMBSTONE_POD)
    assert k.gang("default", "ganga") is not None
    GangRuntime._guard(k.cache.delete_pod)(obj)  # as the runtime registers the handler
    st = k.gang("default", "ganga")
    if obj is TOMBSTONE_POD:
        # A gang its pods declared goes with its last pod.
        assert st is None or not st.members
    else:
        assert st is not None and len(st.members) == 1


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(
            make_pg("ganga", min_member=2), id="valid tombstone removes podgroup gang from cache"
        ),
        pytest.param("not-a-podgroup", id="non-podgroup tombstone is ignored without panic"),
        pytest.param(42, id="unknown object type is ignored without panic"),
    ],
)
def test_GangCache_onPodGroupDelete_Tombstone(obj: Any) -> None:
    k = Koord()
    k.add_pg(make_pg("ganga", min_member=2))
    GangRuntime._guard(lambda o: k.cache.delete_object(k.source, o))(obj)
    if isinstance(obj, str | int):
        assert [st.id for st in k.cache.gangs()] == ["coscheduling:default/ganga"]
    else:
        assert k.cache.gangs() == []


def test_not_initialised_gang_says_why_it_waits() -> None:
    """The CRD-way row above, in PreEnqueue: the pod waits for its PodGroup, and says so."""
    k = Koord()
    k.add(kpod("crdPod", pg="test"))
    adm = k.manager.admit("default/crdPod")
    assert not adm.ok and adm.reason == Phase.NOT_FOUND and "default/test" in adm.message


def test_a_bound_member_marks_its_group_satisfied_and_wakes_the_held_pods() -> None:
    """koord-scheduler (as Koordinator's addBoundPod): a member found bound, e.g. by a
    scheduler that restarted after its gang passed Permit, marks the whole gang group; the
    group's pods held in PreEnqueue are activated, not left waiting for a retry."""
    k = Koord()
    groups = '["default/ganga","default/gangb"]'
    k.add_pg(make_pg("ganga", ann={GROUPS: groups}), make_pg("gangb", ann={GROUPS: groups}))
    held = kpod("b-0", pg="gangb")
    k.add(held)
    assert not k.manager.admit(held.key).ok  # gang group incomplete: ganga has no member
    k.activated.clear()
    k.add(kpod("a-0", pg="ganga", node="n1"))
    assert k.gang("default", "gangb").once_satisfied
    assert [held.key] in k.activated and k.manager.admit(held.key).ok
