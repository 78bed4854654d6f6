"""A gang is satisfied when every group reaches its own minimum; the scheduler places every
group's minimum first and never lets an extra member take the room a minimum needs.

The property (hypothesis, checked against brute force on small instances): whenever some
assignment of pods to nodes gives every group its minimum, the scheduler binds at least
that many of every group; when none does, it binds nothing. It holds for each backend's gang
object the embedded scheduler reads (PodGang groups, KAI subGroups, Volcano tasks, a
Workload with one pod group per PodGang group and the PodGang's label, a Koordinator gang
group), because they all reach the scheduler as the same gang model.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from phalanx.api import labels
from phalanx.api.core import Pod
from phalanx.api.pod import WorkloadReference
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup, Workload
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler

from ..helpers import node, pod
from .builders import podgang

# A group: its pods' shape (cpu cores, GPUs), how many pods, and its minimum.
group_st = hst.tuples(hst.integers(1, 4), hst.integers(0, 2), hst.integers(1, 3)).flatmap(
    lambda t: hst.tuples(hst.just(t[0]), hst.just(t[1]), hst.just(t[2]), hst.integers(1, t[2]))
)
instance_st = hst.fixed_dictionaries(
    {
        "nodes": hst.lists(
            hst.tuples(hst.sampled_from([2, 4, 6]), hst.integers(0, 2)), min_size=1, max_size=4
        ),
        "groups": hst.lists(group_st, min_size=1, max_size=3),
    }
)


def feasible(nodes: list[tuple[int, int]], groups: list[tuple[int, int, int, int]]) -> bool:
    """Brute force: can every group's minimum be placed at once?"""
    need = [(cpu, gpu) for cpu, gpu, _, mn in groups for _ in range(mn)]
    for choice in itertools.product(range(len(nodes)), repeat=len(need)):
        used = [[0, 0] for _ in nodes]
        for (cpu, gpu), n in zip(need, choice, strict=True):
            used[n][0] += cpu
            used[n][1] += gpu
        if all(u[0] <= c and u[1] <= g for u, (c, g) in zip(used, nodes, strict=True)):
            return True
    return False


def _pod(name: str, cpu: int, gpu: int, scheduler: str, **kw: Any) -> Pod:
    return pod(name, cpu=str(cpu), memory="64Mi", gpu=gpu, scheduler=scheduler, **kw)


def objects(
    backend: str, groups: list[tuple[int, int, int, int]]
) -> tuple[list[Any], dict[str, str]]:
    """The gang object(s) and pods for `backend`; pod name -> group."""
    names = [f"c{i}" for i in range(len(groups))]
    pods: list[Any] = []
    group_of: dict[str, str] = {}
    objs: list[Any] = []
    for gname, (cpu, gpu, replicas, mn) in zip(names, groups, strict=True):
        for r in range(replicas):
            pname = f"{gname}-{r}"
            group_of[pname] = gname
            if backend == "podgang":
                p = _pod(
                    pname,
                    cpu,
                    gpu,
                    labels.SCHEDULER_PHALANX,
                    labels={labels.LABEL_PODGANG: "g", labels.LABEL_PODCLIQUE: gname},
                )
            elif backend == "kai":
                p = _pod(
                    pname,
                    cpu,
                    gpu,
                    labels.SCHEDULER_KAI,
                    annotations={labels.ANNOTATION_KAI_POD_GROUP: "g"},
                    labels={labels.LABEL_KAI_SUBGROUP: gname},
                )
            elif backend == "volcano":
                p = _pod(
                    pname,
                    cpu,
                    gpu,
                    labels.SCHEDULER_VOLCANO,
                    annotations={
                        labels.ANNOTATION_VOLCANO_GROUP_NAME: "g",
                        labels.ANNOTATION_VOLCANO_TASK_SPEC: gname,
                    },
                )
            elif backend == "workload":
                p = _pod(pname, cpu, gpu, labels.SCHEDULER_DEFAULT)
                p.spec.workload_ref = WorkloadReference(name="g", pod_group=gname)
            else:  # koordinator: one PodGroup per group, all in one gang group
                p = _pod(
                    pname,
                    cpu,
                    gpu,
                    labels.SCHEDULER_KOORDINATOR,
                    labels={labels.LABEL_POD_GROUP: gname},
                )
            pods.append(p)
    mins = {n: g[3] for n, g in zip(names, groups, strict=True)}
    total = sum(mins.values())
    meta = {"name": "g", "namespace": "default"}
    if backend == "podgang":
        objs.append(podgang("g", mins))
    elif backend == "kai":
        objs.append(
            KaiPodGroup.model_validate(
                {
                    "metadata": meta,
                    "spec": {
                        "minMember": total,
                        "subGroups": [{"name": n, "minMember": m} for n, m in mins.items()],
                    },
                }
            )
        )
    elif backend == "volcano":
        objs.append(
            VolcanoPodGroup.model_validate(
                {"metadata": meta, "spec": {"minMember": total, "minTaskMember": mins}}
            )
        )
    elif backend == "workload":
        # A Workload mirroring a PodGang group by group (Phalanx's kube backend now writes one
        # pod group per PodGang, minCount = the sum: per-group minimums are not expressed).
        objs.append(
            Workload.model_validate(
                {
                    "metadata": {**meta, "labels": {labels.LABEL_PODGANG: "g"}},
                    "spec": {
                        "podGroups": [
                            {"name": n, "policy": {"gang": {"minCount": m}}}
                            for n, m in mins.items()
                        ]
                    },
                }
            )
        )
    else:
        together = json.dumps([f"default/{n}" for n in names])
        for n, m in mins.items():
            objs.append(
                CoschedulingPodGroup.model_validate(
                    {
                        "metadata": {
                            "name": n,
                            "namespace": "default",
                            "annotations": {labels.ANNOTATION_KOORD_GANG_GROUPS: together},
                        },
                        "spec": {"minMember": m},
                    }
                )
            )
    return objs + pods, group_of


