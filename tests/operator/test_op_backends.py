"""The PodGang backend controller (GREP-375) with a scripted backend, the SchedulerCompatible
condition, and the operator end to end with every registered scheduler backend."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from op_harness import NS, Binder, Env, gated, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.config import OperatorConfiguration, SchedulerConfiguration, SchedulerProfile
from phalanx.api.core import Event, Pod, PriorityClass
from phalanx.api.grove import PodCliqueSet, PodGang
from phalanx.api.queue import unlimited_queue
from phalanx.backends import known_backends
from phalanx.backends.base import Capability, MismatchPolicy, SyncPending, ValidationIssue
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager
from phalanx.operator.conditions import BACKEND_SYNCED
from phalanx.sim.kubelet import Kubelet


class ScriptedBackend:
    name: ClassVar[str] = "default-scheduler"
    scheduler_name: ClassVar[str] = "default-scheduler"
    capabilities = frozenset({Capability.GANG})
    mismatch_policy = MismatchPolicy.PASS_THROUGH

    def __init__(self, pending_syncs: int = 0, pending_deletes: int = 0) -> None:
        self.pending_syncs, self.pending_deletes = pending_syncs, pending_deletes
        self.syncs: list[tuple[str, int]] = []
        self.deletes: list[tuple[str, list[str]]] = []

    async def init(self, client: Any) -> None:
        pass

    async def sync_podgang(self, podgang: PodGang) -> None:
        if self.pending_syncs:
            self.pending_syncs -= 1
            raise SyncPending("the scheduler's API is not ready", after=30)
        self.syncs.append((podgang.name, podgang.metadata.generation or 0))

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        if self.pending_deletes:
            self.pending_deletes -= 1
            raise SyncPending("PodGroup still has pods", after=30)
        self.deletes.append((podgang.name, list(podgang.metadata.finalizers)))

    def prepare_pod(self, pod: Pod) -> None:
        pass

    def validate_podcliqueset(self, pcs: PodCliqueSet) -> list[ValidationIssue]:
        if pcs.spec.template.topology_constraint is None:
            return []
        return [ValidationIssue("spec.template.topologyConstraint.pack.required",
                                "no topology-aware placement", Capability.TOPOLOGY)]


def run_with(backend: ScriptedBackend, scenario: Any,
             config: OperatorConfiguration | None = None, before_start: Any = None) -> None:
    """`before_start(cluster)`: objects that exist before the operator (and its admission)
    starts, as ones created under an earlier configuration."""
    async def main() -> None:
        cluster = MemoryCluster()
        if before_start is not None:
            await before_start(cluster)
        op = OperatorManager(cluster, config, registry=BackendRegistry(
            {"default-scheduler": backend}, "default-scheduler"))
        binder, kubelet = Binder(cluster), Kubelet(cluster)
        for c in (op, binder, kubelet):
            await c.start()
        env = Env(cluster, op, binder, kubelet)
        await scenario(env)
        for c in (kubelet, binder, op):
            await c.stop()

    run_virtual(main)


def test_sync_pending_holds_the_gates_until_the_backend_is_done() -> None:
    backend = ScriptedBackend(pending_syncs=2)

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("sp", [("a", 2)]))
        await env.settle()
        gang = (await env.gangs())["sp-0"]
        cond = gang.condition(BACKEND_SYNCED)
        assert (cond.status, cond.reason) == ("False", "SyncPending")
        assert gang.is_initialized
        assert all(gated(p) for p in await env.pods())  # initialized, but no backend yet
        await env.run_for(61)
        assert (await env.gangs())["sp-0"].is_condition_true(BACKEND_SYNCED)
        assert not any(gated(p) for p in await env.pods())
        assert (await env.gangs())["sp-0"].status.phase == "Running"

    run_with(backend, scenario)


def test_sync_per_generation_and_delete_before_finalizer_goes() -> None:
    backend = ScriptedBackend(pending_deletes=1)

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("gen", [("a", 2, 1)]))
        await env.settle()
        gens = [g for n, g in backend.syncs if n == "gen-0"]
        gang = (await env.gangs())["gen-0"]
        assert gens[-1] == gang.metadata.generation and len(gens) == len(set(gens))
        # A spec change (priorityClassName -> the PodGang's; minAvailable is immutable) is
        # synced again.
        await env.cluster.create(PriorityClass(metadata=ObjectMeta(name="high"), value=10))
        pcs = await env.pcs("gen")
        pcs.spec.template.priority_class_name = "high"
        await env.cluster.update(pcs)
        await env.settle()
        gang = (await env.gangs())["gen-0"]
        assert gang.spec.priority_class_name == "high"
        assert backend.syncs[-1] == ("gen-0", gang.metadata.generation)
        # The finalizer comes back if someone strips it.
        await env.cluster.patch(PodGang, "gen-0", {"metadata": {"finalizers": None}}, NS)
        await env.settle()
        gang = (await env.gangs())["gen-0"]
        assert gang.metadata.finalizers == [L.FINALIZER_SCHEDULER_BACKEND]
        # Deletion: on_podgang_delete runs (once it stops asking to wait), then it goes.
        await env.cluster.delete(PodCliqueSet, "gen", NS)
        await env.settle()
        stuck = (await env.gangs())["gen-0"]
        assert stuck.metadata.deletion_timestamp is not None and not backend.deletes
        await env.run_for(31)
        assert backend.deletes == [("gen-0", [L.FINALIZER_SCHEDULER_BACKEND])]
        assert await env.gangs() == {}

    run_with(backend, scenario)


class PodGroupLikeBackend(ScriptedBackend):
    """Waits on deletion while the gang still has pods, as a protected PodGroup does."""

    def __init__(self) -> None:
        super().__init__()
        self.client: Any = None
        self.delete_calls = 0

    async def init(self, client: Any) -> None:
        self.client = client

    async def on_podgang_delete(self, podgang: PodGang) -> None:
        self.delete_calls += 1
        pods = await self.client.list(Pod, NS, label_selector={L.LABEL_PODGANG: podgang.name})
        if pods.items:
            raise SyncPending(f"{len(pods.items)} pod(s) still use it", after=5)
        await super().on_podgang_delete(podgang)


def test_a_deleting_podgang_waits_for_its_pods_without_polling_the_backend() -> None:
    """A backend waiting for the gang's pods is asked again when the last one goes, not
    every `after` seconds meanwhile (at thousands of gangs the polls kept PodGangs
    finalizing for minutes)."""
    backend = PodGroupLikeBackend()

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("wp", [("a", 2)]))
        await env.settle()
        for pod in await env.pods():  # held: they outlive the PodCliqueSet's delete
            await env.cluster.patch(Pod, pod.name, {"metadata": {"finalizers": ["test/hold"]}},
                                    NS)
        await env.cluster.delete(PodCliqueSet, "wp", NS)
        await env.run_for(20)
        assert backend.delete_calls == 1 and not backend.deletes
        assert (await env.gangs())["wp-0"].metadata.deletion_timestamp is not None
        for pod in await env.pods():
            await env.cluster.patch(Pod, pod.name, {"metadata": {"finalizers": None}}, NS)
        await env.settle()  # no timer needed: the last pod's delete event retries it
        assert backend.delete_calls == 2
        assert backend.deletes == [("wp-0", [L.FINALIZER_SCHEDULER_BACKEND])]
        assert await env.gangs() == {}

    run_with(backend, scenario)


def test_unknown_backend_label() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("u", [("a", 1)]))
        await env.settle()
        await env.cluster.patch(PodGang, "u-0", {"metadata": {"labels": {
            L.LABEL_SCHEDULER_NAME: "no-such-scheduler"}}}, NS)
        await env.settle()
        cond = (await env.gangs())["u-0"].condition(BACKEND_SYNCED)
        assert (cond.status, cond.reason) == ("False", "UnknownBackend")
        assert "no-such-scheduler" in cond.message
        await env.op.recorder.flush()
        reasons = {e.reason for e in (await env.cluster.list(Event, NS)).items}
        assert "UnknownBackend" in reasons
        await env.cluster.delete(PodCliqueSet, "u", NS)  # and it can still be deleted
        await env.settle()
        assert await env.gangs() == {}

    run(scenario)


def _binding(name: str, *levels: tuple[str, str]) -> Any:
    from phalanx.api.base import ObjectMeta
    from phalanx.api.grove import ClusterTopologyBinding, ClusterTopologyBindingSpec, TopologyLevel

    return ClusterTopologyBinding(metadata=ObjectMeta(name=name), spec=ClusterTopologyBindingSpec(
        levels=[TopologyLevel(domain=d, key=k) for d, k in levels]))


TAS = OperatorConfiguration.model_validate({"topologyAwareScheduling": {"enabled": True}})


def test_scheduler_compatible_condition_names_ignored_features() -> None:
    async def scenario(env: Env) -> None:
        from phalanx.api.grove import TopologyConstraint, TopologyPackConstraint

        await env.create(_binding("racks", ("rack", "example.com/rack")))
        pcs = make_pcs("tc", [("a", 1)])
        pcs.spec.template.topology_constraint = TopologyConstraint(
            topology_name="racks", pack=TopologyPackConstraint(required="rack"))
        await env.create(pcs)
        await env.settle()
        status = (await env.pcs("tc")).status
        cond = next(c for c in status.conditions if c.type == "SchedulerCompatible")
        assert (cond.status, cond.reason) == ("False", "UnsupportedFeaturesIgnored")
        assert "spec.template.topologyConstraint.pack.required" in cond.message
        assert (await env.gangs())["tc-0"].status.phase == "Running"  # admitted and running

    run_with(ScriptedBackend(), scenario, TAS)


PROFILES = {"default-scheduler": {"gangScheduling": True}}


@pytest.mark.parametrize("profile", sorted(known_backends()))
def test_every_backend_end_to_end(profile: str) -> None:
    """Each registered backend: pods prepared for its scheduler, gangs run, and deleting the
    PodCliqueSet removes the backend's objects too (via on_podgang_delete / ownership)."""
    config = OperatorConfiguration(scheduler=SchedulerConfiguration(
        profiles=[SchedulerProfile(name=profile, config=PROFILES.get(profile))],
        default_profile_name=profile))

    async def scenario(env: Env) -> None:
        backend = env.op.registry.get(profile)
        pcs = make_pcs("e2e", [("a", 2), ("b", 1)], scheduler=backend.scheduler_name,
                       groups=[("g", ["b"], 2, 1)])
        if profile == "kai-scheduler":  # KAI schedules only pods of a queue (which exists)
            await env.cluster.create(unlimited_queue("default-queue"))
            pcs.metadata.labels[L.LABEL_KAI_QUEUE] = "default-queue"
        await env.create(pcs)
        await env.settle()
        gangs = await env.gangs()
        assert sorted(gangs) == ["e2e-0", "e2e-0-g-0"]
        assert all(g.status.phase == "Running" for g in gangs.values())
        assert all(g.metadata.labels[L.LABEL_SCHEDULER_NAME] == profile for g in gangs.values())
        pods = await env.pods()
        assert len(pods) == 4
        assert all(p.spec.scheduler_name == backend.scheduler_name for p in pods)
        assert all(p.metadata.labels[L.LABEL_PODGANG] for p in pods)
        ours = {"PodCliqueSet", "PodClique", "PodCliqueScalingGroup", "PodGang", "Pod", "Node",
                "Event", "Queue"}
        await env.cluster.delete(PodCliqueSet, "e2e", NS)
        await env.settle()
        await asyncio.sleep(0)
        left = {k.KIND: env.cluster.count(k) for k in env.cluster.kinds()
                if k.KIND not in ours and env.cluster.count(k)}
        assert left == {}, left
        assert env.cluster.count(Pod) == 0 and env.cluster.count(PodGang) == 0

    run(scenario, config=config)


