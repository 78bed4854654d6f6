"""Headless Services: one per PodCliqueSet replica, as Grove's
`podcliqueset/components/service` makes them (service_test.go ported: TestSync's cases and
TestDelete's; TestNew and TestGetExistingResourceNames test Grove's component interface,
which Phalanx does not have -- its controller lists its Services from an informer index,
covered by the "not owned" case below)."""

from __future__ import annotations

from op_harness import NS, Env, make_pcs, run

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod, Service, ServiceSpec
from phalanx.api.grove import HeadlessServiceConfig, PodCliqueSet
from phalanx.operator.headless_service import build_service
from tests.podnames import hostname


async def services(env: Env) -> dict[str, Service]:
    return {s.name: s for s in (await env.cluster.list(Service, NS)).items}


def test_sync_creates_new_services() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("web", [("a", 2)], replicas=2))
        await env.settle()
        svcs = await services(env)
        assert sorted(svcs) == ["web-0", "web-1"]
        for i in range(2):
            svc = svcs[f"web-{i}"]
            assert svc.spec.cluster_ip == "None"
            assert svc.spec.selector == {
                L.LABEL_MANAGED_BY: L.MANAGED_BY_VALUE, L.LABEL_PART_OF: "web",
                L.LABEL_PODCLIQUESET_REPLICA_INDEX: str(i)}
            assert svc.metadata.labels[L.LABEL_COMPONENT] == "pcs-headless-service"
            assert svc.metadata.labels[L.LABEL_APP_NAME] == f"web-{i}"
            ref = svc.metadata.controller_ref()
            assert ref is not None and (ref.kind, ref.name) == ("PodCliqueSet", "web")
            # Defaulted headlessServiceConfig: Grove's default publishes not-ready pods.
            assert svc.spec.publish_not_ready_addresses is True
        # The selector selects exactly the replica's pods, which name the Service.
        pods = (await env.cluster.list(Pod, NS, label_selector=svcs["web-1"].spec.selector)).items
        assert sorted(hostname(p) for p in pods) == ["web-1-a-0", "web-1-a-1"]
        assert all(p.spec.subdomain == "web-1" for p in pods)
        # Grove's naming: a generated name, the index in the hostname.
        assert all(p.metadata.generate_name == "web-1-a-" and p.name.startswith("web-1-a-")
                   and p.name != p.spec.hostname for p in pods)

    run(scenario)


def test_sync_creates_services_with_publish_not_ready_addresses() -> None:
    async def scenario(env: Env) -> None:
        pcs = make_pcs("quiet", [("a", 1)])
        pcs.spec.template.headless_service_config = HeadlessServiceConfig(
            publish_not_ready_addresses=False)
        await env.create(pcs)
        await env.settle()
        assert (await services(env))["quiet-0"].spec.publish_not_ready_addresses is False
        # A change of the config reaches the existing Service.
        pcs = await env.pcs("quiet")
        pcs.spec.template.headless_service_config.publish_not_ready_addresses = True
        await env.cluster.update(pcs)
        await env.settle()
        assert (await services(env))["quiet-0"].spec.publish_not_ready_addresses is True

    run(scenario)


def test_sync_updates_existing_service() -> None:
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("ed", [("a", 1)]))
        await env.settle()
        svc = (await services(env))["ed-0"]
        svc.spec.selector = {"app": "other"}
        await env.cluster.update(svc)
        await env.settle()
        assert (await services(env))["ed-0"].spec.selector[L.LABEL_PART_OF] == "ed"

    run(scenario)


def test_delete_deletes_existing_services() -> None:
    """Scaling the PodCliqueSet in removes the Services of the replicas that went; the
    others (and a Service the PodCliqueSet does not own) stay."""
    async def scenario(env: Env) -> None:
        other = Service(metadata=ObjectMeta(name="mine", namespace=NS,
                                            labels={L.LABEL_PART_OF: "sc"}),
                        spec=ServiceSpec(selector={"app": "x"}))
        await env.create(other)
        await env.create(make_pcs("sc", [("a", 1)], replicas=3))
        await env.settle()
        assert sorted(await services(env)) == ["mine", "sc-0", "sc-1", "sc-2"]
        await env.cluster.patch(PodCliqueSet, "sc", {"spec": {"replicas": 1}}, NS)
        await env.settle()
        assert sorted(await services(env)) == ["mine", "sc-0"]

    run(scenario)


def test_delete_handles_non_existent_services() -> None:
    """A Service deleted by someone else is recreated, and a PodCliqueSet deleted before
    its Services exist leaves nothing behind (owner references)."""
    async def scenario(env: Env) -> None:
        await env.create(make_pcs("gone", [("a", 1)]))
        await env.settle()
        await env.cluster.delete(Service, "gone-0", NS)
        await env.settle()
        assert "gone-0" in await services(env)
        want = build_service(await env.pcs("gone"), 0)
        assert (await services(env))["gone-0"].spec.selector == want.spec.selector

    run(scenario)
