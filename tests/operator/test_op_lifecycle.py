"""PodCliqueSet -> PodGangs, PodCliques, scaling groups and pods: names, labels, owners, and
the GREP-375 lifecycle order (PodGang first, backend before gates, gates last)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from op_harness import NS, Env, gated, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.core import Pod, PodSchedulingGate
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodGang
from phalanx.backends.base import Capability, MismatchPolicy
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import ServerError
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.operator.conditions import BACKEND_SYNCED
from phalanx.operator.context import Tunables
from tests.podnames import hostname

LEADER_WORKERS = dict(cliques=[("router", 1), ("leader", 1), ("worker", 3, 2)],
                      groups=[("sg", ["leader", "worker"], 3, 2)])


def test_names_labels_and_owners() -> None:
    async def scenario(env: Env) -> None:
        pcs = await env.create(make_pcs("inf", replicas=2, **LEADER_WORKERS))
        await env.settle()
        cliques = await env.cliques()
        assert sorted(cliques) == sorted(
            [f"inf-{i}-router" for i in range(2)]
            + [f"inf-{i}-sg-{j}-{c}" for i in range(2) for j in range(3)
               for c in ("leader", "worker")])
        gangs = await env.gangs()
        assert sorted(gangs) == ["inf-0", "inf-0-sg-0", "inf-1", "inf-1-sg-0"]
        groups = {g.name: g for g in (await env.cluster.list(PodCliqueScalingGroup, NS)).items}
        assert sorted(groups) == ["inf-0-sg", "inf-1-sg"]

        # Base PodGang: standalone cliques + scaling group replicas below minAvailable (2).
        base = gangs["inf-1"]
        assert [(g.name, g.min_replicas) for g in base.spec.pod_groups] == [
            ("inf-1-router", 1), ("inf-1-sg-0-leader", 1), ("inf-1-sg-0-worker", 2),
            ("inf-1-sg-1-leader", 1), ("inf-1-sg-1-worker", 2)]
        scaled = gangs["inf-1-sg-0"]  # replica 2, the first above minAvailable 2
        assert [g.name for g in scaled.spec.pod_groups] == ["inf-1-sg-2-leader",
                                                             "inf-1-sg-2-worker"]
        assert scaled.metadata.labels[L.LABEL_BASE_PODGANG] == "inf-1"
        assert L.LABEL_BASE_PODGANG not in base.metadata.labels
        for g in gangs.values():
            assert g.metadata.labels[L.LABEL_MANAGED_BY] == L.MANAGED_BY_VALUE
            assert g.metadata.labels[L.LABEL_PART_OF] == "inf"
            assert g.metadata.labels[L.LABEL_SCHEDULER_NAME] == "default-scheduler"
            assert g.metadata.owner_references[0].uid == pcs.metadata.uid
            assert L.FINALIZER_SCHEDULER_BACKEND in g.metadata.finalizers

        router = cliques["inf-0-router"]
        assert router.metadata.owner_references[0].kind == "PodCliqueSet"
        assert router.metadata.labels[L.LABEL_PODGANG] == "inf-0"
        assert router.metadata.labels[L.LABEL_PODCLIQUESET_REPLICA_INDEX] == "0"
        worker = cliques["inf-0-sg-2-worker"]
        assert worker.metadata.owner_references[0].kind == "PodCliqueScalingGroup"
        assert worker.metadata.owner_references[0].name == "inf-0-sg"
        assert worker.metadata.labels[L.LABEL_PODGANG] == "inf-0-sg-0"
        assert worker.metadata.labels[L.LABEL_BASE_PODGANG] == "inf-0"
        assert worker.metadata.labels[L.LABEL_PODCLIQUESCALINGGROUP] == "inf-0-sg"
        assert worker.metadata.labels[L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX] == "2"
        assert worker.spec.min_available == 2

        pods = {hostname(p): p for p in await env.pods()}
        assert len(pods) == 2 * (1 + 3 * (1 + 3))
        pod = pods["inf-0-sg-2-worker-1"]
        assert pod.metadata.labels[L.LABEL_PODGANG] == "inf-0-sg-0"
        assert pod.metadata.labels[L.LABEL_PODCLIQUE] == "inf-0-sg-2-worker"
        assert pod.metadata.labels[L.LABEL_PODCLIQUE_POD_INDEX] == "1"
        assert pod.metadata.labels[L.LABEL_PODCLIQUESET_REPLICA_INDEX] == "0"
        assert pod.metadata.labels[L.LABEL_BASE_PODGANG] == "inf-0"
        assert pod.metadata.labels[L.LABEL_PART_OF] == "inf"
        assert pod.metadata.owner_references[0].name == "inf-0-sg-2-worker"
        assert pod.spec.hostname == "inf-0-sg-2-worker-1"
        env_names = {e.name for e in pod.spec.containers[0].env or ()}
        assert {L.ENV_PCS_NAME, L.ENV_PCLQ_NAME, L.ENV_PCSG_NAME,
                L.ENV_PCSG_TEMPLATE_NUM_PODS} <= env_names
        # Everything ends up scheduled and running; references cover every pod.
        for g in (await env.gangs()).values():
            assert g.status.phase == "Running", (g.name, g.status)
            assert sorted(g.pod_names()) == sorted(
                obj.name for obj in pods.values()
                if obj.metadata.labels[L.LABEL_PODGANG] == g.name)

    run(scenario)


class RecordingBackend:
    """A default-scheduler stand-in that records calls and what the cluster held then."""

    name: ClassVar[str] = "default-scheduler"
    scheduler_name: ClassVar[str] = "default-scheduler"
    capabilities = frozenset({Capability.GANG})
    mismatch_policy = MismatchPolicy.REJECT

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.client: Any = None

    async def init(self, client: Any) -> None:
        self.client = client

    async def sync_podgang(self, podgang: PodGang) -> None:
        # A slow scheduler API: pods must still not be ungated before this returns.
        await asyncio.sleep(10)
        pods = (await self.client.list(Pod, NS, label_selector={L.LABEL_PODGANG: podgang.name}))
        ungated = [hostname(p) for p in pods.items if not gated(p)]
        self.calls.append(("sync", podgang.name, ungated))

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        self.calls.append(("delete", podgang.name, list(podgang.metadata.finalizers)))

    def prepare_pod(self, pod: Pod) -> None:
        pod.metadata.annotations["prepared-by"] = "recorder"

    def validate_podcliqueset(self, pcs: Any) -> list:
        return []


@pytest.mark.parametrize("grace", [0.0, 1.0], ids=["pending-written", "pending-coalesced"])
def test_lifecycle_order_podgang_first_backend_before_gates(grace: float) -> None:
    """Watch every PodGang and Pod event and check the GREP-375 order. With no grace the
    PodGang shows Initialized=False before any pod exists, as Grove's does; with the default
    grace a gang whose pods all exist in time goes straight to Initialized=True."""

    async def main() -> None:
        cluster = MemoryCluster()
        backend = RecordingBackend()
        registry = BackendRegistry({"default-scheduler": backend}, "default-scheduler")
        op = OperatorManager(cluster, registry=registry,
                             tunables=Tunables(initialized_pending_grace=grace))
        events: list[tuple[str, str, Any]] = []

        async def record(kind: type) -> None:
            async for ev in cluster.watch(kind, NS, resource_version="0"):
                events.append((kind.KIND, ev.type, ev.object))

        watchers = [asyncio.create_task(record(k)) for k in (PodGang, Pod)]
        await op.start()
        await cluster.create(make_pcs("seq", [("a", 2), ("b", 2)]))
        await op.wait_idle()

        pod_adds = [i for i, (k, t, _) in enumerate(events) if k == "Pod" and t == "ADDED"]
        gang_add = next(i for i, (k, t, _) in enumerate(events) if k == "PodGang" and t == "ADDED")
        assert gang_add < pod_adds[0], "PodGang must exist before any pod"
        first = events[gang_add][2]
        assert all(not g.pod_references for g in first.spec.pod_groups)
        init_false = [i for i, (k, _, o) in enumerate(events) if k == "PodGang" and
                      (c := o.condition("Initialized")) and c.status == "False"]
        if grace == 0.0:
            # Initialized=False (PodGangPodsCreationPending) before any pod exists.
            assert init_false and init_false[0] < pod_adds[0]
            assert (events[init_false[0]][2].condition("Initialized").reason
                    == "PodGangPodsCreationPending")
        else:
            assert init_false == []
        # Pods are created gated and prepared by the backend.
        for i in pod_adds:
            pod = events[i][2]
            assert gated(pod) and pod.metadata.annotations["prepared-by"] == "recorder"
        # Initialized=True only once all 4 pods exist; the refs are filled by then.
        init_true = next(i for i, (k, _, o) in enumerate(events)
                         if k == "PodGang" and o.is_initialized)
        assert init_true > pod_adds[-1]
        assert len(events[init_true][2].pod_names()) == 4
        synced = next(i for i, (k, _, o) in enumerate(events)
                      if k == "PodGang" and o.is_condition_true(BACKEND_SYNCED))
        ungates = [i for i, (k, t, o) in enumerate(events)
                   if k == "Pod" and t == "MODIFIED" and not gated(o)]
        assert len(ungates) == 4
        assert min(ungates) > max(init_true, synced)
        # sync_podgang ran before any pod was ungated.
        assert backend.calls[0] == ("sync", "seq-0", [])
        for w in watchers:
            w.cancel()
        await op.stop()

    run_virtual(main)


def test_only_phalanx_gate_is_removed() -> None:
    async def scenario(env: Env) -> None:
        pcs = make_pcs("gates", [("a", 2)])
        pcs.spec.template.cliques[0].spec.pod_spec.scheduling_gates = [
            PodSchedulingGate(name="example.com/quota")]
        await env.create(pcs)
        await env.settle()
        pods = await env.pods()
        assert len(pods) == 2
        for p in pods:
            assert [g.name for g in p.spec.scheduling_gates] == ["example.com/quota"]
            assert not p.spec.node_name  # still gated by the other gate: never bound
        gang = (await env.gangs())["gates-0"]
        assert gang.is_initialized and gang.status.phase == "Pending"

    run(scenario)


def test_scaled_podgangs_wait_for_the_base_podgang() -> None:
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        env.binder.paused = True
        await env.create(make_pcs("sc", **LEADER_WORKERS))
        await env.settle()
        pods = {hostname(p): p for p in await env.pods()}
        base_pods = [p for p in pods.values() if p.metadata.labels[L.LABEL_PODGANG] == "sc-0"]
        scaled_pods = [p for p in pods.values()
                       if p.metadata.labels[L.LABEL_PODGANG] == "sc-0-sg-0"]
        assert base_pods and scaled_pods
        assert not any(gated(p) for p in base_pods)  # ungated, waiting for the scheduler
        assert all(gated(p) for p in scaled_pods)  # base not scheduled yet
        gangs = await env.gangs()
        assert gangs["sc-0-sg-0"].is_initialized  # initialized, still gated: base first
        await env.binder.resume()
        await env.settle()
        pods = {hostname(p): p for p in await env.pods()}
        assert all(not gated(p) and p.spec.node_name for p in pods.values())
        assert all(g.status.phase == "Running" for g in (await env.gangs()).values())

    run(scenario)


def test_status_counters_and_phases() -> None:
    async def scenario(env: Env) -> None:
        assert env.binder is not None and env.kubelet is not None
        env.binder.paused = True
        await env.create(make_pcs("st", [("a", 3, 2), ("b", 2)], replicas=2))
        await env.settle()
        a = (await env.cliques())["st-0-a"]
        assert (a.status.replicas, a.status.schedule_gated_replicas, a.status.scheduled_replicas,
                a.status.ready_replicas) == (3, 0, 0, 0)
        gang = (await env.gangs())["st-0"]
        assert gang.status.phase == "Pending"
        assert gang.condition("Scheduled").status == "False"
        assert (await env.pcs("st")).status.available_replicas == 0

        await env.binder.resume()
        await env.op.wait_idle()  # bound; the kubelet's 30s start delay has not passed yet
        a = (await env.cliques())["st-0-a"]
        assert (a.status.scheduled_replicas, a.status.ready_replicas) == (3, 0)
        gang = (await env.gangs())["st-0"]
        assert gang.status.phase == "Starting" and gang.is_scheduled
        assert gang.condition("Ready").status == "False"

        await asyncio.sleep(31)
        await env.settle()
        cliques = await env.cliques()
        assert all(c.status.ready_replicas == c.spec.replicas for c in cliques.values())
        gang = (await env.gangs())["st-1"]
        assert gang.status.phase == "Running" and gang.condition("Ready").status == "True"
        # When it was scheduled / became ready: its conditions' lastTransitionTime (Grove's
        # status has no other place for it).
        assert gang.true_since("Scheduled") is not None and gang.true_since("Ready") is not None
        assert gang.true_since("Ready") >= gang.true_since("Scheduled")
        assert "lastScheduled" not in gang.to_dict()["status"]
        pcs = await env.pcs("st")
        assert (pcs.status.replicas, pcs.status.available_replicas) == (2, 2)
        compat = next(c for c in pcs.status.conditions if c.type == "SchedulerCompatible")
        assert (compat.status, compat.reason) == ("True", "AllFeaturesSupported")

    run(scenario, start_delay=30.0)


def test_deleting_the_podcliqueset_removes_everything() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("gone", replicas=2, **LEADER_WORKERS))
        await env.create(make_pcs("kept", [("a", 1)]))
        await env.settle()
        assert env.cluster.count(Pod) == 2 * 13 + 1
        await env.cluster.delete(type(await env.pcs("gone")), "gone", NS)
        await env.settle()
        for kind in (PodGang, PodClique, PodCliqueScalingGroup, Pod):
            left = [o.name for o in (await env.cluster.list(kind, NS)).items]
            assert all(name.startswith("kept") for name in left), (kind.KIND, left)
        assert env.cluster.count(Pod) == 1
        # The backend controller ran on_podgang_delete and released its finalizer.
        assert env.op.backend.syncs >= 5

    run(scenario)


def test_podcliqueset_priority_class_reaches_every_pod_unless_a_clique_names_its_own() -> None:
    from phalanx.api.base import ObjectMeta
    from phalanx.api.core import PriorityClass

    async def scenario(env: Env) -> None:
        for name, value in (("high", 1000), ("low", 10)):
            await env.cluster.create(PriorityClass(metadata=ObjectMeta(name=name), value=value))
        pcs = make_pcs("prio", cliques=[("a", 2), ("b", 1)])
        pcs.spec.template.priority_class_name = "high"
        pcs.spec.template.cliques[1].spec.pod_spec.priority_class_name = "low"
        await env.create(pcs)
        await env.settle()
        by_clique = {p.metadata.labels[L.LABEL_PODCLIQUE]: p for p in await env.pods()}
        assert by_clique["prio-0-a"].spec.priority_class_name == "high"
        assert by_clique["prio-0-a"].spec.priority == 1000
        assert by_clique["prio-0-b"].spec.priority_class_name == "low"
        assert by_clique["prio-0-b"].spec.priority == 10

    run(scenario)


def test_incomplete_podgang_shows_pods_creation_pending_after_the_grace() -> None:
    """A gang whose pods cannot be created is not left without `Initialized`: once the grace
    has passed it shows Initialized=False (PodGangPodsCreationPending) with the count."""

    def no_pods(verb: str, kind: str, key: str) -> ServerError | None:
        return ServerError("injected: pod create failed") \
            if verb == "create" and kind == Pod.KIND else None

    async def scenario(env: Env) -> None:
        env.cluster.faults.add_hook(no_pods)
        await env.create(make_pcs("stuck", [("a", 2)]))
        grace = env.op.ctx.tunables.initialized_pending_grace
        await asyncio.sleep(grace / 2)
        assert (await env.gangs())["stuck-0"].condition("Initialized") is None
        await asyncio.sleep(grace)
        cond = (await env.gangs())["stuck-0"].condition("Initialized")
        assert cond is not None and cond.status == "False"
        assert cond.reason == "PodGangPodsCreationPending" and cond.message == "0/2 pods created"
        env.cluster.faults.remove(no_pods)
        await env.run_for(60)
        assert (await env.gangs())["stuck-0"].is_initialized

    run(scenario)


def test_a_podgang_status_change_of_wording_only_waits_for_the_report_period() -> None:
    """A count in a condition message ("1/2 scheduled") with no condition flipping is held
    for up to `status_report_period` (one write instead of one per count). So is the step
    to Starting alone (Scheduled=True, no pod Ready: Ready mostly follows at once); it goes
    out when the period ends, carrying the held wording."""
    from phalanx.api.grove import PODGANG_SCHEDULED

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("w", [("a", 2)]))
        await env.settle()
        period = env.op.tunables.status_report_period

        def scheduled(g: PodGang) -> tuple[str, str]:
            c = g.condition(PODGANG_SCHEDULED)
            return c.status, c.message

        assert scheduled((await env.gangs())["w-0"]) == ("False", "w-0-a: 0/2 scheduled")
        first, second = sorted(p.name for p in await env.pods())
        await env.cluster.bind(first, NS, "node-0")
        await asyncio.sleep(period / 2)
        assert scheduled((await env.gangs())["w-0"]) == ("False", "w-0-a: 0/2 scheduled")
        await asyncio.sleep(period)
        assert scheduled((await env.gangs())["w-0"]) == ("False", "w-0-a: 1/2 scheduled")
        await env.cluster.bind(second, NS, "node-0")
        await asyncio.sleep(period / 4)
        assert scheduled((await env.gangs())["w-0"]) == ("False", "w-0-a: 1/2 scheduled")
        await asyncio.sleep(period)
        gang = (await env.gangs())["w-0"]
        assert scheduled(gang)[0] == "True" and gang.status.phase == "Starting"

    run(scenario, binder=False, kubelet=False)
