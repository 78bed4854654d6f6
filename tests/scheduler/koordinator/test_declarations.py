"""How koord-scheduler pods declare their gangs, on the embedded scheduler (issue 21, items 3,
4 and 6): invalid annotations are ignored as Koordinator ignores them or named in a Warning
Event, never waited on in silence; which declaration wins; match policies and the
lightweight-coscheduling labels.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.core import Event, Pod
from phalanx.api.scheduling import CoschedulingPodGroup
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang import GangMode

from ..helpers import node, pod, run_scheduler
from .kit import (
    GROUPS,
    LIGHT_MIN,
    LIGHT_NAME,
    MATCH_POLICY,
    MIN,
    MODE,
    NAME,
    PG_LABEL,
    Koord,
    kpod,
    make_pg,
)


def koord(
    name: str, *, ann: dict[str, str] | None = None, lbl: dict[str, str] | None = None, gpu: int = 1
) -> Pod:
    return pod(name, gpu=gpu, scheduler="koord-scheduler", annotations=ann, labels=lbl)


async def _events(client: MemoryCluster, reason: str) -> list[Event]:
    return [e for e in (await client.list(Event, "default")).items if e.reason == reason]


def run(
    objs: list[Any], *, gpus: int = 4, settle: float = 0.0
) -> tuple[dict[str, str | None], list[Event]]:
    """Create everything, let the scheduler settle; (pod -> node, GangNotFound Events)."""

    async def body(
        client: MemoryCluster, sched: Scheduler
    ) -> tuple[dict[str, str | None], list[Event]]:
        import asyncio

        for o in objs:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        if settle:
            await asyncio.sleep(settle)
            assert await sched.wait_idle(timeout=60)
        nodes = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        return nodes, await _events(client, "GangNotFound")

    return run_scheduler(body, nodes=[node("n1", gpu=gpus)])


# --- item 3: invalid annotations --------------------------------------------------------------


@pytest.mark.parametrize("groups", ["ganga,gangx", "[a,b]", '"default/ganga"', "[1,2]"])
def test_a_groups_value_that_is_not_a_json_list_is_ignored(groups: str) -> None:
    ann = {NAME: "g", MIN: "2", GROUPS: groups}
    nodes, _ = run([koord("a", ann=ann), koord("b", ann=ann)])
    assert nodes == {"a": "n1", "b": "n1"}


def test_min_available_zero_makes_ordinary_pods() -> None:
    nodes, events = run([koord("a", ann={NAME: "g", MIN: "0"})], settle=10)
    assert nodes == {"a": "n1"} and events == []


def test_an_invalid_min_available_waits_with_a_warning_naming_it() -> None:
    nodes, events = run([koord("a", ann={NAME: "g", MIN: "xxx"})], settle=10)
    assert nodes == {"a": None}
    assert len(events) == 1 and events[0].type == "Warning"
    assert (
        "gang.scheduling.koordinator.sh/min-available 'xxx' is not an integer" in events[0].message
    )


def test_a_gang_name_without_a_minimum_says_so() -> None:
    nodes, events = run([koord("a", ann={NAME: "g"})], settle=10)
    assert nodes == {"a": None}
    assert (
        len(events) == 1
        and "no gang.scheduling.koordinator.sh/min-available annotation" in events[0].message
    )


def test_a_later_valid_declaration_lets_the_gang_run() -> None:
    """Koordinator's "illegal args" row, scheduled: pod3's minimum is invalid, pod4's is 2."""
    nodes, _ = run(
        [
            koord("pod3", ann={NAME: "gangb", MIN: "xxx"}),
            koord("pod4", ann={NAME: "gangb", MIN: "2", MODE: "WenShiqi222"}),
        ]
    )
    assert nodes == {"pod3": "n1", "pod4": "n1"}


# --- item 4: which declaration wins ---------------------------------------------------------


def test_a_pod_with_the_podgroup_label_waits_for_its_podgroup() -> None:
    """Its gang annotations are never read: it waits for the PodGroup, then binds."""
    ann = {NAME: "g", MIN: "1"}

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[Any, Any]:
        await client.create(koord("a", ann=ann, lbl={PG_LABEL: "g"}))
        assert await sched.wait_idle(timeout=30)
        before = (await client.get(Pod, "a", "default")).spec.node_name
        await client.create(make_pg("g", min_member=1))
        assert await sched.wait_idle(timeout=30)
        return before, (await client.get(Pod, "a", "default")).spec.node_name

    before, after = run_scheduler(body, nodes=[node("n1", gpu=1)])
    assert before is None and after == "n1"


def test_a_podgroup_reads_its_spec_not_min_available_or_waiting_time() -> None:
    k = Koord()
    k.add_pg(
        make_pg(
            "g",
            min_member=3,
            timeout=30,
            ann={MIN: "1", "gang.scheduling.koordinator.sh/waiting-time": "5s"},
        )
    )
    st = k.gang("default", "g")
    assert st is not None and st.spec is not None
    assert st.spec.min_member == 3 and st.spec.schedule_timeout == 30.0


