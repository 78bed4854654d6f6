"""A pod's runtimeClassName is honoured end to end on the embedded cluster: the RuntimeClass
admission plugin merges the class's nodeSelector, tolerations and overhead into the pod
(phalanx.cluster.runtimeclass), and the scheduler's NodeAffinity, TaintToleration and
NodeResourcesFit then place it, as on a real cluster (podfields: read by no plugin itself)."""

from __future__ import annotations

from typing import Any

from phalanx.api.runtimeclass import RuntimeClass
from phalanx.scheduler import Scheduler

from ..helpers import bound_nodes, node, pod
from .kube.volume_harness import run

SANDBOX = RuntimeClass.model_validate({
    "metadata": {"name": "gvisor"}, "handler": "runsc",
    "overhead": {"podFixed": {"cpu": "500m"}},
    "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                   "tolerations": [{"key": "sandbox", "operator": "Exists",
                                    "effect": "NoSchedule"}]}})


def nodes() -> list[Any]:
    return [node("plain"), node("sandboxed", cpu=2, labels={"sandbox": "gvisor"},
                                taints=[("sandbox", "true", "NoSchedule")])]


def sandboxed(name: str) -> Any:
    p = pod(name, cpu="1")
    p.spec.runtime_class_name = "gvisor"
    return p


async def placed(client: Any, sched: Scheduler) -> Any:
    assert await sched.wait_idle(timeout=120)
    diag = {k: d.message() for k, d in sched.diagnoses().items()}
    return await bound_nodes(client), diag


def test_the_class_takes_the_pod_to_its_nodes_past_their_taint() -> None:
    where, _ = run(placed, nodes=nodes(), objects=[SANDBOX, sandboxed("a"), pod("b", cpu="1")],
                   controllers=False)
    assert where == {"a": "sandboxed", "b": "plain"}


def test_the_class_overhead_counts_against_the_node() -> None:
    """1 cpu + 500m overhead each: one fits on the 2-cpu node, not two."""
    where, why = run(placed, nodes=nodes(),
                     objects=[SANDBOX, sandboxed("a"), sandboxed("b")], controllers=False)
    assert sorted(where.values(), key=str) == [None, "sandboxed"]
    pending = next(k for k, v in where.items() if v is None)
    assert "Insufficient cpu" in why[f"default/{pending}"]
