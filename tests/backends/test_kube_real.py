"""The default-scheduler backend against the real kube-apiserver 1.36 and the real
kube-scheduler 1.36 (GenericWorkload + GangScheduling on): the operator runs as a
subprocess with --kubeconfig, writes one Workload + one PodGroup per PodGang, and
kube-scheduler binds each PodGang whole or not at all (issue 12 item 3, issue 15 item 6).

Waits poll the server with bounded timeouts and say what they waited for; each test stops
the operator (and any kube-controller-manager) it started, and the fixtures delete its nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.core import Event
from phalanx.api.grove import PodCliqueSet, PodGang
from phalanx.api.pod import Pod
from phalanx.api.workloads import (
    PODGROUP_SCHEDULED,
    V1ALPHA2,
    PodGroupV1Alpha2,
    WorkloadV1Alpha2,
)
from phalanx.backends.kube import KubeBackend, KubeBackendConfig
from phalanx.cluster.client import NotFound
from phalanx.envtest import (
    DEFAULT_CONTROLLERS,
    Pending,
    PhalanxService,
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    running_kubelet,
    wait_until_async,
)

from .samples import leader_workers

GPU = "nvidia.com/gpu"
WAIT = 45.0  # seconds for any one wait; the test's own timeout is the backstop


def _no_traceback(op: PhalanxService) -> None:
    assert op.tracebacks() == [], op.log_text(6000)


async def _pods(kube: Any, ns: str) -> list[Pod]:
    return sorted((await kube.list(Pod, ns)).items, key=lambda p: p.name)


async def _delete_until_gone(kube: Any, ns: str, pcs: str) -> None:
    """Delete the PodCliqueSet and wait until the garbage collector (a controller-manager the
    test runs) and the operator have removed its pods, PodGangs, Workloads and PodGroups."""
    await kube.delete(PodCliqueSet, pcs, ns)

    async def everything_gone() -> object:
        # The stand-in kubelet stops no containers; do its last step for it: a Terminating
        # pod on a node is removed with a zero grace period.
        left = await _pods(kube, ns)
        for pod in left:
            if pod.metadata.deletion_timestamp is not None:
                try:
                    await kube.transport.request(
                        "DELETE", f"/api/v1/namespaces/{ns}/pods/{pod.name}",
                        body={"gracePeriodSeconds": 0}, kind="Pod", name=pod.name)
                except NotFound:
                    pass
        state = {kind.KIND: [o.name for o in (await kube.list(kind, ns)).items]
                 for kind in (PodGang, WorkloadV1Alpha2, PodGroupV1Alpha2)}
        state["Pod"] = [p.name for p in left]
        return not any(state.values()) or Pending(state)

    await wait_until_async(everything_gone, WAIT, what="pods, PodGang, Workload and "
                           "PodGroup deleted", interval=0.5)


def _scheduled(pg: Any) -> Any:
    return next((c for c in pg.status.conditions if c.type == PODGROUP_SCHEDULED), None)


async def _one_gang_objects(kube: Any, ns: str, gang: str) -> tuple[Any, Any]:
    """The gang's Workload and its only PodGroup (the PodGang has two groups)."""
    workloads = (await kube.list(WorkloadV1Alpha2, ns)).items
    podgroups = (await kube.list(PodGroupV1Alpha2, ns)).items
    assert [w.name for w in workloads] == [gang]
    assert [p.name for p in podgroups] == [gang]
    return workloads[0], podgroups[0]


def test_discovery_picks_v1alpha2_and_the_served_api_cannot_tie_podgroups(
        control_plane: Any) -> None:
    """What the 1.36 server offers: scheduling.k8s.io/v1alpha2 only; a Workload holds
    templates and a controllerRef, a PodGroup one policy and a template reference: no field
    links PodGroups into one gang (so one PodGang must be one PodGroup)."""

    def props(schemas: dict[str, Any], name: str) -> set[str]:
        schema = schemas[f"io.k8s.api.scheduling.v1alpha2.{name}"]
        # This build serves its OpenAPI v3 with Go's field names (SchemaProps) around it.
        return set(schema.get("properties") or schema.get("SchemaProps", {}).get("properties")
                    or {})

    async def main() -> None:
        async with control_plane.client() as kube:
            backend = KubeBackend(KubeBackendConfig.model_validate({"gangScheduling": True}))
            await backend.init(kube)
            assert backend.workload_api_version == V1ALPHA2
            group = await kube.transport.request("GET", "/apis/scheduling.k8s.io")
            assert [v["groupVersion"] for v in group["versions"]] == [
                "scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha2"]
            doc = await kube.transport.request("GET", "/openapi/v3/apis/scheduling.k8s.io/v1alpha2")
            schemas = doc["components"]["schemas"]
            assert props(schemas, "WorkloadSpec") == {"controllerRef", "podGroupTemplates"}
            assert props(schemas, "PodGroupSpec") == {
                "podGroupTemplateRef", "schedulingPolicy", "schedulingConstraints",
                "disruptionMode", "priority", "priorityClassName", "resourceClaims"}
            assert props(schemas, "PodGroupSchedulingPolicy") == {"basic", "gang"}
            assert props(schemas, "GangSchedulingPolicy") == {"minCount"}
            assert props(schemas, "PodGroupSchedulingConstraints") == {"topology"}
            assert props(schemas, "TopologyConstraint") == {"key"}

    asyncio.run(main())


