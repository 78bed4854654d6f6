"""The same scheduler gang-schedules every backend's objects: all or nothing, and the
object of each kind carries the GangScheduled condition."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.base import Resource
from phalanx.api.core import Event
from phalanx.api.pod import WorkloadReference
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup, Workload
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED

from ..helpers import bound_nodes, node, pod, run_scheduler
from ..without_crd import WithoutCRD


def _workload(n: int) -> tuple[Resource, list[Any]]:
    wl = Workload.model_validate({"metadata": {"name": "g", "namespace": "default"},
                                  "spec": {"podGroups": [{"name": "w", "policy": {"gang": {"minCount": n}}}]}})
    pods = [pod(f"p-{i}", gpu=1, cpu="100m", scheduler=labels.SCHEDULER_DEFAULT) for i in range(n)]
    for p in pods:
        p.spec.workload_ref = WorkloadReference(name="g", pod_group="w")
    return wl, pods


def _kai(n: int) -> tuple[Resource, list[Any]]:
    pg = KaiPodGroup.model_validate({"metadata": {"name": "g", "namespace": "default"},
                                     "spec": {"minMember": n, "subGroups": [{"name": "a", "minMember": 1}, {"name": "b", "minMember": n - 1}]}})
    pods = [pod(f"p-{i}", gpu=1, cpu="100m", scheduler=labels.SCHEDULER_KAI,
                annotations={labels.ANNOTATION_KAI_POD_GROUP: "g"},
                labels={labels.LABEL_KAI_SUBGROUP: "a" if i == 0 else "b"}) for i in range(n)]
    return pg, pods


def _volcano(n: int) -> tuple[Resource, list[Any]]:
    pg = VolcanoPodGroup.model_validate({"metadata": {"name": "g", "namespace": "default"},
                                         "spec": {"minMember": n, "minTaskMember": {"t": n}}})
    pods = [pod(f"p-{i}", gpu=1, cpu="100m", scheduler=labels.SCHEDULER_VOLCANO,
                annotations={labels.ANNOTATION_VOLCANO_GROUP_NAME: "g", labels.ANNOTATION_VOLCANO_TASK_SPEC: "t"})
            for i in range(n)]
    return pg, pods


def _coscheduling(n: int) -> tuple[Resource, list[Any]]:
    pg = CoschedulingPodGroup.model_validate({"metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": n}})
    pods = [pod(f"p-{i}", gpu=1, cpu="100m", scheduler=labels.SCHEDULER_KOORDINATOR,
                labels={labels.LABEL_POD_GROUP: "g"}) for i in range(n)]
    return pg, pods


BACKENDS = {"workload": _workload, "kai": _kai, "volcano": _volcano, "coscheduling": _coscheduling}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("gpus", [4, 3])
def test_each_backend_gang_is_all_or_nothing(backend: str, gpus: int) -> None:
    """The verdict is on the object where its schema has conditions; the coscheduling
    PodGroup's has none (Koordinator's CRD), so there only the pods' Events say it."""
    obj, pods = BACKENDS[backend](4)

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        live = await client.get(type(obj), "g", "default")
        conditions = getattr(live.status, "conditions", None)
        cond = next((c for c in conditions or () if c.type == CONDITION_GANG_SCHEDULED), None)
        warnings = [e.message for e in (await client.list(Event, "default")).items
                    if e.type == "Warning" and e.involved_object.kind == "Pod"]
        return await bound_nodes(client), cond, conditions is not None, warnings

    nodes, cond, has_conditions, warnings = run_scheduler(
        body, nodes=[node("n1", gpu=gpus)], pods=[obj, *pods])
    placed = [n for n in nodes.values() if n]
    assert has_conditions == (backend != "coscheduling")
    if gpus == 4:
        assert len(placed) == 4
        assert cond is not None and cond.status == "True" if has_conditions else cond is None
        return
    assert placed == []
    why = "without room for the whole gang"
    if has_conditions:
        assert cond is not None and cond.status == "False" and cond.reason == "Unschedulable"
        assert why in cond.message
        assert "needs 4 pods like this one, these nodes fit 3" in cond.message
    else:
        assert cond is None and warnings and all(why in m for m in warnings), warnings


