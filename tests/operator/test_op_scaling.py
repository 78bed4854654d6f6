"""Scaling: PodCliqueSet replicas, a PodClique's replicas, a scaling group's replicas --
exactly the right pods and PodGangs appear and go, nothing else is touched."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.core import Pod
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet
from tests.podnames import hostname, hostnames_of_refs


async def pod_uids(env: Env) -> dict[str, str]:
    """Pods by hostname (`<podclique>-<index>`; their names are generated)."""
    return {hostname(p): p.metadata.uid or "" for p in await env.pods()}


async def patch_pcs(env: Env, name: str, patch: dict) -> None:
    await env.cluster.patch(PodCliqueSet, name, patch, NS)


def test_podcliqueset_replicas_scale_out_and_in() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("web", [("a", 2), ("b", 1)], replicas=2))
        await env.settle()
        before = await pod_uids(env)
        assert len(before) == 6

        await patch_pcs(env, "web", {"spec": {"replicas": 4}})
        await env.settle()
        after = await pod_uids(env)
        assert sorted(after) == sorted(f"web-{i}-{c}-{k}" for i in range(4)
                                       for c, n in (("a", 2), ("b", 1)) for k in range(n))
        assert all(after[n] == uid for n, uid in before.items())  # nothing recreated
        assert sorted(await env.gangs()) == ["web-0", "web-1", "web-2", "web-3"]
        assert all(g.status.phase == "Running" for g in (await env.gangs()).values())

        await patch_pcs(env, "web", {"spec": {"replicas": 1}})
        await env.settle()
        assert sorted(await pod_uids(env)) == ["web-0-a-0", "web-0-a-1", "web-0-b-0"]
        assert (await pod_uids(env))["web-0-a-0"] == before["web-0-a-0"]
        assert sorted(await env.gangs()) == ["web-0"]
        assert sorted(await env.cliques()) == ["web-0-a", "web-0-b"]
        assert (await env.pcs("web")).status.available_replicas == 1

    run(scenario)


def test_clique_replicas_from_the_template() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("t", [("a", 2), ("b", 1)], replicas=2))
        await env.settle()
        before = await pod_uids(env)
        pcs = await env.pcs("t")
        pcs.spec.template.cliques[0].spec.replicas = 4
        await env.cluster.update(pcs)
        await env.settle()
        pods = await pod_uids(env)
        assert sorted(n for n in pods if "-a-" in n) == sorted(
            f"t-{i}-a-{k}" for i in range(2) for k in range(4))
        assert all(pods[n] == uid for n, uid in before.items())
        gang = (await env.gangs())["t-1"]
        assert len(gang.group("t-1-a").pod_references) == 4
        assert gang.group("t-1-a").min_replicas == 2  # minAvailable is kept (set explicitly)

        pcs = await env.pcs("t")
        pcs.spec.template.cliques[0].spec.replicas = 2
        await env.cluster.update(pcs)
        await env.settle()
        pods = await pod_uids(env)
        assert sorted(n for n in pods if "-a-" in n) == sorted(
            f"t-{i}-a-{k}" for i in range(2) for k in range(2))
        gang = (await env.gangs())["t-1"]
        assert hostnames_of_refs(gang.group("t-1-a").pod_references, await env.pods()) == [
            "t-1-a-0", "t-1-a-1"]

    run(scenario)


def test_autoscaled_podclique_replicas_belong_to_the_podclique() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("hpa", [("a", 2), ("b", 1)], autoscaled=("a",)))
        await env.settle()
        # What an HPA does: scale the PodClique itself.
        await env.cluster.patch(PodClique, "hpa-0-a", {"spec": {"replicas": 5}}, NS)
        await env.settle()
        names = sorted(await pod_uids(env))
        assert names == [*(f"hpa-0-a-{k}" for k in range(5)), "hpa-0-b-0"]
        clique = (await env.cliques())["hpa-0-a"]
        assert clique.spec.replicas == 5  # not reverted to the template
        assert clique.status.ready_replicas == 5
        assert clique.status.hpa_pod_selector and "grove.io/podclique=hpa-0-a" in \
            clique.status.hpa_pod_selector
        await env.cluster.patch(PodClique, "hpa-0-a", {"spec": {"replicas": 1}}, NS)
        await env.settle()
        assert sorted(await pod_uids(env)) == ["hpa-0-a-0", "hpa-0-b-0"]
        # Without an autoscaling config too, a direct scale sticks (Grove), and the scale
        # selector is published for every PodClique (Grove #591).
        await env.cluster.patch(PodClique, "hpa-0-b", {"spec": {"replicas": 3}}, NS)
        await env.settle()
        assert (await env.cliques())["hpa-0-b"].spec.replicas == 3
        assert sorted(await pod_uids(env)) == ["hpa-0-a-0", "hpa-0-b-0", "hpa-0-b-1",
                                               "hpa-0-b-2"]
        assert "grove.io/podclique=hpa-0-b" in (await env.cliques())["hpa-0-b"].status.hpa_pod_selector

    run(scenario)


def test_scaling_group_replicas() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("sg", [("leader", 1), ("worker", 2)],
                                  groups=[("grp", ["leader", "worker"], 1, 1)]))
        await env.settle()
        assert sorted(await env.gangs()) == ["sg-0"]
        before = await pod_uids(env)

        pcs = await env.pcs("sg")
        pcs.spec.template.pod_clique_scaling_groups[0].replicas = 3
        await env.cluster.update(pcs)
        await env.settle()
        gangs = await env.gangs()
        assert sorted(gangs) == ["sg-0", "sg-0-grp-0", "sg-0-grp-1"]  # offsets above minAvailable
        assert [g.name for g in gangs["sg-0-grp-1"].spec.pod_groups] == [
            "sg-0-grp-2-leader", "sg-0-grp-2-worker"]
        pods = await pod_uids(env)
        assert sorted(pods) == sorted(f"sg-0-grp-{j}-{c}-{k}" for j in range(3)
                                      for c, n in (("leader", 1), ("worker", 2))
                                      for k in range(n))
        assert all(pods[n] == uid for n, uid in before.items())
        assert all(g.status.phase == "Running" for g in gangs.values())
        group = await env.cluster.get(PodCliqueScalingGroup, "sg-0-grp", NS)
        assert (group.spec.replicas, group.status.replicas, group.status.available_replicas) \
            == (3, 3, 3)

        pcs = await env.pcs("sg")
        pcs.spec.template.pod_clique_scaling_groups[0].replicas = 2
        await env.cluster.update(pcs)
        await env.settle()
        assert sorted(await env.gangs()) == ["sg-0", "sg-0-grp-0"]
        assert not any(n.startswith("sg-0-grp-2") for n in await pod_uids(env))
        assert sorted(await env.cliques()) == [f"sg-0-grp-{j}-{c}" for j in range(2)
                                                for c in ("leader", "worker")]

    run(scenario)


def test_autoscaled_scaling_group_replicas_belong_to_the_group() -> None:
    async def scenario(env: Env) -> None:
        from phalanx.api.grove import AutoScalingConfig

        pcs = make_pcs("hsg", [("leader", 1), ("worker", 1)],
                       groups=[("grp", ["leader", "worker"], 1, 1)])
        pcs.spec.template.pod_clique_scaling_groups[0].scale_config = AutoScalingConfig(
            max_replicas=4)
        await env.create(pcs)
        await env.settle()
        await env.cluster.patch(PodCliqueScalingGroup, "hsg-0-grp", {"spec": {"replicas": 2}},
                                NS)
        await env.settle()
        assert sorted(await env.gangs()) == ["hsg-0", "hsg-0-grp-0"]
        assert env.cluster.count(Pod, NS) == 4
        scaled = [p for p in await env.pods()
                  if p.metadata.labels[L.LABEL_PODGANG] == "hsg-0-grp-0"]
        assert len(scaled) == 2 and all(p.status.phase == "Running" for p in scaled)

    run(scenario)


def test_direct_scale_of_a_scaling_group_without_scale_config_is_kept() -> None:
    """Grove's GS2/GS4: `kubectl patch pcsg ... replicas: 3` is honoured although the group
    has no scaleConfig; only a later change of the template's own value resets it."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("dsg", [("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 2, 2)]))
        await env.settle()
        assert sorted(await env.gangs()) == ["dsg-0"]
        await env.cluster.patch(PodCliqueScalingGroup, "dsg-0-grp", {"spec": {"replicas": 3}},
                                NS)
        await env.settle()
        await env.run_for(60)
        group = await env.cluster.get(PodCliqueScalingGroup, "dsg-0-grp", NS)
        assert group.spec.replicas == 3  # not put back to the template's 2
        assert sorted(await env.gangs()) == ["dsg-0", "dsg-0-grp-0"]
        assert sorted(hostname(p) for p in await env.pods()) == sorted(
            f"dsg-0-grp-{j}-{c}-0" for j in range(3) for c in ("leader", "worker"))

        # Another spec change of the PodCliqueSet leaves the scaled group alone...
        pcs = await env.pcs("dsg")
        pcs.spec.template.termination_delay = "1h"
        await env.cluster.update(pcs)
        await env.settle()
        assert (await env.cluster.get(PodCliqueScalingGroup, "dsg-0-grp", NS)).spec.replicas == 3

        # ...but a new template value is applied (and is the object's from then on).
        pcs = await env.pcs("dsg")
        pcs.spec.template.pod_clique_scaling_groups[0].replicas = 4
        await env.cluster.update(pcs)
        await env.settle()
        group = await env.cluster.get(PodCliqueScalingGroup, "dsg-0-grp", NS)
        assert group.spec.replicas == 4
        assert sorted(await env.gangs()) == ["dsg-0", "dsg-0-grp-0", "dsg-0-grp-1"]

    run(scenario)


