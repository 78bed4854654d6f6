"""`phalanx operator` and `phalanx scheduler` as subprocesses (`--kubeconfig`) against the real
kube-apiserver, with 16 fake GPU nodes and the stand-in kubelet (issue 15, issue 12).

One operator/scheduler pair serves the module, as one user's session would: the documented
out-of-cluster steps (examples/operator-config.yaml, examples/cluster-topology.yaml) take an
example to Running pods; the scheduler counts its cycles; an unfittable gang says why on
every pod; an invalid PodCliqueSet and a forbidden pod creation are each reported once, in
the object's status and one Event; a PodGang deleted before its pods is no crash; SIGTERM
stops both cleanly; and their logs hold no traceback. Tests run in file order (the last one
stops the services); each scenario has its own namespace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from phalanx.api import labels as L
from phalanx.api.base import get_condition
from phalanx.api.core import Event, Node
from phalanx.api.crds import crds
from phalanx.api.grove import ClusterTopology, PodClique, PodCliqueSet, PodGang
from phalanx.api.loader import load_file
from phalanx.api.pod import Pod
from phalanx.cluster.client import NotFound
from phalanx.envtest import (
    Pending,
    PhalanxService,
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    install_crds,
    running_kubelet,
    start_operator,
    start_phalanx_scheduler,
    wait_until_async,
)
from phalanx.operator.errors import CONDITION_RECONCILE_FAILURE
from phalanx.sim.clusterspec import RACK_KEY

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
SCENARIO_TIMEOUT = 90.0


class Stack:
    def __init__(self, plane: Any, system_ns: str) -> None:
        self.plane = plane
        self.system_ns = system_ns
        self.operator: PhalanxService | None = None
        self.scheduler: PhalanxService | None = None

    def run(self, body: Any, *, kubelet: bool = True) -> Any:
        """`body(kube)` with the stand-in kubelet running, within SCENARIO_TIMEOUT; on
        failure the services' logs are printed."""
        async def main() -> Any:
            async with self.plane.client() as kube:
                if not kubelet:
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)
                async with running_kubelet(kube):
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)

        try:
            return asyncio.run(main())
        except BaseException:
            for s in (self.operator, self.scheduler):
                if s is not None:
                    print(f"--- {s.name} (tail) ---\n{s.log_text(4000)}")
            raise


@pytest.fixture(scope="module")
def stack(control_plane: Any) -> Iterator[Stack]:
    system_ns = control_plane.create_namespace("phalanx-system")
    s = Stack(control_plane, system_ns)
    [topology] = load_file(REPO / "examples" / "cluster-topology.yaml")
    nodes: list[str] = []

    async def setup() -> None:
        async with control_plane.client() as kube:
            await install_crds(kube, crds())
            made = await create_nodes(kube, gpu_cluster_spec(
                16, nodes_per_rack=4, racks_per_block=2, name_prefix="robust"))
            nodes.extend(n.name for n in made)
            try:
                await kube.delete(ClusterTopology, topology.name)
            except NotFound:
                pass
            await kube.create(topology)

    async def teardown() -> None:
        async with control_plane.client() as kube:
            await delete_nodes(kube, nodes)
            try:
                await kube.delete(ClusterTopology, topology.name)
            except NotFound:
                pass

    try:
        asyncio.run(setup())
        # The documented out-of-cluster steps: the shipped configuration (leader election
        # on, as installed), the scheduler with its Lease.
        config = yaml.safe_load((REPO / "examples" / "operator-config.yaml").read_text())
        config["leaderElection"] = {"resourceNamespace": system_ns}
        s.operator = start_operator(control_plane, config=config, namespace=system_ns)
        s.scheduler = start_phalanx_scheduler(control_plane, leader_elect=True,
                                              lease_namespace=system_ns)
        yield s
    finally:
        for service in (s.operator, s.scheduler):
            if service is not None:
                service.stop()
        asyncio.run(teardown())


def small_pcs(name: str, ns: str, cliques: list[tuple[str, int]], gpus: int = 8,
              groups: list[dict[str, Any]] | None = None) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1, "template": {
            "cliques": [{"name": c, "spec": {"replicas": n, "podSpec": {
                "schedulerName": "phalanx-scheduler",
                "containers": [{"name": "c", "image": "busybox", "resources": {
                    "limits": {"nvidia.com/gpu": str(gpus)}}}]}}} for c, n in cliques],
            **({"podCliqueScalingGroups": groups} if groups else {})}}})


