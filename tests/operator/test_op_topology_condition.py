"""The PodCliqueSet condition TopologyLevelsUnavailable (Grove's TAS4/TAS20): whether the
domains a PodCliqueSet packs into are levels of its ClusterTopology, kept up to date as the
ClusterTopology comes and goes."""

from __future__ import annotations

from op_harness import Env, make_pcs, run

from phalanx.api.base import ObjectMeta, get_condition
from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import (
    ClusterTopology,
    ClusterTopologySpec,
    TopologyConstraint,
    TopologyLevel,
    TopologyPackConstraint,
)

PHALANX = {"profiles": [{"name": "phalanx-scheduler"}], "defaultProfileName": "phalanx-scheduler"}
TAS = OperatorConfiguration.model_validate({"scheduler": PHALANX,
                                            "topologyAwareScheduling": {"enabled": True}})
NO_TAS = OperatorConfiguration.model_validate({"scheduler": PHALANX})
CONDITION = "TopologyLevelsUnavailable"


def topology(name: str, *domains: str) -> ClusterTopology:
    return ClusterTopology(metadata=ObjectMeta(name=name), spec=ClusterTopologySpec(levels=[
        TopologyLevel(domain=d, key=f"example.com/{d}") for d in domains]))


async def condition(env: Env, name: str) -> tuple[str, str, str] | None:
    cond = get_condition((await env.pcs(name)).status.conditions, CONDITION)
    return None if cond is None else (cond.status, cond.reason, cond.message)


def test_levels_missing_from_the_cluster_topology_and_the_topology_coming_and_going() -> None:
    async def scenario(env: Env) -> None:
        await env.create(topology("t1", "zone", "rack"))
        pcs = make_pcs("tc", [("a", 2)])
        pcs.spec.template.topology_constraint = TopologyConstraint(topology_name="t1",
                                                                   pack_domain="rack")
        pcs.spec.template.cliques[0].topology_constraint = TopologyConstraint(
            pack=TopologyPackConstraint(preferred="host"))
        await env.create(pcs)
        await env.create(make_pcs("plain", [("a", 1)]))
        await env.settle()
        status, reason, message = await condition(env, "tc")
        assert (status, reason) == ("True", "ClusterTopologyLevelsUnavailable")
        assert "host" in message and "rack" not in message.split("(")[0]
        assert await condition(env, "plain") == (
            "False", "AllClusterTopologyLevelsAvailable", "no topology constraints defined")

        await env.cluster.delete(ClusterTopology, "t1")
        await env.settle()
        assert (await condition(env, "tc"))[:2] == ("Unknown", "ClusterTopologyNotFound")

        await env.create(topology("t1", "zone", "rack", "host"))
        await env.settle()
        assert (await condition(env, "tc"))[:2] == ("False", "AllClusterTopologyLevelsAvailable")

    run(scenario, config=TAS)


def test_without_topology_aware_scheduling_constraints_are_reported_unknown() -> None:
    async def scenario(env: Env) -> None:
        pcs = make_pcs("off", [("a", 1)])
        pcs.spec.template.topology_constraint = TopologyConstraint(pack_domain="rack")
        await env.create(pcs)
        await env.create(make_pcs("none", [("a", 1)]))
        await env.settle()
        assert (await condition(env, "off"))[:2] == ("Unknown", "TopologyAwareSchedulingDisabled")
        assert await condition(env, "none") is None

    run(scenario, config=NO_TAS)


KAI_TAS = OperatorConfiguration.model_validate({
    "scheduler": {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "kai-scheduler"},
    "topologyAwareScheduling": {"enabled": True}})


def test_kai_topology_mirrors_every_cluster_topology_before_any_workload() -> None:
    """Grove's TAS1: the KAI Topology exists as soon as the ClusterTopology does; it follows
    a change of levels and goes with it (owned)."""
    from phalanx.api.kai_topology import KaiTopology
    from phalanx.cluster.client import NotFound

    async def scenario(env: Env) -> None:
        await env.create(topology("t1", "zone", "rack"))
        await env.settle()
        kai = await env.cluster.get(KaiTopology, "t1")
        assert [lv.node_label for lv in kai.spec.levels] == ["example.com/zone", "example.com/rack"]
        owner = kai.metadata.owner_references[0]
        assert (owner.kind, owner.name) == ("ClusterTopology", "t1")

        ct = await env.cluster.get(ClusterTopology, "t1")
        ct.spec.levels.append(TopologyLevel(domain="host", key="kubernetes.io/hostname"))
        await env.cluster.update(ct)
        await env.settle()
        kai = await env.cluster.get(KaiTopology, "t1")
        assert [lv.node_label for lv in kai.spec.levels][-1] == "kubernetes.io/hostname"

        await env.cluster.delete(ClusterTopology, "t1")
        await env.settle()
        try:
            await env.cluster.get(KaiTopology, "t1")
            raise AssertionError("the KAI Topology outlived its ClusterTopology")
        except NotFound:
            pass

    run(scenario, config=KAI_TAS)
