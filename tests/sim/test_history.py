"""Every object's versions through a run (phalanx/sim/history.py), so `phalanx get --at`
answers for any time, not only at snapshots (issue 25 item 12)."""

import asyncio

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Node, Pod
from phalanx.api.grove import PodCliqueSet
from phalanx.api.podgang import PodGang
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.history import ObjectHistory, history_kinds, kind_label
from phalanx.sim.record import RunMeta, RunRecord


def _node(name: str) -> Node:
    return Node(metadata=ObjectMeta(name=name))


def test_versions_are_kept_folded_within_the_window_and_rebuilt_at_any_time() -> None:
    async def main() -> RunRecord:
        c = MemoryCluster()
        await c.create(_node("n-0"))  # before the history starts: replayed at t=0
        h = ObjectHistory(c, window=1.0)
        await h.start()
        await asyncio.sleep(10)
        await c.patch(Node, "n-0", {"metadata": {"labels": {"a": "1"}}})
        await asyncio.sleep(0.5)
        await c.patch(Node, "n-0", {"metadata": {"labels": {"a": "2"}}})  # folded into 10s
        await asyncio.sleep(19.5)
        await c.create(_node("n-1"))
        await asyncio.sleep(10)
        await c.delete(Node, "n-0")
        await asyncio.sleep(1)
        await h.stop()
        rec = RunRecord(meta=RunMeta(duration=100.0))
        rec.history = h.changes()
        return rec

    rec = run_virtual(main())
    assert [(round(c.t, 1), c.key, c.object is None) for c in rec.history] == [
        (0.0, "n-0", False), (10.5, "n-0", False), (30.0, "n-1", False), (40.0, "n-0", True)]

    def names(t: float) -> dict[str, str]:
        _, label, objects = rec.objects_at(t)
        assert label == "history"
        return {o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get("a", "-")
                for o in objects.get("Node", [])}

    assert names(5) == {"n-0": "-"}
    assert names(11) == {"n-0": "2"}
    assert names(35) == {"n-0": "2", "n-1": "-"}
    assert names(41) == {"n-1": "-"}


def test_kinds_shared_by_several_groups_are_qualified() -> None:
    kinds = history_kinds()
    labels = {kind_label(k, kinds) for k in kinds}
    assert {"Pod", "PodGang", "PodCliqueSet", "Node"} <= labels
    assert "PodGroup.scheduling.run.ai" in labels and "PodGroup" not in labels
    assert kind_label(Pod, kinds) == "Pod" and kind_label(PodGang, kinds) == "PodGang"
    assert kind_label(PodCliqueSet, kinds) == "PodCliqueSet"
