"""A scaling group scaled up by many replicas: its new PodGangs (PodCliqueSet controller) and
PodCliques (scaling-group controller) are created concurrently, as Grove's RunConcurrently
creates a group's PodCliques, and never more at once than the operator's write bound.

Each create of those kinds takes 50 ms of (virtual) time here, as on a busy API server: made
one at a time, 20 PodGangs and 40 PodCliques took 3 s before the first new pod existed."""

from __future__ import annotations

import asyncio
from typing import Any

from op_harness import Env, make_pcs, run

from phalanx.api.grove import PodClique, PodCliqueSet, PodGang

LATENCY = 0.05  # seconds of virtual time per create of a PodGang or PodClique
BOUND = 4  # the operator's write bound in this test (Tunables.write_concurrency)


class InFlight:
    """Wraps the cluster's create: counts the creates of `kinds` in flight at once."""

    def __init__(self, env: Env, kinds: tuple[type, ...]) -> None:
        self.kinds = kinds
        self.now: dict[str, int] = {k.KIND: 0 for k in kinds}
        self.most: dict[str, int] = {k.KIND: 0 for k in kinds}
        self.created: dict[str, int] = {k.KIND: 0 for k in kinds}
        self.last = 0.0  # virtual time the last of them was created
        inner = env.cluster.create

        async def create(obj: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(obj, self.kinds):
                return await inner(obj, *args, **kwargs)
            kind = obj.KIND
            self.now[kind] += 1
            self.most[kind] = max(self.most[kind], self.now[kind])
            try:
                await asyncio.sleep(LATENCY)  # the API server's answer takes this long
                out = await inner(obj, *args, **kwargs)
                self.created[kind] += 1
                self.last = asyncio.get_running_loop().time()
                return out
            finally:
                self.now[kind] -= 1

        env.cluster.create = create  # type: ignore[method-assign]


def test_a_scaling_group_scale_up_creates_its_podgangs_and_podcliques_concurrently() -> None:
    async def scenario(env: Env) -> None:
        env.op.tunables.write_concurrency = BOUND
        await env.create(make_pcs("sg", [("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 1, 1)]))
        await env.settle()
        flight = InFlight(env, (PodGang, PodClique))
        loop = asyncio.get_running_loop()
        pcs = await env.pcs("sg")
        pcs.spec.template.pod_clique_scaling_groups[0].replicas = 21
        started = loop.time()
        await env.cluster.update(pcs)
        await env.settle()
        assert flight.created == {"PodGang": 20, "PodClique": 40}
        assert flight.most == {"PodGang": BOUND, "PodClique": BOUND}
        assert len(await env.gangs()) == 21
        assert len(await env.pods()) == 42
        # One at a time, the 60 creates alone would end 3 s after the scale-up; within the
        # bound of 4, (5 + 10) x 50 ms, plus the pod creates between the two steps.
        assert flight.last - started < 60 * LATENCY / 2

    run(scenario)


def test_the_write_bound_is_per_podcliqueset_reconcile_across_its_replicas() -> None:
    """Three replicas, each with 8 new scaled PodGangs: the replica syncs run concurrently
    and share one bound, so no more than BOUND PodGang creates are ever in flight."""
    async def scenario(env: Env) -> None:
        env.op.tunables.write_concurrency = BOUND
        pcs = make_pcs("multi", [("leader", 1)], groups=[("grp", ["leader"], 1, 1)])
        pcs.spec.replicas = 3
        await env.create(pcs)
        await env.settle()
        flight = InFlight(env, (PodGang,))
        pcs = await env.pcs("multi")
        pcs.spec.template.pod_clique_scaling_groups[0].replicas = 9
        await env.cluster.update(pcs)
        await env.settle()
        assert flight.created == {"PodGang": 24}
        assert flight.most == {"PodGang": BOUND}
        assert (await env.cluster.get(PodCliqueSet, "multi", "default")).spec.replicas == 3

    run(scenario)
