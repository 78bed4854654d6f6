"""The operator hands its informers to the scheduler backends as their cache: KAI's and
Volcano's PodGang syncs find the PodCliqueSet's queue there, with no read of the PodCliqueSet
from the API server per PodGang (Grove's backends read it through controller-runtime's cached
client)."""

from __future__ import annotations

from typing import Any

import pytest
from op_harness import Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.config import OperatorConfiguration, SchedulerConfiguration, SchedulerProfile
from phalanx.api.grove import PodCliqueSet
from phalanx.api.queue import unlimited_queue
from phalanx.api.scheduling import KaiPodGroup, VolcanoPodGroup

# (queue label, PodGroup kind, the queue named). The embedded cluster has only Volcano's
# `default` queue (admission_queue.py); the profile's defaultQueue is another, so a PodGroup
# in `default` shows the label was read.
CASES = {"kai-scheduler": (L.LABEL_KAI_QUEUE, KaiPodGroup, "team-q"),
         "volcano": (L.LABEL_VOLCANO_QUEUE, VolcanoPodGroup, "default")}


@pytest.mark.parametrize("profile", sorted(CASES))
def test_podgang_syncs_read_the_podcliqueset_from_the_operators_cache(profile: str) -> None:
    label, kind, queue = CASES[profile]
    fallback = {"defaultQueue": "fallback"} if profile == "volcano" else None
    config = OperatorConfiguration(scheduler=SchedulerConfiguration(
        profiles=[SchedulerProfile(name=profile, config=fallback)], default_profile_name=profile))

    async def scenario(env: Env) -> None:
        reads: list[str] = []
        inner = env.cluster.get

        async def get(k: Any, name: str, *args: Any, **kw: Any) -> Any:
            if k is PodCliqueSet:
                reads.append(name)
            return await inner(k, name, *args, **kw)

        env.cluster.get = get  # type: ignore[method-assign]
        backend = env.op.registry.get(profile)
        await env.cluster.create(unlimited_queue("team-q"))
        pcs = make_pcs("cached", [("a", 2)], scheduler=backend.scheduler_name,
                       groups=[("g", ["a"], 3, 1)])
        pcs.metadata.labels[label] = queue
        await env.create(pcs)
        await env.settle()
        groups = (await env.cluster.list(kind, "default")).items
        assert sorted(g.name for g in groups) == ["cached-0", "cached-0-g-0", "cached-0-g-1"]
        assert {g.spec.queue for g in groups} == {queue}
        assert backend.cache is not None
        assert reads == []  # three PodGang syncs, no GET of their PodCliqueSet

    run(scenario, config=config)


TAS_PROFILES = {"kai-scheduler": (L.LABEL_KAI_QUEUE, "team-q"),
                "volcano": (L.LABEL_VOLCANO_QUEUE, "default"), "koordinator": None}


@pytest.mark.parametrize("profile", sorted(TAS_PROFILES))
def test_podgang_syncs_read_the_topology_from_the_operators_cache(profile: str) -> None:
    """A PodGang whose constraints name a topology: its backend maps the levels from the
    ClusterTopologyBinding the operator watches, with no GET of it per PodGang sync."""
    from phalanx.api.base import ObjectMeta
    from phalanx.api.grove import (
        ClusterTopology,
        ClusterTopologyBinding,
        ClusterTopologyBindingSpec,
        TopologyConstraint,
        TopologyLevel,
        TopologyPackConstraint,
    )

    config = OperatorConfiguration.model_validate({
        "topologyAwareScheduling": {"enabled": True},
        "scheduler": {"profiles": [{"name": profile}], "defaultProfileName": profile}})

    async def scenario(env: Env) -> None:
        reads: list[str] = []
        inner = env.cluster.get

        async def get(k: Any, name: str, *args: Any, **kw: Any) -> Any:
            if k in (ClusterTopologyBinding, ClusterTopology):
                reads.append(name)
            return await inner(k, name, *args, **kw)

        env.cluster.get = get  # type: ignore[method-assign]
        backend = env.op.registry.get(profile)
        await env.cluster.create(unlimited_queue("team-q"))
        await env.create(ClusterTopologyBinding(
            metadata=ObjectMeta(name="racks"), spec=ClusterTopologyBindingSpec(levels=[
                TopologyLevel(domain="zone", key="topology.kubernetes.io/zone"),
                TopologyLevel(domain="rack", key="example.com/rack")])))
        await env.settle()
        pcs = make_pcs("tas", [("a", 2)], scheduler=backend.scheduler_name,
                       groups=[("g", ["a"], 3, 1)])
        pcs.spec.template.topology_constraint = TopologyConstraint(
            topology_name="racks", pack=TopologyPackConstraint(required="rack"))
        named = TAS_PROFILES[profile]
        if named is not None:
            pcs.metadata.labels[named[0]] = named[1]
        await env.create(pcs)
        admitted = len(reads)  # admission resolves the name once, on the create
        await env.settle()
        gangs = await env.gangs()
        assert sorted(gangs) == ["tas-0", "tas-0-g-0", "tas-0-g-1"]
        assert all(g.spec.topology_constraint is not None for g in gangs.values())
        assert reads[admitted:] == []  # the PodGang syncs read none

    run(scenario, config=config)
