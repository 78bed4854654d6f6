"""The room a reclaim frees belongs to the whole reclaiming gang until it is placed.

Found on the multi-tenant trace bench: a 16-pod gang reclaimed a 16-pod gang of an
over-share queue every 10 s for hours. Only the failed pod was nominated, so while the
reclaimer's other members waited in backoff, the victims' replacements (recreated by the
operator at once, equal priority) took the freed nodes back, and the next reclaim evicted
them again. KAI pipelines the whole reclaiming job onto the freed nodes; here every needed
member is nominated to the node planned for it, and the members keep or release that room
together.
"""

from __future__ import annotations

from phalanx.api import registry
from phalanx.api.core import Pod
from phalanx.api.queue import queue_dict
from phalanx.bench.stack import EmbeddedStack, NotSettled
from phalanx.bench.workload import gpu_cluster, job_podcliqueset
from phalanx.cluster.clock import run_virtual
from phalanx.scheduler.plugins.queuereclaim import QueueReclaim

QUEUE = "kai.scheduler/queue"
ALL = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def _job(name: str, queue: str, pods: int) -> object:
    pcs = job_podcliqueset(name, pods, 8)
    pcs.spec.template.cliques[0].labels = {QUEUE: queue}
    return pcs


def _bound(pods: list[Pod], job: str) -> int:
    return sum(1 for p in pods if p.metadata.name.startswith(f"{job}-") and p.spec.node_name
               and p.metadata.deletion_timestamp is None)


def test_replacements_of_reclaimed_pods_do_not_take_the_reclaimers_room() -> None:
    """5 nodes of 8 GPUs. team-c (quota 8) runs a 4-node gang; team-a (quota 32) then asks
    for 4 whole nodes. One reclaim makes the room, team-a's gang gets all of it, and team-c's
    recreated gang waits: one reclaim, not a reclaim every backoff period."""

    async def main() -> tuple[int, int, int, int]:
        stack = EmbeddedStack(gpu_cluster(5))
        await stack.start()
        try:
            for name, gpus in (("team-a", 32), ("team-c", 8)):
                await stack.cluster.create(registry.from_dict(queue_dict(
                    name, gpu={"quota": gpus, "limit": -1, "overQuotaWeight": 1},
                    cpu=ALL, memory=ALL)))
            await stack.cluster.create(_job("victim", "team-c", 4))
            await stack.settle(timeout=600)
            await stack.cluster.create(_job("reclaimer", "team-a", 4))
            try:  # long enough for many backoff periods (at most 10 s each) to pass
                await stack.settle(timeout=600, horizon=600)
            except NotSettled:
                pass  # a reclaim loop never settles: the counts below say so
            pods = (await stack.cluster.list(Pod)).items
            plugins = {id(p): p for fw in stack.scheduler.frameworks.values()
                       for p in fw.plugins.values() if isinstance(p, QueueReclaim)}
            reclaims = sum(p.reclaims for p in plugins.values())
            return (_bound(pods, "reclaimer"), _bound(pods, "victim"), reclaims,
                    len(stack.scheduler.nominator))
        finally:
            await stack.stop()

    reclaimer, victim, reclaims, nominated = run_virtual(main)
    assert (reclaimer, victim) == (4, 0)
    assert reclaims == 1
    assert nominated == 0  # the room was used; nothing is held any more
