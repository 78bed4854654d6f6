"""The PodClique controller builds each pod for its create alone and hands it over
(`Client.create(hand_over=True)`): the embedded server stores that object instead of a copy
it would dump and validate again. What it stores is what a copy would have been."""

from __future__ import annotations

from typing import Any

from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster


def test_pods_are_handed_over_and_stored_with_the_servers_fields() -> None:
    calls: list[tuple[Pod, dict[str, Any]]] = []

    async def spy_on(cluster: MemoryCluster) -> None:
        create = cluster.create

        async def spy(obj: Any, **kw: Any) -> Any:
            out = await create(obj, **kw)
            if isinstance(obj, Pod):
                calls.append((obj, kw))
            return out

        cluster.create = spy  # type: ignore[method-assign]

    async def scenario(env: Env) -> list[Pod]:
        await env.create(make_pcs("job", [("w", 3)]))
        await env.settle()
        return await env.pods()

    pods = run(scenario, binder=False, kubelet=False, before_start=spy_on)
    assert len(calls) == 3
    assert all(kw == {"returning": "metadata", "hand_over": True} for _, kw in calls)
    stored = {p.name: p for p in pods}
    for built, _ in calls:
        # The handed-over object is the stored one: it carries the server's name and uid.
        assert built.name in stored and built.metadata.uid == stored[built.name].metadata.uid
        assert built.metadata.namespace == NS and built.metadata.creation_timestamp
        assert stored[built.name].spec.hostname == built.spec.hostname
        assert stored[built.name].status.phase == "Pending"