@pytest.mark.timeout(150)
def test_a_podgang_that_fits_is_bound_whole_and_deletion_removes_its_objects(
        control_plane: Any, kube_namespace: str, kube_scheduler: Any,
        fake_nodes: Callable[..., list[str]], gang_operator: Callable[..., PhalanxService]) -> None:
    ns = kube_namespace
    fake_nodes(2, gpus=8)  # 16 GPUs for 15 pods
    op = gang_operator()
    # Deletion end to end: the garbage collector cascades PodCliqueSet -> PodGangs/pods and
    # kube-controller-manager's own PodGroup protection may release the finalizer too.
    control_plane.start_controller_manager(
        controllers=(*DEFAULT_CONTROLLERS, "podgroup-protection-controller"))

    async def main() -> None:
        async with control_plane.client() as kube:
            async with running_kubelet(kube):
                await kube.create(leader_workers(ns, 14))

                async def all_running() -> object:
                    pods = await _pods(kube, ns)
                    state = [(p.name, p.spec.node_name, p.status.phase) for p in pods]
                    return (len(pods) == 15 and all(s[2] == "Running" for s in state)
                            or Pending(state))

                await wait_until_async(all_running, WAIT, what="the 15 pods of the gang Running",
                                       interval=0.5)
            workload, podgroup = await _one_gang_objects(kube, ns, "lw-0")
            assert workload.spec.pod_group_templates[0].scheduling_policy.gang.min_count == 15
            assert podgroup.min_count == 15 and podgroup.workload_name == "lw-0"
            assert labels.FINALIZER_PODGROUP_PROTECTION in podgroup.metadata.finalizers
            condition = _scheduled(podgroup)
            assert condition is not None and condition.status == "True", podgroup.status
            for pod in await _pods(kube, ns):
                assert pod.spec.scheduling_group is not None, pod.name
                assert pod.spec.scheduling_group.pod_group_name == "lw-0", pod.name

            await _delete_until_gone(kube, ns, "lw")

    try:
        asyncio.run(main())
    finally:
        control_plane.stop_controller_manager()
    _no_traceback(op)


