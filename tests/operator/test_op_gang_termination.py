"""Gang termination: a PodClique below minAvailable for longer than terminationDelay gets
its whole PodCliqueSet replica recreated; shorter or milder trouble does not."""

from __future__ import annotations

import asyncio

from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Event
from phalanx.api.grove import PodCliqueScalingGroup
from phalanx.operator.conditions import MIN_AVAILABLE_BREACHED
from tests.podnames import hostname


async def uids(env: Env, prefix: str) -> dict[str, str]:
    """Pods by hostname (their names are generated)."""
    return {hostname(p): p.metadata.uid or "" for p in await env.pods()
            if hostname(p).startswith(prefix)}


def test_breached_replica_is_recreated_after_termination_delay() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("gt", [("a", 3, 2), ("b", 1)], replicas=2,
                                  termination_delay="10m"))
        await env.settle()
        r0, r1 = await uids(env, "gt-0-"), await uids(env, "gt-1-")
        gang0_uid = (await env.gangs())["gt-0"].metadata.uid

        for name in ("gt-0-a-0", "gt-0-a-1"):
            assert await env.kubelet.fail_pod(await env.pod_name(name), restart=False)
        await env.settle()
        clique = (await env.cliques())["gt-0-a"]
        cond = next(c for c in clique.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "True" and cond.reason == "InsufficientReadyPods"
        assert (await env.pcs("gt")).status.available_replicas == 1

        await asyncio.sleep(9 * 60)  # not yet: the delay has not passed
        await env.settle()
        assert await uids(env, "gt-0-") == r0
        assert env.op.gang_termination.terminations == 0

        await asyncio.sleep(2 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        after0 = await uids(env, "gt-0-")
        assert sorted(after0) == sorted(r0)  # same hostnames, all recreated
        assert not set(after0.values()) & set(r0.values())
        assert await uids(env, "gt-1-") == r1  # the healthy replica is untouched
        gangs = await env.gangs()
        assert gangs["gt-0"].metadata.uid != gang0_uid  # a new PodGang for the new gang
        assert all(g.status.phase == "Running" for g in gangs.values())
        assert (await env.pcs("gt")).status.available_replicas == 2

        await asyncio.sleep(60 * 60)  # and it stays healthy: no termination loop
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        await env.op.recorder.flush()
        events = [e for e in (await env.cluster.list(Event, "default")).items
                  if e.reason == "GangTerminated"]
        assert len(events) == 1 and events[0].type == "Warning"
        assert events[0].message.startswith("replica 0: gt-0-a stayed below minAvailable")

    run(scenario)


def test_failure_within_min_available_is_repaired_in_place() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("ok", [("a", 3, 2)], termination_delay="1m"))
        await env.settle()
        before = await uids(env, "ok-")
        # 2 of 3 still up, minAvailable 2
        assert await env.kubelet.fail_pod(await env.pod_name("ok-0-a-2"), restart=False)
        await env.run_for(10 * 60)
        assert env.op.gang_termination.terminations == 0
        after = await uids(env, "ok-")
        assert sorted(after) == sorted(before)
        assert after["ok-0-a-2"] != before["ok-0-a-2"]  # the failed pod was replaced
        assert {n: u for n, u in after.items() if n != "ok-0-a-2"} == \
            {n: u for n, u in before.items() if n != "ok-0-a-2"}  # nothing else touched
        assert all(p.status.phase == "Running" for p in await env.pods())
        gang = (await env.gangs())["ok-0"]
        assert gang.status.phase == "Running" and "ok-0-a-2" in gang.pod_names()
        clique = (await env.cliques())["ok-0-a"]
        cond = next(c for c in clique.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "False"


def test_never_scheduled_clique_is_not_breached() -> None:
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        env.binder.paused = True
        await env.create(make_pcs("idle", [("a", 2)], termination_delay="1m"))
        await asyncio.sleep(30 * 60)
        await env.settle()
        clique = (await env.cliques())["idle-0-a"]
        cond = next(c for c in clique.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert (cond.status, cond.reason) == ("False", "InsufficientScheduledPods")
        assert env.op.gang_termination.terminations == 0

    run(scenario)


def test_scaling_group_breach_recreates_the_replica() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("sgt", [("leader", 1), ("worker", 2)],
                                  groups=[("grp", ["leader", "worker"], 2, 2)],
                                  termination_delay="5m"))
        await env.settle()
        before = await uids(env, "sgt-0-")
        assert await env.kubelet.fail_pod(await env.pod_name("sgt-0-grp-1-leader-0"), restart=False)
        await env.settle()
        group = await env.cluster.get(PodCliqueScalingGroup, "sgt-0-grp", "default")
        cond = next(c for c in group.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "True"
        await asyncio.sleep(6 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        after = await uids(env, "sgt-0-")
        assert sorted(after) == sorted(before)
        assert not set(after.values()) & set(before.values())
        assert all(g.status.phase == "Running" for g in (await env.gangs()).values())

    run(scenario)


def test_an_unplaceable_replacement_counts_toward_the_breach() -> None:
    """Grove's GT1/GT3: a deleted pod whose replacement cannot be scheduled leaves the
    clique below minAvailable; after terminationDelay the replica is recreated."""
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        await env.create(make_pcs("lost", [("a", 2, 1), ("b", 1)], termination_delay="1m"))
        await env.settle()
        before = await uids(env, "lost-0-")
        env.binder.paused = True  # no capacity left: replacements stay Pending
        await env.delete_pod("lost-0-a-0")
        await env.run_for(5 * 60)
        assert env.op.gang_termination.terminations == 0  # 1 of 2 up, minAvailable 1
        clique = (await env.cliques())["lost-0-a"]
        cond = next(c for c in clique.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "False"

        await env.delete_pod("lost-0-a-1")
        await env.settle()
        clique = (await env.cliques())["lost-0-a"]
        cond = next(c for c in clique.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert (cond.status, cond.reason) == ("True", "ScheduledReplicasBelowMinAvailable")
        await env.run_for(2 * 60)
        assert env.op.gang_termination.terminations == 1
        after = await uids(env, "lost-0-")
        assert not set(after.values()) & set(before.values())  # every pod recreated
        # The new gang cannot be placed either, and it is not terminated again.
        await env.run_for(30 * 60)
        assert env.op.gang_termination.terminations == 1
        await env.binder.resume()
        await env.settle()
        assert all(p.status.phase == "Running" for p in await env.pods())

    run(scenario)


def test_a_breached_scaling_group_replica_is_recreated_alone() -> None:
    """Grove's GT4/GT5: with the group still at minAvailable, only the breached replica's
    PodCliques are recreated; the other replica and the standalone clique keep running."""
    async def scenario(env: Env) -> None:
        assert env.binder is not None
        await env.create(make_pcs("one", [("a", 2, 1), ("b", 1), ("c", 3, 3)],
                                  groups=[("sg", ["b", "c"], 2, 1)], termination_delay="1m"))
        await env.settle()
        before = await uids(env, "one-0-")
        env.binder.paused = True
        await env.delete_pod("one-0-sg-0-c-1")  # c needs 3 of 3
        await env.settle()
        group = await env.cluster.get(PodCliqueScalingGroup, "one-0-sg", NS)
        cond = next(c for c in group.status.conditions if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "False"  # replica 1 is healthy: the group holds minAvailable 1
        await env.run_for(2 * 60)
        assert (env.op.gang_termination.terminations,
                env.op.gang_termination.group_terminations) == (0, 1)
        after = await uids(env, "one-0-")
        replica0 = [n for n in before if n.startswith("one-0-sg-0-")]
        assert all(after[n] != before[n] for n in replica0)  # replica 0 recreated
        assert all(after[n] == before[n] for n in before if n not in replica0)  # rest kept
        await env.run_for(30 * 60)  # the new replica cannot be placed: no loop
        assert env.op.gang_termination.group_terminations == 1
        await env.binder.resume()
        await env.settle()
        assert all(p.status.phase == "Running" for p in await env.pods())

    run(scenario)


def test_reconciles_part_way_through_the_delay_do_not_terminate_early() -> None:
    """The breach's own requeue fires at the deadline; any other reconcile before it (another
    replica's breach, a spec change, a resync) must find time left and wait (issue 21)."""
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("mid", [("a", 3, 2)], replicas=2, termination_delay="10m"))
        await env.settle()
        for name in ("mid-0-a-0", "mid-0-a-1"):
            assert await env.kubelet.fail_pod(await env.pod_name(name), restart=False)
        await env.settle()
        gt = env.op.gang_termination
        start = env.cluster.clock.now()
        for minute in (3, 5, 9):  # direct reconciles, and a second replica's breach at 5
            await asyncio.sleep(start + 60 * minute - env.cluster.clock.now())
            if minute == 5:
                for name in ("mid-1-a-0", "mid-1-a-1"):
                    assert await env.kubelet.fail_pod(await env.pod_name(name), restart=False)
            await gt.reconcile(f"{NS}/mid")
            await env.settle()
            assert gt.terminations == 0, f"terminated at {minute} min"
        await env.run_for(2 * 60)  # 11 min: replica 0 only
        assert gt.terminations == 1
        await env.run_for(5 * 60)  # 16 min: replica 1's 10 min are up too
        assert gt.terminations == 2

    run(scenario)


def test_a_breach_getting_worse_does_not_restart_the_delay() -> None:
    """A third pod failing changes the breach's message, not when it started: the replica is
    recreated 10 min after the first breach, not 10 min after it got worse."""
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("worse", [("a", 3, 2)], termination_delay="10m"))
        await env.settle()
        for name in ("worse-0-a-0", "worse-0-a-1"):
            assert await env.kubelet.fail_pod(await env.pod_name(name), restart=False)
        await env.settle()
        first = next(c for c in (await env.cliques())["worse-0-a"].status.conditions
                     if c.type == MIN_AVAILABLE_BREACHED)
        await env.run_for(6 * 60)
        assert await env.kubelet.fail_pod(await env.pod_name("worse-0-a-2"), restart=False)
        await env.settle()
        cond = next(c for c in (await env.cliques())["worse-0-a"].status.conditions
                    if c.type == MIN_AVAILABLE_BREACHED)
        assert cond.status == "True" and cond.message != first.message
        assert cond.last_transition_time == first.last_transition_time
        await env.run_for(5 * 60)  # 11 min after the first breach, 5 after it got worse
        assert env.op.gang_termination.terminations == 1

    run(scenario)


def test_only_the_breached_replica_of_many_is_looked_at_and_recreated() -> None:
    """The controller walks the breached PodCliques (an informer index), not every replica:
    the index holds exactly the breached one while it lasts, and only its replica is
    recreated."""
    from phalanx.operator.gangtermination import IDX_BREACHED

    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("many", [("a", 2, 2)], replicas=6, termination_delay="5m"))
        await env.settle()
        before = {i: await uids(env, f"many-{i}-") for i in range(6)}
        breached = env.op.ctx.cliques
        assert breached.by_index(IDX_BREACHED, f"{NS}/many") == []

        assert await env.kubelet.fail_pod(await env.pod_name("many-4-a-1"), restart=False)
        await env.settle()
        assert [c.name for c in breached.by_index(IDX_BREACHED, f"{NS}/many")] == ["many-4-a"]

        await asyncio.sleep(6 * 60)
        await env.settle()
        assert env.op.gang_termination.terminations == 1
        for i in range(6):
            after = await uids(env, f"many-{i}-")
            if i == 4:
                assert sorted(after) == sorted(before[4])
                assert not set(after.values()) & set(before[4].values())
            else:
                assert after == before[i]
        assert breached.by_index(IDX_BREACHED, f"{NS}/many") == []

    run(scenario)
