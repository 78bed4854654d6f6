"""The recorder on the embedded cluster, driven by hand (no operator or scheduler)."""

import asyncio

from phalanx.api import labels
from phalanx.api.base import ObjectMeta, set_condition
from phalanx.api.core import Event, ObjectReference, Pod, PodCondition
from phalanx.api.pod import Container, PodSchedulingGate, PodSpec, ResourceRequirements
from phalanx.api.podgang import NamespacedName, PodGang, PodGangGroup, PodGangSpec
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.sim.clusterspec import build_nodes, default_cluster_spec
from phalanx.sim.record import TopologyLevel
from phalanx.sim.recorder import RunRecorder


def _pod(name: str, gang: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, labels={labels.LABEL_PODGANG: gang,
                                               labels.LABEL_PODCLIQUE: "w"}),
        spec=PodSpec(
            containers=[Container(name="c", image="x", resources=ResourceRequirements.from_requests(
                {"cpu": "4", "nvidia.com/gpu": "8"}))],
            scheduling_gates=[PodSchedulingGate(name=labels.GATE_PODGANG_PENDING_CREATION)],
        ),
    )


async def _scenario() -> tuple:
    c = MemoryCluster()
    spec = default_cluster_spec()
    for node in build_nodes(spec):
        await c.create(node)
    rec = RunRecorder(c, [TopologyLevel(domain=t.domain, key=t.key) for t in spec.spec.topology])
    await rec.start()
    pg = await c.create(PodGang(
        metadata=ObjectMeta(name="g-0", labels={labels.LABEL_PART_OF: "g"}),
        spec=PodGangSpec(pod_groups=[PodGangGroup(name="w", min_replicas=2, pod_references=[
            NamespacedName(namespace="default", name=f"g-0-w-{i}") for i in range(2)])]),
    ))
    await asyncio.sleep(1)
    for i in range(2):
        await c.create(_pod(f"g-0-w-{i}", "g-0"))
    await asyncio.sleep(1)
    set_condition(pg.status.conditions, "Initialized", True, "Ready")
    await c.update_status(pg)
    for i in range(2):
        p = await c.get(Pod, f"g-0-w-{i}", "default")
        p.spec.scheduling_gates = []
        await c.update(p)
    await asyncio.sleep(2)
    for i in range(2):
        await c.bind(f"g-0-w-{i}", "default", f"node-00{i}")
    await asyncio.sleep(3)
    for i in range(2):
        p = await c.get(Pod, f"g-0-w-{i}", "default")
        p.status.phase = "Running"
        p.set_condition("Ready", True, "Started")
        await c.update_status(p)
    await asyncio.sleep(10)
    # A gang preemption: each victim gets DisruptionTarget and an Event, then is deleted.
    for i in range(2):
        p = await c.get(Pod, f"g-0-w-{i}", "default")
        p.status.conditions.append(PodCondition(type="DisruptionTarget", status="True",
                                                reason="PreemptionByScheduler"))
        await c.update_status(p)
        await c.create(Event(metadata=ObjectMeta(name=f"ev{i}"), reason="Preempted",
                             type="Normal", message="by hi-0", involved_object=ObjectReference(
                                 kind="Pod", name=f"g-0-w-{i}", namespace="default")))
        await c.delete(Pod, f"g-0-w-{i}", "default")
    await asyncio.sleep(5)
    await rec.stop()
    return rec.finish()


def test_recorder_follows_a_gang_through_its_lifecycle_and_a_preemption() -> None:
    record = run_virtual(_scenario())
    g = record.gang("g-0")
    assert g is not None
    assert g.podcliqueset == "g" and g.min_member == 2
    assert (g.created, g.initialized, g.gates_lifted, g.scheduled, g.running) == (
        0.0, 2.0, 2.0, 4.0, 7.0)
    # Initialized and gates lifted at the same instant: one transition.
    assert [tr.state for tr in g.history] == [
        "Created", "Queued", "Scheduled", "Running", "Preempted"]
    assert g.preempted == [17.0]
    assert g.nodes == [] and g.phase == "Pending"
    assert len(record.nodes) == 64 and record.gpu_total == 512
    # Utilisation: 16 GPUs while both pods were bound, none after the preemption.
    assert [(s.t, s.gpu_used) for s in record.samples if s.gpu_used][:1] == [(4.0, 16.0)]
    assert max(s.gpu_used for s in record.samples) == 16
    assert record.samples[-1].gpu_used == 0
    assert [e.reason for e in record.events] == ["Preempted", "Preempted"]


