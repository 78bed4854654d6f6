"""A queue's written status is part of the scheduler's work: the status pass it schedules
`statusIntervalSeconds` after a change is something to wait for, so a stack that has settled
reads what the queue holds, not what it held one change earlier."""

from __future__ import annotations

from phalanx.api.core import Pod
from phalanx.api.queue import Queue
from phalanx.bench.stack import EmbeddedStack
from phalanx.api.queue import unlimited_queue
from phalanx.bench.workload import gpu_cluster, job_podcliqueset
from phalanx.cluster.clock import run_virtual
from phalanx.scheduler.queues.status import ANNOTATION_FAIR_SHARE


def test_settled_stack_reads_the_queue_status_of_its_last_binding() -> None:
    async def main() -> tuple[dict, str, int, float | None]:
        stack = EmbeddedStack(gpu_cluster(2))
        await stack.start()
        try:
            await stack.cluster.create(unlimited_queue("default"))
            pcs = job_podcliqueset("job", 3, 2)
            pcs.spec.template.cliques[0].labels = {"kai.scheduler/queue": "default"}
            await stack.cluster.create(pcs)
            await stack.settle(timeout=600)
            pods = (await stack.cluster.list(Pod)).items
            queue = await stack.cluster.get(Queue, "default")
            return queue.to_dict().get("status", {}), queue.metadata.annotations.get(
                ANNOTATION_FAIR_SHARE, ""), sum(bool(p.spec.node_name) for p in pods), \
                stack.scheduler.next_due()
        finally:
            await stack.stop()

    status, fair_share, bound, due = run_virtual(main)
    assert bound == 3
    assert status["allocated"]["nvidia.com/gpu"] == "6"
    assert '"nvidia.com/gpu": "6"' in fair_share
    assert due is None