# The objects each backend writes for its scheduler (besides the PodGang).
BACKEND_KINDS = {"default-scheduler": "Workload", "kai-scheduler": "PodGroup",
                 "volcano": "PodGroup", "koordinator": "PodGroup", "phalanx-scheduler": None,
                 "scheduler-plugins": "PodGroup"}


@pytest.mark.parametrize("profile", sorted(known_backends()))
def test_unset_scheduler_name_means_the_default_profile(profile: str) -> None:
    """A PodCliqueSet whose pods name no scheduler goes to `defaultProfileName`: its PodGangs
    carry that backend, the backend writes its objects, and the pods get its schedulerName."""
    config = OperatorConfiguration(scheduler=SchedulerConfiguration(
        profiles=[SchedulerProfile(name=profile, config=PROFILES.get(profile))],
        default_profile_name=profile))

    async def scenario(env: Env) -> None:
        backend = env.op.registry.get(profile)
        pcs = make_pcs("dflt", [("a", 2)])
        assert pcs.spec.template.cliques[0].spec.pod_spec.scheduler_name is None
        assert "schedulerName" not in pcs.to_dict()["spec"]["template"]["cliques"][0]["spec"][
            "podSpec"]
        if profile == "kai-scheduler":
            await env.cluster.create(unlimited_queue("default-queue"))
            pcs.spec.template.cliques[0].labels = {L.LABEL_KAI_QUEUE: "default-queue"}
        await env.create(pcs)
        await env.settle()
        stored = await env.pcs("dflt")  # still unset: no default sneaked in on the way
        assert stored.spec.template.cliques[0].spec.pod_spec.scheduler_name is None
        gang = (await env.gangs())["dflt-0"]
        assert gang.metadata.labels[L.LABEL_SCHEDULER_NAME] == profile
        assert gang.status.phase == "Running"
        assert {p.spec.scheduler_name for p in await env.pods()} == {backend.scheduler_name}
        kind = BACKEND_KINDS[profile]
        if kind is not None:
            written = {k.KIND for k in env.cluster.kinds() if env.cluster.count(k)}
            assert kind in written, written

    run(scenario, config=config)