async def _update_windows() -> dict[str, list]:
    from phalanx.api.grove_extras import (
        PodCliqueSetReplicaUpdateProgress,
        PodCliqueSetUpdateProgress,
    )
    from phalanx.bench.workload import job_podcliqueset

    c = MemoryCluster()
    rec = RunRecorder(c, [])
    await rec.start()
    for ns, replicas in (("a", 2), ("b", 1)):
        for i in range(replicas):
            await c.create(PodGang(metadata=ObjectMeta(
                name=f"train-{i}", namespace=ns, labels={labels.LABEL_PART_OF: "train"})))
        await c.create(job_podcliqueset("train", 8, namespace=ns))
    await asyncio.sleep(1)
    pcs = await c.get(type(job_podcliqueset("x", 8)), "train", "a")
    pcs.status.update_progress = PodCliqueSetUpdateProgress(
        currently_updating=[PodCliqueSetReplicaUpdateProgress(replica_index=1)])
    await c.update_status(pcs)
    await asyncio.sleep(5)
    pcs = await c.get(type(pcs), "train", "a")
    pcs.status.update_progress = PodCliqueSetUpdateProgress(currently_updating=[])
    await c.update_status(pcs)
    await asyncio.sleep(1)
    await rec.stop()
    record = rec.finish()
    return {f"{g.namespace}/{g.name}": [(u.start, u.end) for u in g.updates]
            for g in record.gangs}


def test_a_rolling_update_window_opens_and_closes_on_its_replica_only() -> None:
    """The replica in the PodCliqueSet's `currentlyUpdating` gets an update window on its
    base gang, closed when no replica is updating; the other replica and the PodCliqueSet of
    the same name in another namespace get none."""
    windows = run_virtual(_update_windows())
    assert windows["a/train-0"] == [] and windows["b/train-0"] == []
    [(start, end)] = windows["a/train-1"]
    assert end is not None and end - start == 5


async def _recreated() -> tuple:
    """A PodGang deleted and made again under its name (Grove's gang termination recreates
    the replica), its new pods bound and running."""
    c = MemoryCluster()
    for node in build_nodes(default_cluster_spec()):
        await c.create(node)
    rec = RunRecorder(c, [])
    await rec.start()
    gang = PodGang(metadata=ObjectMeta(name="g-0", labels={labels.LABEL_PART_OF: "g"}),
                   spec=PodGangSpec(pod_groups=[PodGangGroup(name="w", min_replicas=1,
                                                             pod_references=[])]))
    await c.create(gang.model_copy(deep=True))
    await asyncio.sleep(1)
    await c.delete(PodGang, "g-0", "default")
    await asyncio.sleep(1)
    await c.create(gang.model_copy(deep=True))
    await c.create(_pod("g-0-w-new", "g-0"))
    p = await c.get(Pod, "g-0-w-new", "default")
    p.spec.scheduling_gates = []
    await c.update(p)
    await c.bind("g-0-w-new", "default", "node-000")
    p = await c.get(Pod, "g-0-w-new", "default")
    p.status.phase = "Running"
    await c.update_status(p)
    await asyncio.sleep(1)
    await rec.stop()
    return rec.finish()


def test_a_podgang_made_again_under_its_name_is_one_gang_not_a_deleted_one() -> None:
    g = run_virtual(_recreated()).gang("g-0")
    assert g is not None
    assert g.deleted is None and g.phase != "Deleted"
    assert g.nodes == ["node-000"]