def test_koordinator_gang_group_is_placed_together_or_not_at_all() -> None:
    """Two PodGroups in one gang group: room for one but not both means neither is bound."""
    group = '["default/a", "default/b"]'
    objs: list[Any] = []
    for name in ("a", "b"):
        objs.append(CoschedulingPodGroup.model_validate({
            "metadata": {"name": name, "namespace": "default", "annotations": {labels.ANNOTATION_KOORD_GANG_GROUPS: group}},
            "spec": {"minMember": 2},
        }))
        objs.extend(pod(f"{name}-{i}", gpu=1, cpu="100m", scheduler=labels.SCHEDULER_KOORDINATOR,
                        labels={labels.LABEL_POD_GROUP: name}) for i in range(2))

    async def body(client: MemoryCluster, sched: Scheduler):
        assert await sched.wait_idle(timeout=60)
        return await bound_nodes(client)

    assert set(run_scheduler(body, nodes=[node("n1", gpu=3)], pods=objs).values()) == {None}
    assert all(run_scheduler(body, nodes=[node("n1", gpu=4)], pods=objs).values())


def test_a_server_without_a_backends_crds_does_not_keep_the_scheduler_from_starting() -> None:
    """A real cluster may lack Volcano's CRDs: the scheduler starts, watches what is served,
    gang-schedules the rest, and holds pods of the missing kind as GangNotFound."""
    from phalanx.cluster.clock import run_virtual

    from .builders import bound_by_gang, members, podgang

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        client = WithoutCRD(VolcanoPodGroup)
        await client.create(node("n1", gpu=8))
        sched = Scheduler(client)
        await sched.start(sync_timeout=30)
        _, vpods = _volcano(2)
        for o in [podgang("g", {"w": 2}), *members("g", "w", 2, gpu=1), *vpods]:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        out = await bound_by_gang(client), await bound_nodes(client)
        await sched.stop()
        return out

    by_gang, nodes = run_virtual(main)
    assert all(by_gang["g"]) and nodes["p-0"] is None and nodes["p-1"] is None


def test_a_backends_crds_installed_after_the_scheduler_started_are_read() -> None:
    """Volcano's CRDs installed after the scheduler started: its PodGroups are read once
    discovery serves them (deferred_informers.py), and their pods scheduled, with no restart.
    Until then the pods wait as GangNotFound, saying the kind is not served."""
    from phalanx.cluster.clock import run_virtual
    from phalanx.cluster.deferred_informers import RECHECK_SECONDS

    async def main() -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        client = WithoutCRD(VolcanoPodGroup)
        await client.create(node("n1", gpu=8))
        sched = Scheduler(client)
        await sched.start(sync_timeout=30)
        group, vpods = _volcano(2)
        for o in vpods:
            await client.create(o)
        assert await sched.wait_idle(timeout=60)
        before = await bound_nodes(client)
        reasons = sorted({f"{e.reason}: {e.message}"
                          for e in (await client.list(Event, "default")).items})
        client.install()
        await client.create(group)
        await asyncio.sleep(RECHECK_SECONDS + 1)
        assert await sched.wait_idle(timeout=60)
        after = await bound_nodes(client)
        await sched.stop()
        return before, reasons, after

    before, reasons, after = run_virtual(main)
    assert before == {"p-0": None, "p-1": None}
    assert ("GangNotFound: gang default/g: gang default/g not found: waiting for its "
            "scheduling object; "
            "scheduling.volcano.sh/v1beta1 PodGroup is not served by the API server (is its "
            "CRD installed?): it is read once it is") in reasons, reasons
    assert all(after.values()), after
