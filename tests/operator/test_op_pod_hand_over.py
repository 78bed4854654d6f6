"""The operator builds each object it creates for that create alone and hands it over
(`Client.create(hand_over=True)`): the embedded server stores that object instead of a copy
it would dump and validate again. What it stores is what a copy would have been."""

from __future__ import annotations

from typing import Any

from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Pod
from phalanx.cluster.memory import MemoryCluster

# What a PodCliqueSet's reconcile creates (Grove's set of children), pods included.
CHILDREN = {"Pod", "PodClique", "PodGang", "Service", "ServiceAccount", "Secret", "Role",
            "RoleBinding"}


def _spied(calls: list[tuple[Any, dict[str, Any]]]) -> Any:
    async def spy_on(cluster: MemoryCluster) -> None:
        create = cluster.create

        async def spy(obj: Any, **kw: Any) -> Any:
            out = await create(obj, **kw)
            calls.append((obj, kw))
            return out

        cluster.create = spy  # type: ignore[method-assign]

    return spy_on


def test_pods_are_handed_over_and_stored_with_the_servers_fields() -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []

    async def scenario(env: Env) -> list[Pod]:
        await env.create(make_pcs("job", [("w", 3)]))
        await env.settle()
        return await env.pods()

    pods = run(scenario, binder=False, kubelet=False, before_start=_spied(calls))
    built = [(obj, kw) for obj, kw in calls if isinstance(obj, Pod)]
    assert len(built) == 3
    assert all(kw == {"returning": "metadata", "hand_over": True} for _, kw in built)
    stored = {p.name: p for p in pods}
    for pod, _ in built:
        # The handed-over object is the stored one: it carries the server's name and uid.
        assert pod.name in stored and pod.metadata.uid == stored[pod.name].metadata.uid
        assert pod.metadata.namespace == NS and pod.metadata.creation_timestamp
        assert stored[pod.name].spec.hostname == pod.spec.hostname
        assert stored[pod.name].status.phase == "Pending"


def test_every_child_of_a_podcliqueset_is_handed_over() -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []

    async def scenario(env: Env) -> None:
        await env.create(make_pcs("job", [("w", 2)]))
        await env.settle()

    run(scenario, before_start=_spied(calls))
    children = [(obj.KIND, kw) for obj, kw in calls if obj.KIND in CHILDREN]
    assert {kind for kind, _ in children} == CHILDREN
    assert [(kind, kw) for kind, kw in children if not kw.get("hand_over")] == []
