"""UnsupportedPodFields: a pod whose placement fields need a plugin the profile lacks stays
Unschedulable, and its condition and Event name the field; other pods are not touched."""

from __future__ import annotations

from typing import Any

from phalanx.api.core import Event, Pod
from phalanx.scheduler import Scheduler
from phalanx.scheduler.framework.config import SchedulerProfile
from phalanx.scheduler.framework.registry import get_plugin

from ..helpers import node, pod, run_scheduler


async def _events(client: Any, name: str) -> list[Event]:
    return [e for e in (await client.list(Event, "default")).items
            if e.involved_object.name == name]


def _claiming_pod(name: str) -> Pod:
    p = pod(name)
    p.spec.resource_claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    return p


def test_a_pod_with_resource_claims_is_refused_by_name_without_dynamic_resources() -> None:
    # Before DRA is built the default profile lacks the plugin; after, a profile disables it.
    built = get_plugin("DynamicResources") is not None
    disabled = [{"name": "DynamicResources"}] if built else []
    profile = SchedulerProfile.model_validate(
        {"schedulerName": "phalanx-scheduler", "plugins": {"multiPoint": {"disabled": disabled}}})
    why = "which profile 'phalanx-scheduler' disables" if built else "which phalanx-scheduler does not have"

    async def body(client: Any, sched: Scheduler) -> None:
        assert await sched.wait_idle(timeout=30)
        bound = {p.name: p.spec.node_name for p in (await client.list(Pod, "default")).items}
        assert bound == {"claims": None, "plain": "n1"}
        claims = await client.get(Pod, "claims", "default")
        cond = claims.get_condition("PodScheduled")
        assert (cond.status, cond.reason) == ("False", "Unschedulable")
        assert f"spec.resourceClaims needs the DynamicResources plugin, {why}" in cond.message
        events = await _events(client, "claims")
        assert [e.reason for e in events] == ["FailedScheduling"]
        assert "spec.resourceClaims" in events[0].message

    run_scheduler(body, nodes=[node("n1")], pods=[_claiming_pod("claims"), pod("plain")],
                  scheduler_factory=lambda c: Scheduler(c, [profile]))


def test_a_profile_that_disables_a_placement_plugin_refuses_pods_that_need_it() -> None:
    profile = SchedulerProfile.model_validate({
        "schedulerName": "phalanx-scheduler",
        "plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}},
    })
    anti = pod("apart", labels={"app": "a"})
    anti.spec.affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname",
         "labelSelector": {"matchLabels": {"app": "a"}}}]}}

    async def body(client: Any, sched: Scheduler) -> None:
        assert await sched.wait_idle(timeout=30)
        apart = await client.get(Pod, "apart", "default")
        assert apart.spec.node_name is None
        msg = apart.get_condition("PodScheduled").message
        assert ("spec.affinity.podAntiAffinity needs the InterPodAffinity plugin, which profile "
                "'phalanx-scheduler' disables") in msg
        assert (await client.get(Pod, "plain", "default")).spec.node_name == "n1"

    run_scheduler(body, nodes=[node("n1")], pods=[anti, pod("plain")],
                  scheduler_factory=lambda c: Scheduler(c, [profile]))


def test_the_default_profile_runs_every_plugin_a_placement_field_needs_but_those_not_built() -> None:
    from phalanx.api import podfields
    from phalanx.backends.phalanx_scheduler import missing_plugins

    # Whatever is missing is missing from the build, never left out of the default profile.
    for plugin in missing_plugins():
        assert get_plugin(plugin) is None, plugin
    assert set(missing_plugins()) <= set(podfields.plugins_needed())
