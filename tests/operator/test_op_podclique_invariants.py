"""PodClique controller invariants no other test guarded (issue 21, "Gang invariants"):

- a pod's gate is lifted only once its PodGang is `Initialized`. The references and
  `Initialized` are two writes (a spec update, then a status update); no pod may be ungated
  between them, even when the `Initialized` write keeps failing;
- no pod is created while its PodGang is absent (deleted, its re-creation failing);
- no index gets two pods while the pod cache lags behind the creates (pods have generated
  names, so only the expectations stand between a stale cache and a second pod).
"""

from __future__ import annotations

import asyncio

from op_harness import NS, Env, gated, make_pcs, run

from phalanx.api.grove import PodClique, PodGang
from phalanx.cluster.client import ServerError
from phalanx.cluster.objects import object_key
from phalanx.operator.conditions import BACKEND_SYNCED
from tests.podnames import hostname, hostnames_of_refs


def test_no_gate_is_lifted_while_the_initialized_write_fails() -> None:
    gang_key = object_key(NS, "inv-0")

    def fail_initialized(verb: str, kind: str, key: str) -> ServerError | None:
        # Every status write of the PodGang fails: the references (a spec update) go
        # through, `Initialized=True` never does.
        if verb == "update_status" and kind == PodGang.KIND and key == gang_key:
            return ServerError("injected: status write failed")
        return None

    async def scenario(env: Env) -> None:
        env.cluster.faults.add_hook(fail_initialized)
        await env.create(make_pcs("inv", [("a", 3)]))
        await asyncio.sleep(120)  # two minutes of retries with backoff
        gang = (await env.gangs())["inv-0"]
        assert not gang.is_initialized and not gang.is_condition_true(BACKEND_SYNCED)
        pods = await env.pods()
        refs = hostnames_of_refs([r for g in gang.spec.pod_groups for r in g.pod_references], pods)
        assert sorted(refs) == ["inv-0-a-0", "inv-0-a-1", "inv-0-a-2"]  # the first write
        assert len(pods) == 3 and all(gated(p) and not p.spec.node_name for p in pods)

        env.cluster.faults.remove(fail_initialized)  # the API server recovers
        await env.run_for(180)  # the retry backoff has reached ~80 s by now
        gang = (await env.gangs())["inv-0"]
        assert gang.is_initialized and gang.is_condition_true(BACKEND_SYNCED)
        pods = await env.pods()
        assert all(not gated(p) and p.spec.node_name for p in pods)

    run(scenario)


def test_no_pod_is_created_while_its_podgang_is_absent() -> None:
    def no_podgang(verb: str, kind: str, key: str) -> ServerError | None:
        return ServerError("injected: PodGang create failed") \
            if verb == "create" and kind == PodGang.KIND else None

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("abs", [("a", 3)]))
        await env.settle()
        assert len(await env.pods()) == 3
        env.cluster.faults.add_hook(no_podgang)
        await env.cluster.delete(PodGang, "abs-0", NS)
        await asyncio.sleep(5)
        await env.delete_pod("abs-0-a-1")
        await asyncio.sleep(120)  # two minutes of retries: the PodGang is still missing
        assert "abs-0" not in await env.gangs()
        assert sorted(hostname(p) for p in await env.pods()) == ["abs-0-a-0", "abs-0-a-2"]

        env.cluster.faults.remove(no_podgang)
        await env.run_for(60)
        assert "abs-0" in await env.gangs()
        pods = {hostname(p): p for p in await env.pods()}
        assert sorted(pods) == ["abs-0-a-0", "abs-0-a-1", "abs-0-a-2"]

    run(scenario)


def test_a_lagging_pod_cache_never_makes_a_second_pod_for_an_index() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("lag", [("a", 2)]))
        await env.settle()
        key = object_key(NS, "lag-0-a")
        ctx = env.op.ctx
        stale = list(ctx.pods_of(key))
        real_pods_of = ctx.pods_of
        # The informer never shows this clique's new pods (a watch far behind the writes).
        ctx.pods_of = lambda k: list(stale) if k == key else real_pods_of(k)  # type: ignore[method-assign]
        try:
            await env.cluster.patch(PodClique, "lag-0-a", {"spec": {"replicas": 4}}, NS)
            await env.settle()  # the controller creates 2 pods and sees none of them
            assert len(await env.pods()) == 4
            for _ in range(3):  # more reconciles on the same stale view
                await env.op.podclique.reconcile(key)
            assert len(await env.pods()) == 4
        finally:
            ctx.pods_of = real_pods_of  # type: ignore[method-assign]
        await env.settle()
        assert sorted(hostname(p) for p in await env.pods()) == [f"lag-0-a-{k}" for k in range(4)]
        await env.op.podclique.reconcile(key)  # the next reconcile sees them all ...
        assert len(env.op.podclique.expectations) == 0  # ... and settles its expectations

    run(scenario)