def run(nodes: list[tuple[int, int]], objs: list[Any]) -> dict[str, str | None]:
    async def main() -> dict[str, str | None]:
        client = MemoryCluster()
        for i, (cpu, gpu) in enumerate(nodes):
            await client.create(node(f"n{i}", cpu=str(cpu), gpu=gpu, memory="8Gi"))
        sched = Scheduler(client)
        await sched.start()
        for o in objs:
            await client.create(o)
        assert await sched.wait_idle(timeout=600), (
            "scheduler did not settle within 10 virtual minutes"
        )
        out = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        await sched.stop()
        return out

    return run_virtual(main)


BACKENDS = ["podgang", "kai", "volcano", "workload", "koordinator"]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance_st)
def test_every_group_minimum_is_placed_whenever_some_assignment_exists(
    backend: str, inst: dict[str, Any]
) -> None:
    nodes, groups = inst["nodes"], inst["groups"]
    objs, group_of = objects(backend, groups)
    bound = run(nodes, objs)
    per_group: dict[str, int] = {}
    for name, n in bound.items():
        if n:
            per_group[group_of[name]] = per_group.get(group_of[name], 0) + 1
    mins = {f"c{i}": g[3] for i, g in enumerate(groups)}
    if feasible(nodes, groups):
        short = {g: (per_group.get(g, 0), m) for g, m in mins.items() if per_group.get(g, 0) < m}
        assert not short, (
            f"a placement of every minimum exists, but groups {short} (bound, minimum) "
            f"are short: {bound}"
        )
    else:
        assert not any(bound.values()), (
            f"no placement of every minimum exists, yet pods were bound: {bound}"
        )


def test_workload2_runs_one_pod_per_group_on_three_nodes_and_leaves_the_extras_pending() -> None:
    """Grove's workload2 base gang: pc-a 2 replicas (min 1), pc-b 1 (min 1), pc-c 3 (min 1),
    one pod per node, 3 free nodes. Grove/KAI run the minimum, one pod of each group."""
    groups = [(3, 0, 2, 1), (3, 0, 1, 1), (3, 0, 3, 1)]  # 3 cpu pods on 4-cpu nodes: one per node
    objs, group_of = objects("podgang", groups)
    bound = run([(4, 0)] * 3, objs)
    running = sorted(group_of[p] for p, n in bound.items() if n)
    assert running == ["c0", "c1", "c2"]
    assert len({n for n in bound.values() if n}) == 3


def test_a_group_that_fits_only_the_big_node_gets_it() -> None:
    """The small group comes first in creation order and would fit anywhere; the big
    member fits only on n0. Member by member, the small members could take n0; the
    whole-gang plan puts them on n1."""
    groups = [(1, 0, 2, 2), (5, 0, 1, 1)]
    objs, group_of = objects("podgang", groups)
    bound = run([(6, 0), (2, 0)], objs)
    assert bound["c1-0"] == "n0" and bound["c0-0"] and bound["c0-1"]
