"""Gang-aware device allocation: a gang's claims are allocated inside its whole-gang
placement, alternatives are tried across the gang (kubernetes #138765), reservations are
released together on timeout, and matchAttribute composes with the gang's pack constraint."""

from __future__ import annotations

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework.config import (
    COSCHEDULING,
    PluginConfig,
    SchedulerConfiguration,
    default_profile,
)
from phalanx.sim.clusterspec import CLIQUE_LABEL

from ..gang.builders import bound_by_gang, podgang
from .kit import (
    CLIQUE,
    allocations,
    claim_pod,
    claim_spec,
    cluster_spec,
    prioritized,
    request,
    run_dra,
    settle,
    template,
)


def _member(name: str, tpl: str, gang: str = "g") -> Pod:
    return claim_pod(name, template=tpl, labels={L.LABEL_PODGANG: gang,
                                                  L.LABEL_PODCLIQUE: "w"})


def _member_by_member(client) -> Scheduler:
    profile = default_profile()
    profile.plugin_config.append(PluginConfig(name=COSCHEDULING,
                                              args={"wholeGangPlacement": False}))
    return Scheduler(client, SchedulerConfiguration(profiles=[profile]))


async def _result(client, sched, ctl):
    return await bound_by_gang(client), await allocations(client)


# kubernetes #138765: each member takes two GPUs if it can, else one; the node has two.
# One at a time, whichever goes first takes both and the other cannot fit, in any order.
ISSUE_138765 = [template("two-or-one", claim_spec(prioritized("gpus", 2, 1))),
                podgang("g", {"w": 2}), _member("a", "two-or-one"), _member("b", "two-or-one")]


def test_alternatives_are_tried_across_the_gang_before_it_fails() -> None:
    async def body(client, sched, ctl):
        return (*await _result(client, sched, ctl), sched.attempts)

    bound, allocs, attempts = run_dra(body, cluster_spec(1, 2), ISSUE_138765)
    assert bound == {"g": ["gpu-000", "gpu-000"]}
    # Placed at the first try: the representative, whose cycle makes the plan, takes its
    # planned device too (one cycle per member, no failure and retry).
    assert attempts == 2
    assert sorted(allocs.values()) == [["gpu-000/gpu-0"], ["gpu-000/gpu-1"]]


def test_member_by_member_allocation_fails_that_gang_as_upstream_does() -> None:
    bound, allocs = run_dra(_result, cluster_spec(1, 2), ISSUE_138765,
                            scheduler_factory=_member_by_member, strict=False)
    assert bound == {"g": [None, None]}
    assert allocs == {"a": None, "b": None}


def test_device_choice_of_one_member_is_revised_for_another_on_the_same_node() -> None:
    """`a` takes any GPU, `b` only gpu-0: first fit would give gpu-0 to `a`."""
    objs = [template("any", claim_spec(request())),
            template("zero", claim_spec(request(
                selectors=['device.attributes["gpu.nvidia.com"].index == 0']))),
            podgang("g", {"w": 2}), _member("a", "any"), _member("b", "zero")]
    bound, allocs = run_dra(_result, cluster_spec(1, 2), objs)
    assert bound == {"g": ["gpu-000", "gpu-000"]}
    assert allocs == {"a": ["gpu-000/gpu-1"], "b": ["gpu-000/gpu-0"]}


def test_a_gang_rejected_at_its_timeout_releases_every_reserved_device() -> None:
    """Two members reserve devices and wait at Permit for a third whose template never
    comes; at the timeout all reservations go together and a lone pod gets the GPUs."""

    async def body(client, sched, ctl):
        waiting = sum(1 for _ in sched.waiting)
        await client.create(claim_pod("solo", template="all2"))
        await settle(sched, ctl)
        nodes = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        inflight = dict(sched._shared["dra/tracker"].inflight)
        return waiting, nodes, await allocations(client), inflight

    waiting, nodes, allocs, inflight = run_dra(body, cluster_spec(1, 2), [
        template("one", claim_spec(request())), template("all2", claim_spec(request(count=2))),
        podgang("g", {"w": 3}), _member("a", "one"), _member("b", "one"),
        _member("c", "missing")])
    assert waiting == 0  # settled: the gang timed out, nobody waits
    assert inflight == {}
    assert nodes["solo"] == "gpu-000"
    assert nodes["a"] is None and nodes["b"] is None
    assert allocs["solo"] == ["gpu-000/gpu-0", "gpu-000/gpu-1"]
    assert allocs["a"] is None and allocs["b"] is None


def test_match_attribute_on_the_clique_composes_with_a_required_pack_on_it() -> None:
    """Two cliques of two 2-GPU nodes; clique A has 2 free GPUs (a lone pod holds the
    others), so a 3-member gang packed on one clique must go to clique B."""
    spec = cluster_spec(4, 2, domain_nodes=2)

    async def body(client, sched, ctl):
        await client.create(podgang("g", {"w": 3}, required=CLIQUE_LABEL))
        for i in range(3):
            await client.create(_member(f"m{i}", "one"))
        await settle(sched, ctl)
        return await bound_by_gang(client), await allocations(client), \
            {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}

    bound, allocs, nodes = run_dra(body, spec, [
        template("one", claim_spec(request(count=1), match=CLIQUE)),
        template("two", claim_spec(request(count=2), match=CLIQUE)),
        claim_pod("hog", template="two")])
    hog_clique = {"gpu-000": "A", "gpu-001": "A", "gpu-002": "B", "gpu-003": "B"}
    assert nodes["hog"] is not None
    members = [n for n in bound["g"] if n]
    assert len(members) == 3
    assert {hog_clique[n] for n in members} == {"B" if hog_clique[nodes["hog"]] == "A"
                                                 else "A"}
    devices = [d for k in ("m0", "m1", "m2") for d in allocs[k]]
    assert len(devices) == len(set(devices)) == 3
