"""Nodes lost under running gangs: the gang is handled as one, never left half running.

A gang of 4 pods x 8 GPUs (one node each, terminationDelay 60s) runs next to an unrelated
gang; then the node of one of its pods is lost:
- NotReady (the kubelet stops: its pod is marked Failed, NodeLost) or deleted: the clique is
  below minAvailable, so after terminationDelay (not before) the whole replica is terminated
  and recreated, and the new gang runs whole on healthy nodes;
- NotReady with the taint manager's eviction: the lost pod is deleted and replaced at once,
  and the gang is whole again long before terminationDelay;
- no room left after termination: the recreated gang stays entirely pending (no pod bound)
  until the node returns, then runs whole.
Throughout, a watch measures how long any gang spends partly running.
"""

from __future__ import annotations

import asyncio

import pytest

from phalanx.api import labels
from phalanx.api.core import Node, Pod, Taint
from phalanx.bench.stack import EmbeddedStack
from phalanx.bench.tracker import PodTracker, is_running
from phalanx.bench.workload import gpu_cluster, job_podcliqueset
from phalanx.cluster.clock import run_virtual
from phalanx.sim.lifecycle import UNREACHABLE_TAINT, set_node_ready

DELAY = 60.0
GANG = 4


class PartlyRunning:
    """Per gang (PodGang label): the longest virtual time with 0 < Running pods < its size."""

    def __init__(self, tracker: PodTracker, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        self.running: dict[str, dict[str, None]] = {}
        self.since: dict[str, float] = {}
        self.longest: dict[str, float] = {}
        tracker.informer.add_handler(self._on, lambda old, new: self._on(new), self._gone)

    def _on(self, pod: Pod, gone: bool = False) -> None:
        gang = pod.metadata.labels.get(labels.LABEL_PODGANG, "")
        members = self.running.setdefault(gang, {})
        if is_running(pod) and not gone:
            members[pod.key] = None
        else:
            members.pop(pod.key, None)
        now = asyncio.get_running_loop().time()
        if 0 < len(members) < self.sizes[gang]:
            self.since.setdefault(gang, now)
        elif gang in self.since:
            start = self.since.pop(gang)
            self.longest[gang] = max(self.longest.get(gang, 0.0), now - start)

    def _gone(self, pod: Pod) -> None:
        self._on(pod, gone=True)

    def worst(self) -> float:
        now = asyncio.get_running_loop().time()
        open_ = [now - t for t in self.since.values()]
        return max([*self.longest.values(), *open_], default=0.0)


async def _gang_pods(stack: EmbeddedStack, pcs: str) -> list[Pod]:
    pods = (await stack.cluster.list(Pod, "default", label_selector={labels.LABEL_PART_OF: pcs})).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


async def _lose(stack: EmbeddedStack, node: str, how: str) -> None:
    if how == "deleted":
        await stack.cluster.delete(Node, node)
    elif how == "evicted":
        await set_node_ready(stack.cluster, node, False)  # taints + taint-manager eviction
    else:
        # The node stops reporting: Ready=Unknown (its pods are lost), and the node lifecycle
        # controller taints it unschedulable; NoExecute eviction would come only after the
        # pods' tolerationSeconds (300s), later than terminationDelay, so it is left out.
        n = await stack.cluster.get(Node, node)
        n.spec.taints = [*(n.spec.taints or []), Taint(key=UNREACHABLE_TAINT, effect="NoSchedule")]
        n = await stack.cluster.update(n)
        for c in n.status.conditions:
            if c.type == "Ready":
                c.status, c.reason = "Unknown", "NodeStatusUnknown"
        await stack.cluster.update_status(n)


@pytest.mark.parametrize("how", ["not-ready", "deleted", "evicted"])
def test_lost_node_under_a_running_gang(how: str, report) -> None:
    async def main() -> dict[str, object]:
        stack = EmbeddedStack(gpu_cluster(8, start_delay="1s"))
        await stack.start()
        tracker = PodTracker(stack.cluster)
        partly = PartlyRunning(tracker, {"train-0": GANG, "other-0": 2})
        await tracker.start()
        await stack.cluster.create(job_podcliqueset("train", GANG, 8, termination_delay="60s"))
        await stack.cluster.create(job_podcliqueset("other", 2, 8))
        assert await tracker.wait(lambda t: t.running == GANG + 2, timeout=600)
        before = {p.spec.hostname: (p.metadata.uid, p.spec.node_name)
                  for p in await _gang_pods(stack, "train")}
        other = {p.metadata.uid for p in await _gang_pods(stack, "other")}
        lost_node = before["train-0-worker-0"][1]
        assert lost_node
        loop = asyncio.get_running_loop()
        t_lost = loop.time()
        await _lose(stack, lost_node, how)

        # Half way through the delay: no termination yet (only the lost pod is affected).
        await asyncio.sleep(DELAY / 2)
        mid = await _gang_pods(stack, "train")
        survivors = [p for p in mid if p.spec.node_name != lost_node and p.metadata.uid in
                     {uid for uid, _ in before.values()}]
        if how != "evicted":
            assert len(survivors) == GANG - 1 and all(is_running(p) for p in survivors)

        await asyncio.sleep(DELAY)
        await stack.settle()
        after = await _gang_pods(stack, "train")
        assert len(after) == GANG and all(is_running(p) for p in after), [
            (p.name, p.status.phase, p.spec.node_name) for p in after]
        assert all(p.spec.node_name != lost_node for p in after)
        replaced = sum(1 for p in after if p.metadata.uid not in {u for u, _ in before.values()})
        if how == "evicted":
            assert replaced == 1  # the evicted pod alone, the gang kept running
        else:
            assert replaced == GANG  # the replica was recreated as a whole
        assert {p.metadata.uid for p in await _gang_pods(stack, "other")} == other
        worst = partly.worst()
        # Partly running only while terminationDelay runs out (plus the restart of the gang).
        assert worst <= DELAY + 10.0, worst
        terminations = stack.operator.gang_termination.terminations if stack.operator else -1
        await tracker.stop()
        await stack.stop()
        return {"replaced": replaced, "worst": worst, "terminations": terminations,
                "virtual": loop.time() - t_lost}

    out = run_virtual(main)
    report(node=how, pods_replaced=out["replaced"], gang_terminations=out["terminations"],
           longest_partly_running_virtual_s=round(float(out["worst"]), 1))  # type: ignore[arg-type]


def test_no_room_after_termination_keeps_the_whole_gang_pending() -> None:
    async def main() -> None:
        stack = EmbeddedStack(gpu_cluster(GANG, start_delay="1s"))
        await stack.start()
        tracker = PodTracker(stack.cluster)
        await tracker.start()
        await stack.cluster.create(job_podcliqueset("train", GANG, 8, termination_delay="60s"))
        assert await tracker.wait(lambda t: t.running == GANG, timeout=600)
        lost = (await _gang_pods(stack, "train"))[0].spec.node_name
        assert lost
        await _lose(stack, lost, "not-ready")
        await asyncio.sleep(DELAY + 30)
        await stack.settle()
        pending = await _gang_pods(stack, "train")
        # Recreated, and all-or-nothing: 3 healthy nodes cannot hold 4 pods, so none is bound.
        assert len(pending) == GANG
        assert [p.name for p in pending if p.spec.node_name] == []
        await set_node_ready(stack.cluster, lost, True)
        assert await tracker.wait(lambda t: t.running == GANG, timeout=3600)
        await tracker.stop()
        await stack.stop()

    run_virtual(main)
