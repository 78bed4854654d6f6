"""The gang status controller retries a condition write the API refused (reliability
engineer: under injected 500s, some gangs kept no GangScheduled condition at all)."""

from __future__ import annotations

from phalanx.api.podgang import PodGang
from phalanx.cluster.client import ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler import Scheduler
from phalanx.scheduler.bench import make_gangs, make_nodes
from phalanx.scheduler.gang_status import CONDITION_GANG_SCHEDULED


def test_a_failed_condition_write_is_retried() -> None:
    async def main() -> tuple[str | None, int]:
        cluster = MemoryCluster()
        for node in make_nodes(4):
            await cluster.create(node)
        [(gang, pods)] = make_gangs(4, 4, 4, seed=1)
        await cluster.create(gang)
        for pod in pods:
            await cluster.create(pod)
        refused = []

        def fail_first_podgang_status(verb: str, kind: str, key: str) -> ServerError | None:
            # The condition goes as a patch of the informer's copy (else read and updated).
            if verb in ("patch", "update_status") and kind == "PodGang" and not refused:
                refused.append(key)
                return ServerError("injected", kind=kind, name=key)
            return None

        cluster.faults.add_hook(fail_first_podgang_status)
        sched = Scheduler(cluster)
        await sched.start()
        await sched.wait_idle(timeout=60)
        await sched.stop()
        got = await cluster.get(PodGang, gang.name, gang.namespace)
        cond = next((c for c in got.status.conditions if c.type == CONDITION_GANG_SCHEDULED), None)
        return (cond.status if cond else None), len(refused)

    status, refused = run_virtual(main)
    assert refused == 1
    assert status == "True"