def test_direct_scale_of_a_podclique_is_kept_until_the_template_changes() -> None:
    """`kubectl scale pclq` of a standalone clique and of a scaling group member sticks
    across other spec changes; a new template value resets it."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("ks", [("a", 1), ("leader", 1), ("worker", 1)],
                                  groups=[("grp", ["leader", "worker"], 1, 1)]))
        await env.settle()
        await env.cluster.patch(PodClique, "ks-0-a", {"spec": {"replicas": 3}}, NS)
        await env.cluster.patch(PodClique, "ks-0-grp-0-worker", {"spec": {"replicas": 2}}, NS)
        await env.settle()
        pcs = await env.pcs("ks")
        pcs.spec.template.termination_delay = "1h"
        await env.cluster.update(pcs)
        await env.settle()
        cliques = await env.cliques()
        assert (cliques["ks-0-a"].spec.replicas, cliques["ks-0-grp-0-worker"].spec.replicas) \
            == (3, 2)
        names = sorted(await pod_uids(env))
        assert [n for n in names if n.startswith("ks-0-a-")] == ["ks-0-a-0", "ks-0-a-1",
                                                                 "ks-0-a-2"]
        assert [n for n in names if "-worker-" in n] == ["ks-0-grp-0-worker-0",
                                                         "ks-0-grp-0-worker-1"]
        pcs = await env.pcs("ks")
        pcs.spec.template.cliques[0].spec.replicas = 2
        pcs.spec.template.cliques[2].spec.replicas = 4
        await env.cluster.update(pcs)
        await env.settle()
        cliques = await env.cliques()
        assert (cliques["ks-0-a"].spec.replicas, cliques["ks-0-grp-0-worker"].spec.replicas) \
            == (2, 4)

    run(scenario)
