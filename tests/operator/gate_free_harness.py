"""Shared by the gate-free property tests (test_op_gate_free.py for phalanx-scheduler,
test_op_gate_free_kube.py for default-scheduler): a MemoryCluster that records how each pod
was created, the whole embedded stack run until every pod is bound, and the PodCliqueSets
the properties range over."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from op_harness import NS, make_pcs

from phalanx.api import labels as L
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Pod
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.clock import wait_for_condition
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.scheduler import Scheduler
from phalanx.sim.clusterspec import build_nodes, default_cluster_spec
from phalanx.sim.kubelet import Kubelet

GATE = L.GATE_PODGANG_PENDING_CREATION
# Virtual seconds: the operator, scheduler and kubelet settle a few dozen pods in well under
# a virtual minute; an unbound pod after this is a pod the scheduler never released.
SETTLE_TIMEOUT = 600.0


class GateRecordingCluster(MemoryCluster):
    """Records whether each pod was created with Phalanx's gate (by the name the server gave:
    pods have generateName), and which pods belong to a scaled PodGang."""

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[str] = []
        self.created_gated: dict[str, bool] = {}
        self.scaled: set[str] = set()

    async def create(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        created = await super().create(obj, *args, **kwargs)
        if isinstance(obj, Pod):
            name = created.name if created is not None else obj.name
            self.created_gated[name] = obj.has_gate(GATE)
            if L.LABEL_BASE_PODGANG in obj.metadata.labels:
                self.scaled.add(name)
        return created


async def run_until_bound(cluster: MemoryCluster, config: OperatorConfiguration,
                          pcs: Any) -> None:
    """Operator, scheduler and kubelet on 8 nodes, `pcs` created, until every pod is bound
    and the operator idle."""
    for node in build_nodes(default_cluster_spec())[:8]:
        await cluster.create(node)
    op = OperatorManager(cluster, config, registry=BackendRegistry.from_config(config))
    sched, kubelet = Scheduler(cluster), Kubelet(cluster)
    for c in (op, sched, kubelet):
        await c.start()
    try:
        await cluster.create(pcs)

        async def all_bound() -> bool:
            pods = (await cluster.list(Pod, NS)).items
            return bool(pods) and all(p.spec.node_name for p in pods)

        assert await wait_for_condition(all_bound, timeout=SETTLE_TIMEOUT), "pods left unbound"
        await op.wait_idle(timeout=SETTLE_TIMEOUT)
    finally:
        for c in (kubelet, sched, op):
            await c.stop()


@st.composite
def podcliquesets(draw: st.DrawFn, scheduler: str, at_minimum: bool = False) -> Any:
    """1-3 cliques of 1-4 pods (`at_minimum`: minAvailable = replicas, what `reject` admits
    for a multi-group gang on default-scheduler), maybe the last in a scaling group."""
    n = draw(st.integers(1, 3))
    cliques: list[tuple[str, int, int]] = []
    for i in range(n):
        reps = draw(st.integers(1, 4))
        cliques.append((f"c{i}", reps, reps if at_minimum else draw(st.integers(1, reps))))
    groups = None
    if n > 1 and draw(st.booleans()):
        # The last clique in a scaling group: replicas above minAvailable go to scaled
        # PodGangs, whose pods keep the gate (they wait for the base PodGang too).
        reps = draw(st.integers(1, 3))
        groups = [("sg", [cliques[-1][0]], reps, draw(st.integers(1, reps)))]
    return make_pcs("job", cliques, replicas=draw(st.integers(1, 2)), groups=groups,
                    scheduler=scheduler)