@pytest.mark.timeout(170)
def test_a_podgang_that_cannot_fit_stays_entirely_pending_until_it_fits_whole(
        control_plane: Any, kube_namespace: str, kube_scheduler: Any,
        fake_nodes: Callable[..., list[str]], gang_operator: Callable[..., PhalanxService]) -> None:
    """A leader + 14 workers on 8 GPUs: kube-scheduler binds no pod, says why on the
    PodGroup and in the pods' events, and still binds none after it retried with a new node
    (12 GPUs); once a third node makes room (16 GPUs), it binds all 15 together."""
    ns = kube_namespace
    fake_nodes(1, gpus=8)
    op = gang_operator()
    bound_ever: set[str] = set()
    added: list[str] = []

    async def main() -> None:
        async with control_plane.client() as kube:
            async def more_gpus(gpus: int) -> None:
                spec = gpu_cluster_spec(1, gpus=gpus, name_prefix=f"more{len(added)}-{ns[-5:]}")
                added.extend(n.name for n in await create_nodes(kube, spec))

            async def state() -> tuple[list[Pod], Any]:
                pods = await _pods(kube, ns)
                bound_ever.update(p.name for p in pods if p.spec.node_name)
                try:
                    podgroup = await kube.get(PodGroupV1Alpha2, "lw-0", ns)
                except NotFound:
                    podgroup = None
                return pods, podgroup

            async def failures() -> list[Event]:
                events = (await kube.list(Event, ns)).items
                return [e for e in events if e.reason == "FailedScheduling"
                        and e.involved_object.kind == "Pod"]

            def unschedulable_messages(pods: list[Pod]) -> list[str]:
                out = []
                for pod in pods:
                    c = pod.get_condition("PodScheduled")
                    if c is not None and c.status == "False" and c.reason == "Unschedulable":
                        out.append(c.message or "")
                return out

            async with running_kubelet(kube):
                await kube.create(leader_workers(ns, 14))

                async def rejected_whole(nodes: int) -> object:
                    """Every pod created, none bound, the PodGroup Unschedulable, and a pod
                    tried against `nodes` nodes (kube-scheduler's message counts them)."""
                    pods, podgroup = await state()
                    condition = _scheduled(podgroup) if podgroup is not None else None
                    tried = [m for m in unschedulable_messages(pods)
                             if f"0/{nodes} nodes are available" in m]
                    seen = {"pods": len(pods), "bound": sorted(bound_ever),
                            "podgroup": condition and (condition.status, condition.reason),
                            "messages": sorted(set(unschedulable_messages(pods)))[:3]}
                    if bound_ever:
                        return {"partly bound": seen}  # ends the wait: fails below at once
                    done = (len(pods) == 15 and condition is not None
                            and (condition.status, condition.reason) == ("False", "Unschedulable")
                            and tried)
                    return {"rejected whole": seen} if done else Pending(seen)

                async def wait_rejected_whole(nodes: int) -> None:
                    outcome = await wait_until_async(
                        lambda: rejected_whole(nodes), WAIT, interval=0.5,
                        what=f"the gang tried on {nodes} node(s) and rejected whole")
                    assert "partly bound" not in outcome, outcome

                await wait_rejected_whole(1)
                reasons = " | ".join(e.message or "" for e in await failures())
                assert f"Insufficient {GPU}" in reasons, reasons

                await more_gpus(4)  # 12 GPUs: still too few; kube-scheduler retries
                await wait_rejected_whole(2)

                await more_gpus(4)  # 16 GPUs: the whole gang fits

                async def all_running() -> object:
                    pods, _ = await state()
                    phases = sorted({p.status.phase for p in pods})
                    return (len(pods) == 15 and phases == ["Running"]
                            or Pending((len(pods), phases, sorted(bound_ever))))

                await wait_until_async(all_running, WAIT, what="the 15 pods Running once 16 "
                                       "GPUs exist", interval=0.5)
                _, podgroup = await state()
                condition = _scheduled(podgroup)
                assert condition is not None and condition.status == "True", podgroup.status

    async def cleanup() -> None:
        async with control_plane.client() as kube:
            await delete_nodes(kube, added)

    try:
        asyncio.run(main())
    finally:
        asyncio.run(cleanup())
    _no_traceback(op)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("policy", ["reject", "pass-through"])
def test_a_lost_per_group_minimum_follows_the_mismatch_policy(
        control_plane: Any, kube_namespace: str, controller_manager: Any,
        gang_operator: Callable[..., PhalanxService], policy: str) -> None:
    """Workers need 10 of 14 in a gang with their leader. reject (no webhook here, so the
    operator applies admission's checks): InvalidSpec naming the clique's minAvailable and
    nothing created. pass-through: admitted, SchedulerCompatible=False names the field, and
    the PodGroup asks kube-scheduler for 1 + 10 pods of the whole gang. Either way everything
    is deleted before the test ends: 15 pending pods left behind would be bound by the next
    test's kube-scheduler onto that test's nodes."""
    ns = kube_namespace
    op = gang_operator(policy)
    field = "spec.template.cliques[1].spec.minAvailable"
    condition_type = "ReconcileFailure" if policy == "reject" else "SchedulerCompatible"
    wanted = "True" if policy == "reject" else "False"

    async def main() -> None:
        async with control_plane.client() as kube:
            await kube.create(leader_workers(ns, 14, worker_min=10))

            async def condition() -> object:
                pcs = await kube.get(PodCliqueSet, "lw", ns)
                c = next((c for c in pcs.status.conditions if c.type == condition_type), None)
                return (c if c is not None and c.status == wanted else
                        Pending(c and (c.status, c.reason, c.message)))

            c = await wait_until_async(condition, WAIT, interval=0.5,
                                       what=f"{condition_type}={wanted}")
            assert field in c.message and "PerGroupMinimums" in c.message, c.message
            if policy == "reject":
                assert c.reason == "InvalidSpec"
                assert (await kube.list(PodGang, ns)).items == []
                assert (await kube.list(PodGroupV1Alpha2, ns)).items == []
            else:
                assert c.reason == "UnsupportedFeaturesIgnored"

                async def podgroup() -> object:
                    try:
                        return await kube.get(PodGroupV1Alpha2, "lw-0", ns)
                    except NotFound as err:
                        return Pending(str(err))

                pg = await wait_until_async(podgroup, WAIT, what="PodGroup lw-0", interval=0.5)
                assert pg.min_count == 11
            await _delete_until_gone(kube, ns, "lw")

    asyncio.run(main())
    _no_traceback(op)