async def events_of(kube: Any, ns: str, name: str) -> list[Event]:
    return [e for e in (await kube.list(Event, ns)).items if e.involved_object.name == name]


def test_the_documented_steps_take_an_example_to_running_pods(stack: Stack) -> None:
    ns = stack.plane.create_namespace("inference")

    async def body(kube: Any) -> tuple[list[Pod], dict[str, str | None]]:
        for obj in load_file(REPO / "examples" / "disaggregated-inference.yaml"):
            obj.metadata.namespace = ns
            await kube.create(obj)

        async def all_running() -> object:
            pods = (await kube.list(Pod, ns)).items
            running = sum(p.status.phase == "Running" for p in pods)
            return pods if len(pods) == 14 and running == 14 else Pending(
                f"{running}/{len(pods)} pods Running")

        pods = await wait_until_async(all_running, 75, interval=0.5,
                                      what="the 14 pods of disaggregated-inference Running")
        gangs = (await kube.list(PodGang, ns)).items
        assert gangs and all(g.is_initialized for g in gangs)
        rack_of = {n.name: n.metadata.labels.get(RACK_KEY) for n in (await kube.list(Node)).items}
        return pods, rack_of

    pods, rack_of = stack.run(body)
    assert all(p.spec.node_name for p in pods)
    # The ClusterTopology took the examples' constraints to the scheduler: each prefill and
    # decode replica (a scaling group replica, `pack: {required: rack}`) sits in one rack.
    racks: dict[tuple[str, str], set[str | None]] = {}
    for p in pods:
        labels = p.metadata.labels
        group = labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
        if group is not None:
            key = (group, labels[L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX])
            racks.setdefault(key, set()).add(rack_of[p.spec.node_name or ""])
    assert len(racks) == 4 and all(len(r) == 1 and None not in r for r in racks.values()), racks


def test_the_scheduler_counts_its_cycles(stack: Stack) -> None:
    assert stack.scheduler is not None
    text = stack.scheduler.metrics()
    scheduled = [line for line in text.splitlines() if line.startswith(
        'phalanx_scheduling_attempts_total{profile="phalanx-scheduler",result="scheduled"}')]
    assert scheduled and float(scheduled[0].split()[-1]) >= 14, text
    assert 'result="error"' not in text


def test_an_unfittable_gang_says_why_on_every_pod(stack: Stack) -> None:
    """21 pods of 8 GPUs on 16 nodes: nothing is bound, and no pod keeps the stale
    SchedulingGated condition once its gang was tried."""
    ns = stack.plane.create_namespace("toobig")

    async def body(kube: Any) -> list[Pod]:
        await kube.create(small_pcs("toobig", ns, [("leader", 1), ("worker", 20)]))

        async def all_unschedulable() -> object:
            pods = (await kube.list(Pod, ns)).items
            reasons = sorted({(c.reason if (c := p.get_condition("PodScheduled")) else "")
                              or "" for p in pods})
            return pods if len(pods) == 21 and reasons == ["Unschedulable"] else Pending(
                f"{len(pods)} pods, PodScheduled reasons {reasons}")

        return await wait_until_async(all_unschedulable, 60, interval=0.5,
                                      what="21 pods PodScheduled=False/Unschedulable")

    pods = stack.run(body)
    assert not [p.name for p in pods if p.spec.node_name]


def test_an_invalid_podcliqueset_is_reported_once_and_not_materialised(stack: Stack) -> None:
    ns = stack.plane.create_namespace("invalid")

    async def body(kube: Any) -> tuple[PodCliqueSet, list[Event], int]:
        await kube.create(small_pcs("bad", ns, [("a", 1), ("b", 1)],
                                    groups=[{"name": "g", "cliqueNames": ["b", "nope"]}]))

        async def reported() -> object:
            got = await kube.get(PodCliqueSet, "bad", ns)
            cond = get_condition(got.status.conditions, CONDITION_RECONCILE_FAILURE)
            return got if cond is not None and cond.reason == "InvalidSpec" else Pending(
                got.status.conditions)

        got = await wait_until_async(reported, 30, interval=0.5,
                                     what="ReconcileFailure=InvalidSpec on PodCliqueSet bad")
        await asyncio.sleep(4)  # a few retries with backoff later
        return got, await events_of(kube, ns, "bad"), len((await kube.list(PodGang, ns)).items)

    got, events, gangs = stack.run(body, kubelet=False)
    assert gangs == 0
    cond = get_condition(got.status.conditions, CONDITION_RECONCILE_FAILURE)
    assert "spec.template.podCliqueScalingGroups[0].cliqueNames[1]" in cond.message
    assert [e.code for e in got.status.last_errors] == ["InvalidSpec"]
    invalid = [e for e in events if e.reason == "InvalidSpec"]
    assert len(invalid) == 1 and (invalid[0].occurrences or 1) == 1


