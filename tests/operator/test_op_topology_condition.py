"""The PodCliqueSet condition TopologyLevelsUnavailable (Grove's TAS4/TAS20): whether the
domains a PodCliqueSet packs into are levels of the ClusterTopologyBinding its topologyName
names, kept up to date as the binding comes and goes; and the KAI Topology named after each
binding (Grove's TAS1)."""

from __future__ import annotations

from op_harness import Env, make_pcs, run

from phalanx.api.base import ObjectMeta, get_condition
from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import (
    ClusterTopology,
    ClusterTopologyBinding,
    ClusterTopologyBindingSpec,
    ClusterTopologySpec,
    PodCliqueSet,
    TopologyConstraint,
    TopologyLevel,
    TopologyPackConstraint,
)
from phalanx.cluster.memory import MemoryCluster

PHALANX = {"profiles": [{"name": "phalanx-scheduler"}], "defaultProfileName": "phalanx-scheduler"}
TAS = OperatorConfiguration.model_validate({"scheduler": PHALANX,
                                            "topologyAwareScheduling": {"enabled": True}})
NO_TAS = OperatorConfiguration.model_validate({"scheduler": PHALANX})
CONDITION = "TopologyLevelsUnavailable"


def _levels(*domains: str) -> list[TopologyLevel]:
    return [TopologyLevel(domain=d, key=f"example.com/{d}") for d in domains]


def binding(name: str, *domains: str) -> ClusterTopologyBinding:
    return ClusterTopologyBinding(metadata=ObjectMeta(name=name),
                                  spec=ClusterTopologyBindingSpec(levels=_levels(*domains)))


def legacy(name: str, *domains: str) -> ClusterTopology:
    return ClusterTopology(metadata=ObjectMeta(name=name),
                           spec=ClusterTopologySpec(levels=_levels(*domains)))


async def condition(env: Env, name: str) -> tuple[str, str, str] | None:
    cond = get_condition((await env.pcs(name)).status.conditions, CONDITION)
    return None if cond is None else (cond.status, cond.reason, cond.message)


def _packed(name: str, topology: str | None, required: str, *,
            deprecated: bool = False) -> PodCliqueSet:
    pcs = make_pcs(name, [("a", 2)])
    pcs.spec.template.topology_constraint = (
        TopologyConstraint(topology_name=topology, pack_domain=required) if deprecated else
        TopologyConstraint(topology_name=topology, pack=TopologyPackConstraint(required=required)))
    return pcs


def test_levels_missing_from_the_binding_and_the_binding_coming_and_going() -> None:
    async def scenario(env: Env) -> None:
        await env.create(binding("t1", "zone", "rack", "host"))
        pcs = _packed("tc", "t1", "rack")
        pcs.spec.template.cliques[0].topology_constraint = TopologyConstraint(
            pack=TopologyPackConstraint(preferred="host"))
        await env.create(pcs)
        await env.create(make_pcs("plain", [("a", 1)]))
        await env.settle()
        assert (await condition(env, "tc"))[:2] == ("False", "AllClusterTopologyLevelsAvailable")
        assert await condition(env, "plain") == (
            "False", "AllClusterTopologyLevelsAvailable", "no topology constraints defined")

        # The levels shrink under the PodCliqueSet: `host` is no longer a level.
        ct = await env.cluster.get(ClusterTopologyBinding, "t1")
        ct.spec.levels = _levels("zone", "rack")
        await env.cluster.update(ct)
        await env.settle()
        status, reason, message = await condition(env, "tc")
        assert (status, reason) == ("True", "ClusterTopologyLevelsUnavailable")
        assert "host" in message and "rack" not in message.split("(")[0]

        await env.cluster.delete(ClusterTopologyBinding, "t1")
        await env.settle()
        assert (await condition(env, "tc"))[:2] == ("Unknown", "ClusterTopologyNotFound")

        await env.create(binding("t1", "zone", "rack", "host"))
        await env.settle()
        assert (await condition(env, "tc"))[:2] == ("False", "AllClusterTopologyLevelsAvailable")

    run(scenario, config=TAS)


