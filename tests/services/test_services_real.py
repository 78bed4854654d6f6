"""`phalanx operator` and `phalanx scheduler` as subprocesses (`--kubeconfig`) against the real
kube-apiserver, with 16 fake GPU nodes and the stand-in kubelet (issue 15, issue 12).

One operator/scheduler pair serves the module, as one user's session would: the documented
out-of-cluster steps (examples/operator-config.yaml, examples/cluster-topology.yaml) take
examples/disaggregated-inference.yaml and Grove's multi-node sample (as published, on
kube-scheduler; and on phalanx-scheduler) to Running pods and Running PodGangs, with
`kubectl get events` telling what the operator and the scheduler did; the scheduler counts
its cycles; an unfittable gang says why on every pod (`kubectl describe pod`); probes and
metrics answer as documented; an invalid PodCliqueSet and a forbidden pod creation are each
reported once, in the object's status and one Event; a PodGang deleted before its pods is no
crash; SIGTERM stops both cleanly; and their logs hold no traceback. Two replicas of
each, fail-over and cascading deletion: test_replicas_real.py.

No test depends on another: each scenario has its own namespace, creates what it asserts on
(counters are compared with their value before it), and removes its pods when done, so the
nodes are free for the next (`clear_namespace`; no kube-controller-manager runs here). Only
the last test, which stops the services, must stay last (file order). Waits end when
nothing has changed for `STALL` seconds, not after a time a quiet machine needs
(phalanx.envtest.wait): a loaded machine is slower, not stuck.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from phalanx.api import labels as L
from phalanx.api.base import get_condition
from phalanx.api.core import Event, Node
from phalanx.api.crds import crds
from phalanx.api.grove import PodClique, PodCliqueSet, PodGang
from phalanx.api.loader import load_file
from phalanx.api.pod import Pod
from phalanx.cluster.client import NotFound
from phalanx.envtest import (
    Pending,
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    install_crds,
    start_operator,
    start_phalanx_scheduler,
    wait_until_async,
)
from phalanx.operator.errors import CONDITION_RECONCILE_FAILURE
from phalanx.sim.clusterspec import RACK_KEY
from tests.podnames import hostname
from tests.services.real_stack import (
    REPO,
    STALL,
    Stack,
    clear_namespace,
    describe_events,
    events_of,
    kubectl_events,
    small_pcs,
)


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
                await kube.delete(type(topology), topology.name)
            except NotFound:
                pass
            await kube.create(topology)

    async def teardown() -> None:
        async with control_plane.client() as kube:
            await delete_nodes(kube, nodes)
            try:
                await kube.delete(type(topology), topology.name)
            except NotFound:
                pass

    try:
        asyncio.run(setup())
        # The documented out-of-cluster steps: the shipped configuration (leader election
        # on, as installed), the scheduler with its Lease.
        config = yaml.safe_load((REPO / "examples" / "operator-config.yaml").read_text())
        config["leaderElection"]["resourceNamespace"] = system_ns
        s.operator = start_operator(control_plane, config=config, namespace=system_ns)
        s.scheduler = start_phalanx_scheduler(control_plane, leader_elect=True,
                                              lease_namespace=system_ns)
        yield s
    finally:
        for service in (s.operator, s.scheduler):
            if service is not None:
                service.stop()
        asyncio.run(teardown())


def test_the_documented_steps_take_an_example_to_running_pods(stack: Stack) -> None:
    ns = stack.plane.create_namespace("inference")

    async def body(kube: Any) -> tuple[list[Pod], dict[str, str | None]]:
        for obj in load_file(REPO / "examples" / "disaggregated-inference.yaml"):
            obj.metadata.namespace = ns
            await kube.create(obj)

        async def all_running() -> object:
            pods = (await kube.list(Pod, ns)).items
            bound = sum(bool(p.spec.node_name) for p in pods)
            running = sum(p.status.phase == "Running" for p in pods)
            return pods if len(pods) == 14 and running == 14 else Pending(
                f"{len(pods)} pods, {bound} bound, {running} Running")

        pods = await wait_until_async(all_running, 300, interval=0.5, stall=STALL,
                                      what="the 14 pods of disaggregated-inference Running")
        await wait_until_async(lambda: gangs_running(kube, ns, 3), 300, interval=0.5,
                               stall=STALL, what="the 3 PodGangs Initialized and Running")
        rack_of = {n.name: n.metadata.labels.get(RACK_KEY) for n in (await kube.list(Node)).items}
        await clear_namespace(kube, ns)  # 12 of the 16 nodes' GPUs, free for the next test
        return pods, rack_of

    pods, rack_of = stack.run(body)
    assert all(p.spec.node_name for p in pods)
    assert_events_tell_the_story(stack, ns, pods, gangs=["inference-0", "inference-0-decode-0",
                                                        "inference-0-prefill-0"],
                                 groups=["inference-0-decode", "inference-0-prefill"])
    # The ClusterTopologyBinding took the examples' constraints to the scheduler: each prefill and
    # decode replica (a scaling group replica, `pack: {required: rack}`) sits in one rack.
    racks: dict[tuple[str, str], set[str | None]] = {}
    for p in pods:
        labels = p.metadata.labels
        group = labels.get(L.LABEL_PODCLIQUESCALINGGROUP)
        if group is not None:
            key = (group, labels[L.LABEL_PODCLIQUESCALINGGROUP_REPLICA_INDEX])
            racks.setdefault(key, set()).add(rack_of[p.spec.node_name or ""])
    assert len(racks) == 4 and all(len(r) == 1 and None not in r for r in racks.values()), racks


async def gangs_running(kube: Any, ns: str, count: int) -> object:
    """Every PodGang Initialized=True (Grove's condition) and in phase Running."""
    gangs = (await kube.list(PodGang, ns)).items
    state = sorted((g.name, g.is_initialized, g.status.phase) for g in gangs)
    return (len(gangs) == count and all(i and ph == "Running" for _, i, ph in state)
            and gangs) or Pending(state)


def assert_events_tell_the_story(stack: Stack, ns: str, pods: list[Pod], *, gangs: list[str],
                                 groups: list[str]) -> None:
    """`kubectl get events` shows what the operator created (Grove's reasons) and where the
    scheduler put each pod."""
    rows = kubectl_events(stack.plane, ns)
    by = {(r.reason, r.object) for r in rows}
    pcs = {p.metadata.labels[L.LABEL_PART_OF] for p in pods}.pop()
    for gang in gangs:
        assert any(r.reason == "PodGangCreateOrUpdateSuccessful" and r.object ==
                   f"podcliqueset/{pcs}" and r.message == f"Created PodGang {ns}/{gang}"
                   for r in rows), rows
    for group in groups:
        assert ("PodCliqueScalingGroupCreateSuccessful", f"podcliqueset/{pcs}") in by, rows
        assert ("PodCliqueCreateOrUpdateSuccessful", f"podcliquescalinggroup/{group}") in by
    for clique in {p.metadata.labels[L.LABEL_PODCLIQUE] for p in pods}:
        assert ("PodCreateSuccessful", f"podclique/{clique}") in by, rows
    # Members wait briefly behind the operator's gate: no Warning says so on a healthy run.
    assert not [r for r in rows if r.reason == "GangIncomplete"], rows
    for p in pods:
        assert any(r.reason == "Scheduled" and r.object == f"pod/{p.name}" and r.type ==
                   "Normal" and r.message == f"Successfully assigned {ns}/{p.name} to "
                   f"{p.spec.node_name}" for r in rows), (p.name, rows)


def _attempts(stack: Stack, result: str) -> float:
    assert stack.scheduler is not None
    return stack.scheduler.metric("phalanx_scheduling_attempts_total",
                                  profile="phalanx-scheduler", result=result) or 0.0


def test_the_scheduler_counts_its_cycles(stack: Stack) -> None:
    """A gang of 3 pods of its own: the scheduled attempts grow by at least 3."""
    ns = stack.plane.create_namespace("cycles")
    before = _attempts(stack, "scheduled")

    async def body(kube: Any) -> None:
        await kube.create(small_pcs("cycles", ns, [("a", 3)], gpus=1))

        async def bound() -> object:
            pods = (await kube.list(Pod, ns)).items
            n = sum(bool(p.spec.node_name) for p in pods)
            return len(pods) == 3 and n == 3 or Pending(f"{n}/{len(pods)} bound")

        await wait_until_async(bound, 300, stall=STALL, interval=0.5, what="3 pods bound")
        await clear_namespace(kube, ns)

    stack.run(body, kubelet=False)
    assert _attempts(stack, "scheduled") >= before + 3
    assert stack.scheduler is not None and 'result="error"' not in stack.scheduler.metrics()


def test_an_unfittable_gang_says_why_on_every_pod(stack: Stack) -> None:
    """21 pods of 16 GPUs on 16 nodes of 8: nothing is bound, every pod says why, whatever
    else runs on the nodes, and no pod keeps the stale SchedulingGated condition once its
    gang was tried."""
    ns = stack.plane.create_namespace("toobig")

    async def body(kube: Any) -> list[Pod]:
        await kube.create(small_pcs("toobig", ns, [("leader", 1), ("worker", 20)], gpus=16))

        async def all_unschedulable() -> object:
            pods = (await kube.list(Pod, ns)).items
            reasons = sorted({(c.reason if (c := p.get_condition("PodScheduled")) else "")
                              or "" for p in pods})
            return pods if len(pods) == 21 and reasons == ["Unschedulable"] else Pending(
                f"{len(pods)} pods, PodScheduled reasons {reasons}")

        return await wait_until_async(all_unschedulable, 300, interval=0.5, stall=STALL,
                                      what="21 pods PodScheduled=False/Unschedulable")

    pods = stack.run(body)
    assert not [p.name for p in pods if p.spec.node_name]
    # What a user sees: kubectl describe names the gang and why, on the representative
    # pod (the cycle's FailedScheduling) and on every other member (GangUnschedulable).
    why = "0/16 nodes are available"
    names = {hostname(p): p.name for p in pods}  # pods have generated names
    for name in (names["toobig-0-leader-0"], names["toobig-0-worker-7"]):
        out = stack.plane.kubectl("describe", "pod", name, namespace=ns).stdout
        assert re.search(r"^Node:\s+<none>$", out, re.MULTILINE), out
        events = describe_events(stack.plane, ns, f"pod/{name}")
        gang = [e for e in events if e[:3] == ("Warning", "GangUnschedulable",
                                                "phalanx-scheduler")]
        assert gang and why in gang[0][3] and f"PodGang {ns}/toobig-0" in gang[0][3], events
        assert "Insufficient nvidia.com/gpu" in gang[0][3], events
    rows = kubectl_events(stack.plane, ns)
    failed = [r for r in rows if r.reason == "FailedScheduling"]
    assert failed and all(why in r.message for r in failed), rows
    assert not [r for r in rows if r.reason == "Scheduled"]


GROVE_SAMPLE = REPO / "tests" / "grove_e2e" / "yaml" / "multi-node-aggregated.yaml"


def grove_sample(ns: str, scheduler: str | None = None) -> PodCliqueSet:
    """Grove's multi-node aggregated sample (1 leader + 3 workers, a scaling group of 2),
    in `ns`; `scheduler` names the pods' scheduler (the sample names none)."""
    [pcs] = load_file(GROVE_SAMPLE)
    pcs.metadata.namespace = ns
    for clique in pcs.spec.template.cliques:
        if scheduler is not None:
            clique.spec.pod_spec.scheduler_name = scheduler
    return pcs


@pytest.mark.parametrize("scheduler", [None, "phalanx-scheduler"],
                         ids=["as-published-on-kube-scheduler", "on-phalanx-scheduler"])
def test_grove_multinode_sample_runs(stack: Stack, kube_scheduler: Any,
                                     scheduler: str | None) -> None:
    """As published the sample's pods name no scheduler: the shipped configuration's
    default profile (default-scheduler) leaves them to kube-scheduler; naming
    phalanx-scheduler gang-schedules each PodGang. Either way: 8 pods bound and Running,
    both PodGangs Initialized and Running, and kubectl tells what happened."""
    ns = stack.plane.create_namespace("grove-sample")

    async def body(kube: Any) -> list[Pod]:
        await kube.create(grove_sample(ns, scheduler))

        async def running() -> object:
            pods = (await kube.list(Pod, ns)).items
            n = sum(p.status.phase == "Running" and bool(p.spec.node_name) for p in pods)
            return len(pods) == 8 and n == 8 and pods or Pending(f"{n}/{len(pods)} Running")

        pods = await wait_until_async(running, 300, interval=0.5, stall=STALL,
                                      what="the 8 pods of Grove's sample bound and Running")
        await wait_until_async(lambda: gangs_running(kube, ns, 2), 300, interval=0.5,
                               stall=STALL, what="both PodGangs Initialized and Running")
        return pods

    pods = stack.run(body)
    assert {p.spec.scheduler_name for p in pods} == {scheduler or "default-scheduler"}
    assert_events_tell_the_story(
        stack, ns, pods, groups=["multinode-aggregated-0-model-instance"],
        gangs=["multinode-aggregated-0", "multinode-aggregated-0-model-instance-0"])
    stack.run(lambda kube: clear_namespace(kube, ns), kubelet=False)


def documented_metrics(component: str) -> list[str]:
    """The metric names docs/real-cluster.md lists for `component` ("Operator"/"Scheduler")."""
    doc = (REPO / "docs" / "real-cluster.md").read_text()
    line = re.search(rf"{component} metrics: (.*?)\.\n", doc, re.DOTALL)
    assert line, f"docs/real-cluster.md lists no {component} metrics"
    return re.findall(r"`(phalanx_[a-z_]+)", line.group(1))


def test_probes_and_metrics_of_both_services(stack: Stack) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    assert stack.operator is not None and stack.scheduler is not None
    op, sched = stack.operator, stack.scheduler
    # What the counters below count, made here: a gang that fits and one that cannot.
    waited = sched.metric("phalanx_gang_wait_seconds_count") or 0.0
    unschedulable = _attempts(stack, "unschedulable")
    ns = stack.plane.create_namespace("metrics")

    async def gangs(kube: Any) -> None:
        await kube.create(small_pcs("fits", ns, [("a", 2)], gpus=1))
        await kube.create(small_pcs("never", ns, [("a", 1)], gpus=16))

        async def counted() -> object:
            pods = {p.name: p for p in (await kube.list(Pod, ns)).items}
            bound = sum(bool(p.spec.node_name) for p in pods.values())
            state = (bound, sched.metric("phalanx_gang_wait_seconds_count"),
                     _attempts(stack, "unschedulable"))
            done = bound == 2 and (state[1] or 0) > waited and state[2] > unschedulable
            return done or Pending(state)

        await wait_until_async(counted, 300, interval=0.5, stall=STALL,
                               what="a gang bound and one tried in vain, counted")
        await clear_namespace(kube, ns)

    stack.run(gangs, kubelet=False)
    for svc, component in ((stack.operator, "Operator"), (stack.scheduler, "Scheduler")):
        assert svc.probe("/healthz") == (200, b"ok\n")
        assert svc.probe("/livez")[0] == 200
        status, body = svc.probe("/healthz?verbose")
        assert (status, body.decode()) == (200, "[+]ping ok\nhealthz check passed\n")
        assert svc.probe("/readyz") == (200, b"ok\n")
        status, body = svc.probe("/readyz?verbose")
        started = "[+]controllers ok" if component == "Operator" else "[+]scheduler ok"
        assert status == 200 and body.decode().splitlines() == [
            "[+]api-server ok", "[+]informer-sync ok", started, "[+]leader-election ok",
            "readyz check passed"], body
        text = svc.metrics()
        names = {f.name for f in text_string_to_metric_families(text)}
        samples = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
        documented = documented_metrics(component)
        # A counter's family drops `_total`; one with no sample yet (no webhook call) shows
        # only its family.
        missing = [m for m in documented
                   if m not in names | samples and m.removesuffix("_total") not in names]
        assert documented and missing == [], (component, sorted(names))
    assert op.metric("phalanx_leader", lease="phalanx-operator-leader-election") == 1.0
    assert sched.metric("phalanx_leader", lease="phalanx-scheduler-leader-election") == 1.0
    assert (op.metric("phalanx_controller_reconciles_total", controller="podclique",
                      result="success") or 0) > 0
    assert op.metric("phalanx_workqueue_depth", name="podclique") is not None
    assert sched.metric("phalanx_scheduler_pending_pods") is not None


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

        got = await wait_until_async(reported, 300, interval=0.5, stall=STALL,
                                     what="ReconcileFailure=InvalidSpec on PodCliqueSet bad")
        await asyncio.sleep(4)  # a few retries with backoff later
        return got, await events_of(kube, ns, "bad"), len((await kube.list(PodGang, ns)).items)

    got, events, gangs = stack.run(body, kubelet=False)
    assert gangs == 0
    # A permanent error is one line per retry, backed off (1, 2, 4, ... s): no storm.
    assert stack.operator is not None
    assert 1 <= stack.operator.log_text().count("InvalidSpec") <= 20
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

        reported = await wait_until_async(failing, 300, interval=0.5, stall=STALL,
                                          what="ReconcileFailure=FailedCreate on q-0-a")
        await asyncio.sleep(4)  # retries with backoff, no new Event
        events = await events_of(kube, ns, "q-0-a")
        await kube.transport.request("DELETE", f"{quota_path}/no-pods")

        async def recovered() -> object:
            pclq = await kube.get(PodClique, "q-0-a", ns)
            pods = len((await kube.list(Pod, ns)).items)
            cleared = get_condition(pclq.status.conditions, CONDITION_RECONCILE_FAILURE) is None
            return pclq if cleared and pods == 2 else Pending(f"{pods} pods, cleared={cleared}")

        fixed = await wait_until_async(recovered, 300, interval=0.5, stall=STALL,
                                       what="q-0-a's pods created and its failure cleared")
        pods = len((await kube.list(Pod, ns)).items)
        await clear_namespace(kube, ns)
        return reported, events, fixed, pods

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

        await wait_until_async(bound, 300, interval=0.5, stall=STALL,
                               what="the 2 pods of o bound")
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