def test_a_podgroup_overrides_the_pods_declaration() -> None:
    k = Koord()
    k.add(kpod("a", ann={NAME: "g", MIN: "1"}))
    k.add_pg(make_pg("g", min_member=2))
    st = k.gang("default", "g")
    assert st is not None and st.spec is not None and st.spec.min_member == 2
    assert not k.manager.admit("default/a").ok


@pytest.mark.parametrize(
    ("mode", "want"),
    [
        ("NonStrict", GangMode.NON_STRICT),
        ("nonstrict", GangMode.STRICT),
        ("Non-Strict", GangMode.STRICT),
        ("strict", GangMode.STRICT),
    ],
)
def test_mode_is_case_sensitive(mode: str, want: GangMode) -> None:
    k = Koord()
    k.add_pg(make_pg("g", ann={MODE: mode}))
    k.add(kpod("a", ann={NAME: "h", MIN: "1", MODE: mode}))
    assert k.gang("default", "g").spec.mode is want and k.gang("default", "h").spec.mode is want


def test_a_podgroup_gang_stays_satisfied_while_the_podgroup_exists() -> None:
    """Every pod of a bound gang deleted, one new pod created: it schedules alone. The
    PodGroup deleted and created again: the gang starts over."""

    async def body(client: MemoryCluster, sched: Scheduler) -> tuple[Any, Any]:
        pg = make_pg("g", min_member=2)
        await client.create(pg)
        for n in ("a", "b"):
            await client.create(koord(n, lbl={PG_LABEL: "g"}))
        assert await sched.wait_idle(timeout=30)
        for n in ("a", "b"):
            await client.delete(Pod, n, "default")
        await client.create(koord("c", lbl={PG_LABEL: "g"}))
        assert await sched.wait_idle(timeout=30)
        c = (await client.get(Pod, "c", "default")).spec.node_name
        await client.delete(CoschedulingPodGroup, "g", "default")
        await client.delete(Pod, "c", "default")
        assert await sched.wait_idle(timeout=30)
        await client.create(make_pg("g", min_member=2))
        await client.create(koord("d", lbl={PG_LABEL: "g"}))
        assert await sched.wait_idle(timeout=30)
        return c, (await client.get(Pod, "d", "default")).spec.node_name

    c, d = run_scheduler(body, nodes=[node("n1", gpu=4)])
    assert c == "n1" and d is None


# --- item 6: match policies and lightweight labels -----------------------------------------------


def _replacement(policy: str | None) -> dict[str, str | None]:
    """A gang of 3 binds; one member is deleted and a replacement created."""
    ann = {MATCH_POLICY: policy} if policy else {}

    async def body(client: MemoryCluster, sched: Scheduler) -> dict[str, str | None]:
        import asyncio

        await client.create(make_pg("g", min_member=3, timeout=30, ann=ann))
        for n in ("a", "b", "c"):
            await client.create(koord(n, lbl={PG_LABEL: "g"}))
        assert await sched.wait_idle(timeout=30)
        await client.delete(Pod, "a", "default")
        await client.create(koord("r", lbl={PG_LABEL: "g"}))
        await asyncio.sleep(60)  # past the gang's 30 s wait (only-waiting keeps retrying)
        return {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}

    return run_scheduler(body, nodes=[node("n1", gpu=4)])


@pytest.mark.parametrize(
    ("policy", "bound"),
    [
        (None, True),
        ("once-satisfied", True),
        ("waiting-and-running", True),
        ("only-waiting", False),
    ],
)
def test_match_policy_decides_whether_a_replacement_needs_a_new_minimum(
    policy: str | None, bound: bool
) -> None:
    """once-satisfied: the gang ran once, the replacement is an ordinary pod.
    waiting-and-running: 2 running + 1 waiting reach the minimum of 3.
    only-waiting: 1 waiting of 3 needed: it waits out the gang's 30 s and is released."""
    nodes = _replacement(policy)
    assert nodes["b"] == nodes["c"] == "n1"
    assert (nodes["r"] is not None) == bound


def test_lightweight_coscheduling_labels_declare_a_gang() -> None:
    lbl = {LIGHT_NAME: "g", LIGHT_MIN: "2"}
    nodes, _ = run([koord("a", lbl=lbl), koord("b", lbl=lbl)], gpus=1)
    assert nodes == {"a": None, "b": None}  # a gang of 2 on 1 GPU: neither binds
    nodes, _ = run([koord("a", lbl=lbl), koord("b", lbl=lbl)], gpus=2)
    assert nodes == {"a": "n1", "b": "n1"}


def test_the_lightweight_minimum_label_wins_over_the_annotation() -> None:
    k = Koord()
    k.add(kpod("a", labels_={LIGHT_NAME: "g", LIGHT_MIN: "3"}, ann={MIN: "1"}))
    st = k.gang("default", "g")
    assert st is not None and st.spec is not None and st.spec.min_member == 3


def test_a_podgroup_with_min_member_zero_makes_ordinary_pods() -> None:
    """Koordinator's minimum of 0 passes every check: the pods are ordinary pods."""
    nodes, _ = run(
        [
            make_pg("g", min_member=0),
            koord("a", lbl={PG_LABEL: "g"}),
            koord("b", lbl={PG_LABEL: "g"}),
        ],
        gpus=1,
    )
    assert sorted(n for n in nodes.values() if n) == ["n1"]  # one binds: no gang holds it back