def test_a_legacy_object_without_topology_name_reports_it_missing() -> None:
    """An object created before topologyName existed (packDomain, no name): Grove resolves
    no topology for it (there is no "the only topology" fallback) and says so."""
    async def earlier(cluster: MemoryCluster) -> None:
        await cluster.create(legacy("only", "zone", "rack"))
        await cluster.create(_packed("old", None, "rack", deprecated=True))

    async def scenario(env: Env) -> None:
        await env.settle()
        assert (await condition(env, "old"))[:2] == ("Unknown", "TopologyNameMissing")
        gang = (await env.gangs())["old-0"]
        assert gang.spec.topology_constraint is None  # nothing enforced, as the condition says

    run(scenario, config=TAS, before_start=earlier)


def test_a_binding_wins_over_a_legacy_topology_of_the_same_name() -> None:
    async def scenario(env: Env) -> None:
        await env.create(legacy("t", "zone", "rack"))
        await env.create(binding("t", "zone", "block"))
        await env.create(_packed("pcs", "t", "block"))
        await env.settle()
        assert (await condition(env, "pcs"))[:2] == ("False", "AllClusterTopologyLevelsAvailable")
        gang = (await env.gangs())["pcs-0"]
        assert gang.spec.topology_constraint.pack_constraint.required == "example.com/block"

    run(scenario, config=TAS)


def test_without_topology_aware_scheduling_constraints_are_reported_unknown() -> None:
    """Admission refuses constraints while topology-aware scheduling is off (Grove's
    webhook); one created before it was turned off is reported, not enforced."""
    async def earlier(cluster: MemoryCluster) -> None:
        await cluster.create(_packed("off", "t", "rack"))

    async def scenario(env: Env) -> None:
        from phalanx.cluster.client import Invalid

        try:
            await env.create(_packed("new", "t", "rack"))
            raise AssertionError("a topology constraint was admitted with TAS off")
        except Invalid as err:
            assert err.field == "spec.template.topologyConstraint"
            assert "Topology Aware Scheduling is disabled" in err.message
        await env.create(make_pcs("none", [("a", 1)]))
        await env.settle()
        assert (await condition(env, "off"))[:2] == ("Unknown", "TopologyAwareSchedulingDisabled")
        assert await condition(env, "none") is None

    run(scenario, config=NO_TAS, before_start=earlier)


KAI_TAS = OperatorConfiguration.model_validate({
    "scheduler": {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "kai-scheduler"},
    "topologyAwareScheduling": {"enabled": True}})


def test_kai_topology_named_after_each_binding_before_any_workload() -> None:
    """Grove's TAS1: the KAI Topology exists as soon as the ClusterTopologyBinding does, named
    after it and owned by it; it follows a change of levels and goes with it."""
    from phalanx.api.kai_topology import KaiTopology
    from phalanx.cluster.client import NotFound

    async def scenario(env: Env) -> None:
        await env.create(binding("t1", "zone", "rack"))
        await env.settle()
        kai = await env.cluster.get(KaiTopology, "t1")
        assert [lv.node_label for lv in kai.spec.levels] == ["example.com/zone", "example.com/rack"]
        owner = kai.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.controller) == ("ClusterTopologyBinding", "t1", True)
        ct = await env.cluster.get(ClusterTopologyBinding, "t1")
        [status] = ct.status.scheduler_topology_statuses
        assert (status.scheduler_name, status.topology_reference, status.in_sync) == (
            "kai-scheduler", "t1", True)

        ct.spec.levels.append(TopologyLevel(domain="host", key="kubernetes.io/hostname"))
        await env.cluster.update(ct)
        await env.settle()
        kai = await env.cluster.get(KaiTopology, "t1")
        assert [lv.node_label for lv in kai.spec.levels][-1] == "kubernetes.io/hostname"

        await env.cluster.delete(ClusterTopologyBinding, "t1")
        await env.settle()
        try:
            await env.cluster.get(KaiTopology, "t1")
            raise AssertionError("the KAI Topology outlived its ClusterTopologyBinding")
        except NotFound:
            pass

    run(scenario, config=KAI_TAS)