LEVELS = (("zone", "topology.kubernetes.io/zone"), ("rack", "example.com/rack"),
          ("host", "kubernetes.io/hostname"))


def _legacy_topology(name: str) -> Any:
    from phalanx.api.base import ObjectMeta
    from phalanx.api.grove import ClusterTopology, ClusterTopologySpec, TopologyLevel

    return ClusterTopology(metadata=ObjectMeta(name=name), spec=ClusterTopologySpec(
        levels=[TopologyLevel(domain=d, key=k) for d, k in LEVELS]))


@pytest.mark.parametrize("kind", ["ClusterTopologyBinding", "legacy ClusterTopology"])
def test_topology_constraints_become_node_label_keys(kind: str) -> None:
    """The constraints' domains become the node-label keys of the topology their
    topologyName names (inherited by the cliques and scaling group from the PodCliqueSet's
    constraint): a ClusterTopologyBinding, or a legacy ClusterTopology of that name."""
    from phalanx.api.grove import TopologyConstraint, TopologyPackConstraint

    def workload(pack_domain: bool = False) -> PodCliqueSet:
        pcs = make_pcs("topo", [("a", 2), ("b", 1)], groups=[("g", ["b"], 2, 1)])
        t = pcs.spec.template
        if pack_domain:  # what an object created before topologyName existed holds
            t.topology_constraint = TopologyConstraint(pack_domain="zone")
        else:
            t.topology_constraint = TopologyConstraint(
                topology_name="grove-topology", pack=TopologyPackConstraint(required="zone"))
        t.cliques[0].topology_constraint = TopologyConstraint(
            pack=TopologyPackConstraint(required="rack", preferred="host"))
        t.pod_clique_scaling_groups[0].topology_constraint = TopologyConstraint(
            pack=TopologyPackConstraint(required="rack"))
        return pcs

    async def scenario(env: Env) -> None:
        await env.create(_binding("grove-topology", *LEVELS) if kind == "ClusterTopologyBinding"
                         else _legacy_topology("grove-topology"))
        await env.create(workload())
        await env.settle()
        gangs = await env.gangs()
        base, scaled = gangs["topo-0"], gangs["topo-0-g-0"]
        assert base.metadata.annotations[L.ANNOTATION_TOPOLOGY_NAME] == "grove-topology"
        assert base.spec.topology_constraint.pack_constraint.required == \
            "topology.kubernetes.io/zone"
        a = base.group("topo-0-a").topology_constraint.pack_constraint
        assert (a.required, a.preferred) == ("example.com/rack", "kubernetes.io/hostname")
        [cfg] = base.spec.topology_constraint_group_configs
        assert (cfg.name, cfg.pod_group_names) == ("topo-0-g-0", ["topo-0-g-0-b"])
        assert cfg.topology_constraint.pack_constraint.required == "example.com/rack"
        # A scaled PodGang packs by its scaling group's constraint.
        assert scaled.spec.topology_constraint.pack_constraint.required == "example.com/rack"

    run_with(ScriptedBackend(), scenario, TAS)
    if kind != "ClusterTopologyBinding":
        return

    async def created_earlier(cluster: MemoryCluster) -> None:
        # Admission refuses constraints while topology-aware scheduling is off (Grove's
        # webhook); this PodCliqueSet was created before it was turned off.
        await cluster.create(workload(pack_domain=True))

    async def disabled(env: Env) -> None:
        await env.settle()
        base = (await env.gangs())["topo-0"]
        assert base.spec.topology_constraint is None
        await env.op.recorder.flush()
        events = [e for e in (await env.cluster.list(Event, NS)).items
                  if e.reason == "TopologyConstraintIgnored"]
        assert len(events) == 1 and events[0].count == 1
        assert "disabled in the OperatorConfiguration" in events[0].message

    run_with(ScriptedBackend(), disabled, before_start=created_earlier)
