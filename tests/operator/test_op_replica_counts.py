"""availableReplicas / updatedReplicas kept per replica between looks (replica_counts.py): a
replica whose PodCliques and scaling groups are the same objects keeps its results, any
change works that replica (and only it) out again, and the counts always equal a fresh
count from the informers' objects."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.operator.replica_counts import ReplicaCounts


def _fresh(env: Env, pcs: object) -> tuple[int, int]:
    ctx = env.op.ctx
    return ReplicaCounts(ctx.cliques, ctx.pcsgs).counts(pcs)  # type: ignore[arg-type]


async def _available_by_hand(env: Env, name: str, replicas: int) -> int:
    """Replicas whose clique `a` has its 2 Ready pods and whose scaling group (if any) has
    its available replica: read off the objects, not through ReplicaCounts."""
    cliques = await env.cliques()
    groups = {g.name: g for g in env.op.ctx.pcsgs.list()}
    ok = 0
    for i in range(replicas):
        a = cliques.get(f"{name}-{i}-a")
        sg = groups.get(f"{name}-{i}-sg")
        ok += a is not None and a.status.ready_replicas >= 2 and \
            (sg is None or sg.status.available_replicas >= 1)
    return ok


def test_counts_follow_the_changed_replicas_only() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("rc", [("a", 2, 2), ("b", 1), ("c", 1)], replicas=4,
                                  groups=[("sg", ["b", "c"], 2, 1)]))
        await env.settle()
        counts = env.op.podcliqueset_status.replicas
        pcs = env.op.ctx.pcs.get(f"{NS}/rc")
        assert counts.counts(pcs) == _fresh(env, pcs) == (4, 4)

        looked = counts.worked_out
        assert counts.counts(pcs) == (4, 4)
        assert counts.worked_out == looked  # nothing changed: no replica worked out again

        rows_before = dict(counts._rows[f"{NS}/rc"][1])
        assert await env.kubelet.fail_pod(await env.pod_name("rc-2-a-0"), restart=False)
        await env.settle()
        pcs = env.op.ctx.pcs.get(f"{NS}/rc")
        # Replica 2 lost a pod of `a` (minAvailable 2): it is repaired in place; whatever the
        # moment, the kept counts are a fresh count's.
        assert counts.counts(pcs) == _fresh(env, pcs)
        assert counts.counts(pcs)[0] == await _available_by_hand(env, "rc", 4)
        rows_after = counts._rows[f"{NS}/rc"][1]
        assert [i for i in range(4) if rows_after[i] is not rows_before[i]] == [2]
        looked = counts.worked_out

        await env.op.ctx.client.patch(type(pcs), "rc", {"spec": {"replicas": 2}}, NS)
        await env.settle()
        pcs = env.op.ctx.pcs.get(f"{NS}/rc")
        assert counts.counts(pcs) == _fresh(env, pcs) == (2, 2)
        assert (await env.pcs("rc")).status.available_replicas == 2
        assert counts.worked_out > looked  # a new generation: worked out anew

    run(scenario)


def test_a_replica_below_min_available_is_not_counted_available() -> None:
    async def scenario(env: Env) -> None:
        assert env.kubelet is not None
        await env.create(make_pcs("na", [("a", 2, 2)], replicas=3, termination_delay="1h"))
        await env.settle()
        assert (await env.pcs("na")).status.available_replicas == 3
        env.binder.paused = True  # type: ignore[union-attr]  # the replacement stays Pending
        assert await env.kubelet.fail_pod(await env.pod_name("na-1-a-1"), restart=False)
        await env.settle()
        status = (await env.pcs("na")).status
        pcs = env.op.ctx.pcs.get(f"{NS}/na")
        assert status.available_replicas == 2
        assert env.op.podcliqueset_status.replicas.counts(pcs) == _fresh(env, pcs)

    run(scenario)
