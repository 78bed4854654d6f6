"""The ClusterTopologyBinding controller: Grove's reconciler tests
(operator/internal/controller/clustertopology/reconciler_test.go), one test per Go test, on
the embedded cluster with fake topology-aware backends, plus KAI's real drift check.

Not ported: TestMapBackendTopologyToCT_WrongOwnerKind compares an owner reference's kind
against Grove's constant for the old kind name; here the mapping accepts either kind
(ClusterTopologyBinding, legacy ClusterTopology), so that row has no counterpart. The other
TestMapBackendTopologyToCT_* rows are exercised through KAI Topology events
(test_kai_drift_follows_the_admins_topology).
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api.base import ObjectMeta, get_condition
from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Event
from phalanx.api.grove import (
    ClusterTopologyBinding,
    ClusterTopologyBindingSpec,
    SchedulerTopologyBinding,
    TopologyLevel,
)
from phalanx.api.kai_topology import KaiTopology, KaiTopologyLevel, KaiTopologySpec
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager

TAS = OperatorConfiguration.model_validate({"topologyAwareScheduling": {"enabled": True}})
DRIFT = "SchedulerTopologyDrift"


class FakeBackend:
    """A scheduler backend; with `topology=True` it keeps a topology object of its own."""

    scheduler_name: ClassVar[str] = "fake"

    def __init__(self, name: str, *, topology: bool = True, sync_error: str | None = None,
                 in_sync: bool = True, drift_message: str = "", drift_generation: int = 0,
                 drift_error: str | None = None) -> None:
        self.name = name
        self.sync_error, self.drift_error = sync_error, drift_error
        self.drift = (in_sync, drift_message, drift_generation)
        self.synced: list[str] = []
        self.checked: list[str] = []
        if topology:
            self.sync_cluster_topology = self._sync
            self.check_topology_drift = self._check

    async def init(self, client: Any) -> None:
        pass

    async def _sync(self, ct: Any) -> None:
        self.synced.append(ct.name)
        if self.sync_error:
            raise RuntimeError(self.sync_error)

    async def _check(self, ct: Any, reference: str) -> tuple[bool, str, int]:
        self.checked.append(reference)
        if self.drift_error:
            raise RuntimeError(self.drift_error)
        return self.drift


def _binding(name: str = "my-topology", refs: dict[str, str] | None = None
             ) -> ClusterTopologyBinding:
    return ClusterTopologyBinding(metadata=ObjectMeta(name=name), spec=ClusterTopologyBindingSpec(
        levels=[TopologyLevel(domain="zone", key="topology.kubernetes.io/zone"),
                TopologyLevel(domain="host", key="kubernetes.io/hostname")],
        scheduler_topology_bindings=[SchedulerTopologyBinding(scheduler_name=s,
                                                              topology_reference=r)
                                     for s, r in (refs or {}).items()] or None))


def reconcile(backends: list[Any], *objects: Any, steps: Any = None,
              registry: BackendRegistry | None = None, earlier: tuple[Any, ...] = ()) -> Any:
    """Start the operator with `backends` (plus the default scheduler), create `objects`,
    settle; `steps(cluster, op)` runs afterwards. Returns what the last step returns, else
    the binding as stored. `earlier`: objects that exist before the operator (and its
    admission) starts, such as ones created while another backend was enabled."""
    async def main() -> Any:
        cluster = MemoryCluster()
        for obj in earlier:
            await cluster.create(obj)
        reg = registry or BackendRegistry(
            {"default-scheduler": FakeBackend("default-scheduler", topology=False),
             **{b.name: b for b in backends}}, "default-scheduler")
        op = OperatorManager(cluster, TAS, registry=reg)
        await op.start()
        for obj in objects:
            await cluster.create(obj)
        await op.wait_idle()
        try:
            if steps is not None:
                return await steps(cluster, op)
            return await cluster.get(ClusterTopologyBinding, (objects or earlier)[0].name)
        finally:
            await op.stop()

    return run_virtual(main)


def _drift(ct: ClusterTopologyBinding) -> Any:
    return get_condition(ct.status.conditions, DRIFT)


def test_Reconcile_AutoManaged_SyncsTopology() -> None:
    backend = FakeBackend("kai-scheduler")
    ct = reconcile([backend], _binding())
    assert backend.synced and not backend.checked
    assert ct.status.observed_generation == 1
    [status] = ct.status.scheduler_topology_statuses
    assert (status.in_sync, status.scheduler_name, status.topology_reference) == (
        True, "kai-scheduler", "my-topology")
    cond = _drift(ct)
    assert (cond.status, cond.reason) == ("False", "InSync")


def test_Reconcile_ExternallyManaged_InSync() -> None:
    backend = FakeBackend("kai-scheduler", drift_generation=5)
    ct = reconcile([backend], _binding(refs={"kai-scheduler": "external-topology"}))
    assert not backend.synced and backend.checked == ["external-topology"]
    [status] = ct.status.scheduler_topology_statuses
    assert (status.in_sync, status.topology_reference,
            status.scheduler_backend_topology_observed_generation) == (
        True, "external-topology", 5)
    assert _drift(ct).status == "False"


def test_Reconcile_ExternallyManaged_Drift() -> None:
    why = "KAI Topology levels differ from ClusterTopologyBinding levels"
    backend = FakeBackend("kai-scheduler", in_sync=False, drift_message=why, drift_generation=3)
    ct = reconcile([backend], _binding(refs={"kai-scheduler": "external-topology"}))
    [status] = ct.status.scheduler_topology_statuses
    assert (status.in_sync, status.message) == (False, why)
    cond = _drift(ct)
    assert (cond.status, cond.reason) == ("True", "Drift")


def test_Reconcile_SyncTopologyError() -> None:
    ct = reconcile([FakeBackend("kai-scheduler", sync_error="sync failed")], _binding())
    [status] = ct.status.scheduler_topology_statuses
    assert not status.in_sync and "sync failed" in status.message
    assert status.topology_reference == "my-topology"
    assert _drift(ct).status == "True"
    assert ct.status.observed_generation is None  # not every backend synced


def test_Reconcile_CheckDriftError() -> None:
    backend = FakeBackend("kai-scheduler", drift_error="drift check failed")
    ct = reconcile([backend], _binding(refs={"kai-scheduler": "external-topology"}))
    [status] = ct.status.scheduler_topology_statuses
    assert not status.in_sync and "drift check failed" in status.message


def test_Reconcile_NonTASBackendIgnored() -> None:
    ct = reconcile([FakeBackend("volcano", topology=False), FakeBackend("kai-scheduler")],
                   _binding())
    assert [s.scheduler_name for s in ct.status.scheduler_topology_statuses] == ["kai-scheduler"]


def test_Reconcile_ReferencedBackendNotAvailable_SetsTopologyNotFound() -> None:
    # Admission refuses a reference to a backend that is not enabled (Grove's webhook); this
    # binding was created while it was.
    ct = reconcile([], earlier=(_binding(refs={"kai-scheduler": "external-topology"}),))
    [status] = ct.status.scheduler_topology_statuses
    assert (status.in_sync, status.scheduler_name, status.topology_reference) == (
        False, "kai-scheduler", "external-topology")
    assert 'scheduler backend \'kai-scheduler\' is not available for topology management' in \
        status.message
    cond = _drift(ct)
    assert (cond.status, cond.reason) == ("Unknown", "TopologyNotFound")


def test_Reconcile_NotFound() -> None:
    async def steps(cluster: MemoryCluster, op: OperatorManager) -> Any:
        # A key for a binding that does not exist (deleted meanwhile) is no error.
        return await op.cluster_topology.reconcile("ClusterTopologyBinding/deleted-topology")

    assert reconcile([FakeBackend("kai-scheduler")], steps=steps) is None


def test_Reconcile_NoTASBackends_RemovesCondition() -> None:
    ct = reconcile([], _binding())
    assert not ct.status.scheduler_topology_statuses
    assert _drift(ct) is None


def _events(cluster: MemoryCluster) -> Any:
    async def get() -> list[tuple[str, str]]:
        return [(e.type, e.reason) for e in (await cluster.list(Event)).items
                if e.reason in ("TopologyInSync", "TopologyDriftDetected")]
    return get


def test_Reconcile_EmitsDriftEvents() -> None:
    backend = FakeBackend("kai-scheduler")

    async def steps(cluster: MemoryCluster, op: OperatorManager) -> None:
        await op.recorder.flush()
        assert await _events(cluster)() == [("Normal", "TopologyInSync")]
        backend.drift = (False, "levels differ", 2)
        ct = await cluster.get(ClusterTopologyBinding, "my-topology")
        ct.spec.levels.append(TopologyLevel(domain="numa", key="example.com/numa"))
        await cluster.update(ct)  # a new generation: reconciled again
        await op.wait_idle()
        await op.recorder.flush()
        assert await _events(cluster)() == [("Normal", "TopologyInSync"),
                                            ("Warning", "TopologyDriftDetected")]

    reconcile([backend], _binding(refs={"kai-scheduler": "external-topology"}), steps=steps)


def test_Reconcile_DoesNotEmitEventWhenDriftStatusIsStable() -> None:
    backend = FakeBackend("kai-scheduler", in_sync=True)

    async def steps(cluster: MemoryCluster, op: OperatorManager) -> None:
        ct = await cluster.get(ClusterTopologyBinding, "my-topology")
        ct.spec.levels.append(TopologyLevel(domain="numa", key="example.com/numa"))
        await cluster.update(ct)
        await op.wait_idle()
        await op.recorder.flush()
        assert await _events(cluster)() == [("Normal", "TopologyInSync")]  # once, not twice

    reconcile([backend], _binding(refs={"kai-scheduler": "external-topology"}), steps=steps)


def test_Reconcile_MixedBackendOutcomes() -> None:
    alpha = FakeBackend("alpha-scheduler")
    beta = FakeBackend("beta-scheduler", in_sync=False, drift_message="beta drifted")
    ct = reconcile([beta, alpha], _binding(refs={"beta-scheduler": "beta-topology"}))
    statuses = {s.scheduler_name: s for s in ct.status.scheduler_topology_statuses}
    assert [s.scheduler_name for s in ct.status.scheduler_topology_statuses] == [
        "alpha-scheduler", "beta-scheduler"]  # in name order, as Grove
    assert statuses["alpha-scheduler"].in_sync and alpha.synced
    assert not statuses["beta-scheduler"].in_sync and not beta.synced
    assert _drift(ct).status == "True"


# --- KAI's own topology object ---------------------------------------------------------------

KAI = OperatorConfiguration.model_validate({
    "scheduler": {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "kai-scheduler"},
    "topologyAwareScheduling": {"enabled": True}})


def test_kai_drift_follows_the_admins_topology() -> None:
    """An admin-managed KAI Topology named in schedulerTopologyBindings: checked, never
    written; a change to it (or its appearance) requeues the binding that names it."""
    async def main() -> None:
        cluster = MemoryCluster()
        op = OperatorManager(cluster, KAI)
        await op.start()
        await cluster.create(_binding(refs={"kai-scheduler": "admins"}))
        await op.wait_idle()
        ct = await cluster.get(ClusterTopologyBinding, "my-topology")
        [status] = ct.status.scheduler_topology_statuses
        assert (status.in_sync, status.message) == (False, "KAI Topology 'admins' not found")
        assert _drift(ct).status == "True"

        admins = KaiTopology(metadata=ObjectMeta(name="admins"), spec=KaiTopologySpec(levels=[
            KaiTopologyLevel(node_label="topology.kubernetes.io/zone"),
            KaiTopologyLevel(node_label="kubernetes.io/hostname")]))
        await cluster.create(admins)
        await op.wait_idle()
        ct = await cluster.get(ClusterTopologyBinding, "my-topology")
        [status] = ct.status.scheduler_topology_statuses
        assert status.in_sync and status.scheduler_backend_topology_observed_generation == 1
        assert (_drift(ct).status, _drift(ct).reason) == ("False", "InSync")
        assert (await cluster.get(KaiTopology, "admins")).metadata.owner_references == []

        live = await cluster.get(KaiTopology, "admins")
        live.spec.levels = live.spec.levels[:1]
        await cluster.update(live)
        await op.wait_idle()
        ct = await cluster.get(ClusterTopologyBinding, "my-topology")
        assert (_drift(ct).status, _drift(ct).reason) == ("True", "Drift")
        await op.stop()

    run_virtual(main)
