"""No gang is ever partly bound, whatever the workload (hypothesis-generated).

Each example builds a small cluster and a mix of gangs (Strict and NonStrict, sub-groups,
priorities, some larger than the cluster) plus plain pods, runs the real scheduler to idle on
virtual time, and checks two things: at every bind, the pod's gang had minMember members
assumed or bound (a pod is bound only once its whole gang was placed); and at the end every
gang has either none or at least minMember members bound. Preemption is on, so victims of
higher-priority gangs come and go during the run. It also bounds the scheduling attempts, so
no mix of gangs can make the scheduler retry in a tight loop.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from phalanx.api import labels
from phalanx.api.scheduling import CoschedulingPodGroup
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.gang.runtime import GangRuntime

from ..helpers import node, pod
from .builders import assert_no_partial_gang, bound_by_gang, members, podgang

gang_st = hst.fixed_dictionaries(
    {
        "groups": hst.lists(hst.integers(1, 3), min_size=1, max_size=2),  # min per sub-group
        "extra": hst.integers(0, 1),  # members beyond minMember
        "gpu": hst.integers(0, 2),
        "priority": hst.sampled_from([0, 10, 100]),
        "koord_non_strict": hst.booleans(),  # a Koordinator NonStrict gang instead of a PodGang
    }
)
workload_st = hst.fixed_dictionaries(
    {
        "nodes": hst.lists(hst.integers(1, 4), min_size=1, max_size=4),  # GPUs per node
        "gangs": hst.lists(gang_st, min_size=1, max_size=5),
        "singles": hst.integers(0, 3),
    }
)


def _objects(w: dict[str, Any]) -> tuple[list[Any], dict[str, int]]:
    objs: list[Any] = []
    minimum: dict[str, int] = {}
    for gi, g in enumerate(w["gangs"]):
        name = f"g{gi}"
        kw = {"gpu": g["gpu"], "cpu": "100m", "memory": "64Mi", "priority": g["priority"]}
        if g["koord_non_strict"]:
            n = sum(g["groups"])
            objs.append(CoschedulingPodGroup.model_validate({
                "metadata": {"name": name, "namespace": "default", "annotations": {labels.ANNOTATION_KOORD_GANG_MODE: "NonStrict"}},
                "spec": {"minMember": n, "scheduleTimeoutSeconds": 20},
            }))
            for i in range(n + g["extra"]):
                objs.append(pod(f"{name}-{i}", scheduler=labels.SCHEDULER_KOORDINATOR,
                                labels={labels.LABEL_POD_GROUP: name, labels.LABEL_PODGANG: name}, **kw))
            minimum[name] = n
            continue
        groups = {f"{name}-c{ci}": m for ci, m in enumerate(g["groups"])}
        objs.append(podgang(name, groups))
        for ci, (grp, m) in enumerate(groups.items()):
            objs.extend(members(name, grp, m + (g["extra"] if ci == 0 else 0), **kw))
        minimum[name] = sum(groups.values())
    for i in range(w["singles"]):
        objs.append(pod(f"single-{i}", gpu=1, cpu="100m", memory="64Mi", priority=50))
    return objs, minimum


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload_st)
def test_no_gang_is_ever_partly_bound(w: dict[str, Any]) -> None:
    objs, minimum = _objects(w)
    violations: list[str] = []

    async def main() -> dict[str, list[str | None]]:
        client = MemoryCluster()
        for i, gpus in enumerate(w["nodes"]):
            await client.create(node(f"n{i}", gpu=gpus, cpu="16"))
        sched = Scheduler(client)
        runtime = GangRuntime.for_handle(sched.handles[labels.SCHEDULER_PHALANX])
        real_bind = client.bind

        async def checked_bind(name: str, namespace: str, node_name: str) -> None:
            st = runtime.cache.gang_of(f"{namespace}/{name}")
            if st is not None and st.spec is not None and st.spec.is_gang and not st.once_satisfied:
                violations.append(f"{name} bound before its gang was allowed")
            if st is not None and st.spec is not None and st.placed < st.spec.min_member and not st.bound:
                violations.append(f"{name} bound with only {st.placed}/{st.spec.min_member} of its gang placed")
            await real_bind(name, namespace, node_name)

        client.bind = checked_bind  # type: ignore[method-assign]
        await sched.start()
        for o in objs:
            await client.create(o)
        await sched.wait_idle(timeout=600)
        out = await bound_by_gang(client)
        attempts.append(sched.attempts)
        await sched.stop()
        return out

    attempts: list[int] = []
    bound = run_virtual(main)
    assert violations == []
    # No retry storm: with backoff, a pod is tried a few dozen times in 10 virtual minutes.
    pods = sum(1 for o in objs if o.kind == "Pod")
    assert attempts[0] <= 100 * pods, f"{attempts[0]} scheduling attempts for {pods} pods"
    assert_no_partial_gang(bound, minimum)