def test_a_forbidden_pod_creation_is_reported_once_until_it_succeeds(stack: Stack) -> None:
    """A ResourceQuota the operator's pods exceed: the API server answers 403 Forbidden."""
    ns = stack.plane.create_namespace("quota")
    quota_path = f"/api/v1/namespaces/{ns}/resourcequotas"

    async def body(kube: Any) -> tuple[PodClique, list[Event], PodClique, int]:
        await kube.transport.request("POST", quota_path, body={
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "no-pods"},
            "spec": {"hard": {"pods": "0"}}})
        # The quota controller (not running) would fill in the status; admission enforces
        # only a quota whose status says what is used.
        await kube.transport.request(
            "PATCH", f"{quota_path}/no-pods/status",
            body={"status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}},
            content_type="application/merge-patch+json")
        await kube.create(small_pcs("q", ns, [("a", 2)], gpus=1))

        async def failing() -> object:
            try:
                pclq = await kube.get(PodClique, "q-0-a", ns)
            except NotFound:
                return Pending("no PodClique q-0-a yet")
            cond = get_condition(pclq.status.conditions, CONDITION_RECONCILE_FAILURE)
            return pclq if cond is not None and cond.reason == "FailedCreate" else Pending(
                pclq.status.conditions)

        reported = await wait_until_async(failing, 30, interval=0.5,
                                          what="ReconcileFailure=FailedCreate on q-0-a")
        await asyncio.sleep(4)  # retries with backoff, no new Event
        events = await events_of(kube, ns, "q-0-a")
        await kube.transport.request("DELETE", f"{quota_path}/no-pods")

        async def recovered() -> object:
            pclq = await kube.get(PodClique, "q-0-a", ns)
            pods = len((await kube.list(Pod, ns)).items)
            cleared = get_condition(pclq.status.conditions, CONDITION_RECONCILE_FAILURE) is None
            return pclq if cleared and pods == 2 else Pending(f"{pods} pods, cleared={cleared}")

        fixed = await wait_until_async(recovered, 60, interval=0.5,
                                       what="q-0-a's pods created and its failure cleared")
        return reported, events, fixed, len((await kube.list(Pod, ns)).items)

    reported, events, fixed, pods = stack.run(body)
    cond = get_condition(reported.status.conditions, CONDITION_RECONCILE_FAILURE)
    assert "exceeded quota: no-pods" in cond.message
    assert len([e for e in events if e.reason == "FailedCreate"]) == 1
    assert not fixed.status.last_errors and pods == 2


def test_a_podgang_deleted_before_its_pods_is_no_crash(stack: Stack) -> None:
    ns = stack.plane.create_namespace("orphans")

    async def body(kube: Any) -> None:
        await kube.create(small_pcs("o", ns, [("a", 2)], gpus=1))

        async def bound() -> object:
            pods = (await kube.list(Pod, ns)).items
            n = sum(bool(p.spec.node_name) for p in pods)
            return len(pods) == 2 and n == 2 or Pending(f"{n}/{len(pods)} bound")

        await wait_until_async(bound, 45, interval=0.5, what="the 2 pods of o bound")
        for gang in (await kube.list(PodGang, ns)).items:  # the owner first, pods later
            await kube.delete(PodGang, gang.name, ns)
        await asyncio.sleep(4)  # past the gang status controller's settle and interval

    stack.run(body, kubelet=False)
    assert stack.scheduler is not None and stack.scheduler.tracebacks() == []


def test_zz_the_services_stop_cleanly_and_logged_no_traceback(stack: Stack) -> None:
    assert stack.operator is not None and stack.scheduler is not None
    codes = {s.name: s.stop(grace=30) for s in (stack.operator, stack.scheduler)}
    assert set(codes.values()) == {0}, codes
    for s in (stack.operator, stack.scheduler):
        text = s.log_text()
        assert s.tracebacks() == [], f"{s.name}:\n{text[-6000:]}"
        assert "released lease" in text and "lost lease" not in text, text[-2000:]
    # A permanent error is one line per retry, backed off (1, 2, 4, ... s): no storm.
    assert 1 <= stack.operator.log_text().count("InvalidSpec") <= 20
