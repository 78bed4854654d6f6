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
