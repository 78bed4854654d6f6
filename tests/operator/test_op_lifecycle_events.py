"""The operator's Normal Events (Grove's reasons): what it created and deleted, one Event per
child object and one per batch of pods, so `kubectl get events` tells the story."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api.core import Event
from phalanx.operator import lifecycle_events as E


async def events(env: Env) -> list[Event]:
    await env.op.recorder.flush()
    return (await env.cluster.list(Event, NS)).items


def by_object(evs: list[Event], reason: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in evs:
        if e.reason == reason:
            out.setdefault(e.involved_object.name, []).append(e.message or "")
    return out


def test_creation_is_told_on_the_owners() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("inf", [("router", 1), ("leader", 1), ("worker", 3)],
                                  groups=[("sg", ["leader", "worker"], 2, 1)]))
        await env.settle()
        evs = await events(env)
        assert all(e.type == "Normal" for e in evs if e.reason in (
            E.PODGANG_CREATE_OR_UPDATE_SUCCESSFUL, E.POD_CREATE_SUCCESSFUL))
        on_pcs = by_object(evs, E.PODGANG_CREATE_OR_UPDATE_SUCCESSFUL)["inf"]
        assert sorted(on_pcs) == [f"Created PodGang {NS}/inf-0", f"Created PodGang {NS}/inf-0-sg-0"]
        assert by_object(evs, E.PODCLIQUE_CREATE_OR_UPDATE_SUCCESSFUL)["inf"] == [
            f"Created PodClique {NS}/inf-0-router"]
        assert by_object(evs, E.PCSG_CREATE_SUCCESSFUL)["inf"] == [
            f"Created PodCliqueScalingGroup {NS}/inf-0-sg"]
        # The group's PodCliques are told on the group, which created them.
        assert sorted(by_object(evs, E.PODCLIQUE_CREATE_OR_UPDATE_SUCCESSFUL)["inf-0-sg"]) == [
            f"Created PodClique {NS}/inf-0-sg-{j}-{c}"
            for j in (0, 1) for c in ("leader", "worker")]
        # One Event per batch of pods, naming them (their generated names, in index order).
        name = env.pod_name
        assert by_object(evs, E.POD_CREATE_SUCCESSFUL)["inf-0-sg-1-worker"] == [
            (f"Created 3 pods: {await name('inf-0-sg-1-worker-0')}, "
             f"{await name('inf-0-sg-1-worker-1')}, {await name('inf-0-sg-1-worker-2')}")]
        assert by_object(evs, E.POD_CREATE_SUCCESSFUL)["inf-0-router"] == [
            f"Created 1 pod: {await name('inf-0-router-0')}"]

    run(scenario)


def test_scale_in_is_told_as_deletions() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("web", [("a", 7, 1)], replicas=2))
        await env.settle()
        names = [await env.pod_name(f"web-0-a-{k}") for k in range(7)]
        pcs = await env.pcs("web")
        pcs.spec.replicas = 1
        pcs.spec.template.cliques[0].spec.replicas = 1
        await env.cluster.update(pcs)
        await env.settle()
        evs = await events(env)
        deleted = by_object(evs, E.PODCLIQUE_DELETE_SUCCESSFUL)["web"]
        assert deleted == ["Deleted 1 PodClique(s): web-1-a"]
        assert by_object(evs, E.PODGANG_DELETE_SUCCESSFUL)["web"] == [
            "Deleted 1 PodGang(s): web-1"]
        assert by_object(evs, E.POD_DELETE_SUCCESSFUL)["web-0-a"] == [
            f"Deleted 6 Pod(s): {', '.join(names[6:1:-1])} and 1 more"]  # highest index first
        assert by_object(evs, E.PODCLIQUE_CREATE_OR_UPDATE_SUCCESSFUL)["web"] == [
            f"Created PodClique {NS}/web-0-a", f"Created PodClique {NS}/web-1-a",
            f"Updated PodClique {NS}/web-0-a"]

    run(scenario)


def test_a_scaling_group_scale_in_is_told_on_the_group_highest_replica_first() -> None:
    async def scenario(env: Env) -> None:
        from phalanx.api.grove import PodCliqueScalingGroup

        await env.create(make_pcs("sg", [("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 4, 1)]))
        await env.settle()
        await env.cluster.patch(PodCliqueScalingGroup, "sg-0-grp", {"spec": {"replicas": 2}}, NS)
        await env.settle()
        evs = await events(env)
        assert by_object(evs, E.PODCLIQUE_DELETE_SUCCESSFUL)["sg-0-grp"] == [
            "Deleted 4 PodClique(s): sg-0-grp-3-worker, sg-0-grp-3-leader, sg-0-grp-2-worker, "
            "sg-0-grp-2-leader"]

    run(scenario)
