"""A pod's scheduling gate is lifted once: a reconcile that still sees the pod gated at the
version it lifted (its cache lags the lift) does not patch it again (gate_lifts.py)."""

from __future__ import annotations

from op_harness import NS, Env, gated, make_pcs, pod_spec, run

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod
from phalanx.cluster.objects import object_key
from phalanx.operator.gate_lifts import PendingGateLifts


def pod_at(name: str, version: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace=NS, resource_version=version),
               spec=pod_spec())


def test_a_lifted_pod_is_pending_until_the_cache_moves_on():
    lifts = PendingGateLifts()
    before = pod_at("p", "10")
    assert not lifts.pending(before)
    lifts.lifted(before)
    assert lifts.pending(before)
    assert not lifts.pending(pod_at("p", "11"))  # the cache shows the lift's result
    assert len(lifts) == 0
    lifts.lifted(before)
    lifts.forget(before)
    assert not lifts.pending(before)


def test_a_reconcile_with_a_stale_view_patches_no_pod_again():
    async def scenario(env: Env) -> tuple[int, int]:
        last_gated: dict[str, Pod] = {}  # each pod as the operator saw it before its lift

        def on_update(old: Pod, new: Pod) -> None:
            if gated(old) and not gated(new):
                last_gated[old.name] = old

        env.op.ctx.pods.add_handler(on_update=on_update)
        await env.create(make_pcs("job", [("w", 3)]))
        await env.settle()
        assert len(last_gated) == 3 and not any(gated(p) for p in await env.pods())

        patched: list[str] = []
        inner = env.cluster.patch

        async def counting_patch(kind, name, *args, **kwargs):
            if kind is Pod:
                patched.append(name)
            return await inner(kind, name, *args, **kwargs)

        env.cluster.patch = counting_patch  # type: ignore[method-assign]
        ctx = env.op.ctx
        pclq = ctx.cliques.get(object_key(NS, "job-0-w"))
        gang = ctx.gangs.get(object_key(NS, "job-0"))
        err = await env.op.podclique._lift_gates(pclq, gang, dict(last_gated))
        return len(patched), err is None

    assert run(scenario, binder=False, kubelet=False) == (0, True)
