"""A scheduler (re)started on a cluster where a gang is already bound knows the gang was
satisfied (reliability engineer: found by the kill/restart test, where such gangs never got
`GangScheduled=True` and a later member would have waited for a gang that already runs)."""

from __future__ import annotations

from phalanx.api.podgang import PodGang
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes
from phalanx.scheduler.gang.runtime import SHARED_KEY
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED


def test_gang_bound_before_the_scheduler_started_is_reported_scheduled() -> None:
    async def main() -> tuple[bool | None, str | None]:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        [(gang, pods)] = make_gangs(4, 4, 4, seed=1)
        await cluster.create(gang)
        for i, pod in enumerate(pods):
            await cluster.create(pod)
            await cluster.bind(pod.name, pod.namespace or "bench", f"node-{i:05}")
        sched = Scheduler(cluster)
        await sched.start()
        await sched.wait_idle(timeout=60)
        runtime = sched.shared(SHARED_KEY, lambda: None)
        satisfied = next((st.once_satisfied for st in runtime.cache.gangs() if st.id.endswith(gang.name)), None)
        await sched.stop()
        got = await cluster.get(PodGang, gang.name, gang.namespace)
        cond = next((c for c in got.status.conditions if c.type == CONDITION_GANG_SCHEDULED), None)
        return satisfied, (cond.status if cond else None)

    satisfied, status = run_virtual(main)
    assert satisfied is True
    assert status == "True"
