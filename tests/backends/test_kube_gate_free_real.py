"""default-scheduler without Grove's gate (issue 28 item 2), against the real kube-apiserver
1.36 and the real kube-scheduler 1.36: `phalanx operator` (a subprocess) with
`gangScheduling: true, podSchedulingGate: false` creates the pods ungated, and
kube-scheduler's GangScheduling holds them instead: no pod is bound before its PodGroup
exists, nor before every pod of its PodGang exists (each gang's minCount is all its pods).

The order is read from watches started before the PodCliqueSet exists: the resourceVersions
of the one etcd are a single sequence, so a bind must come after the creates it waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.base import ObjectMeta
from phalanx.api.pod import Pod
from phalanx.api.workloads import V1ALPHA2, PodGroupV1Alpha2, kube_gang_objects
from phalanx.cluster.client import Forbidden, Invalid, NotFound
from phalanx.envtest import (
    Pending,
    PhalanxService,
    wait_until_async,
)

from .samples import leader_workers

WAIT = 60.0  # seconds for the 8 binds; the test's own timeout is the backstop


class GangTrace:
    """What watches started before the PodCliqueSet saw: pod creates (and whether gated),
    binds and PodGroup creates, by resourceVersion."""

    def __init__(self) -> None:
        self.created: dict[str, int] = {}
        self.gated: dict[str, bool] = {}
        self.gang_of: dict[str, str] = {}
        self.bound: dict[str, int] = {}
        self.podgroup_created: dict[str, int] = {}
        self.others_bound: dict[str, int] = {}  # pods of no PodGang

    async def follow(self, kube: Any, ns: str, rv: str) -> None:
        async def pods() -> None:
            async for ev in kube.watch(Pod, ns, resource_version=rv):
                pod, at = ev.object, int(ev.object.metadata.resource_version)
                if L.LABEL_PODGANG not in pod.metadata.labels:
                    if pod.spec.node_name:
                        self.others_bound.setdefault(pod.name, at)
                    continue
                if ev.type == "ADDED" and pod.name not in self.created:
                    self.created[pod.name] = at
                    self.gated[pod.name] = pod.has_gate(L.GATE_PODGANG_PENDING_CREATION)
                    self.gang_of[pod.name] = pod.metadata.labels.get(L.LABEL_PODGANG, "")
                if pod.spec.node_name and pod.name not in self.bound:
                    self.bound[pod.name] = at

        async def podgroups() -> None:
            async for ev in kube.watch(PodGroupV1Alpha2, ns, resource_version=rv):
                if ev.type == "ADDED" and ev.object.name not in self.podgroup_created:
                    self.podgroup_created[ev.object.name] = int(
                        ev.object.metadata.resource_version)

        await asyncio.gather(pods(), podgroups())

    def check(self, pods: list[Pod], gang_size: int) -> None:
        assert self.gated == {p: False for p in self.bound}, "pods created with Grove's gate"
        assert {p.name: p.spec.scheduling_group.pod_group_name for p in pods
                if p.spec.scheduling_group} == self.gang_of
        for pod, at in self.bound.items():
            gang = self.gang_of[pod]
            made = self.podgroup_created.get(gang)
            assert made is not None, f"{pod} bound, its PodGroup {gang} never created"
            assert at > made, f"{pod} bound at rv {at} before PodGroup {gang} (rv {made})"
            members = [p for p, g in self.gang_of.items() if g == gang]
            assert len(members) == gang_size, members
            late = {p: self.created[p] for p in members if self.created[p] > at}
            assert not late, f"{pod} bound at rv {at} before its gang's {late} existed"


ADMISSION = "/apis/admissionregistration.k8s.io/v1"


async def refuse_podgroups(kube: Any, ns: str) -> str:
    """A ValidatingAdmissionPolicy (and binding) that refuses every PodGroup create in `ns`;
    returns once the API server applies it (a dry-run create is refused). Its name, for
    `allow_podgroups`."""
    name = f"refuse-podgroups-{ns}"[:63]
    await kube.transport.request("POST", f"{ADMISSION}/validatingadmissionpolicies", body={
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
            "apiGroups": ["scheduling.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE"], "resources": ["podgroups"]}]},
            "validations": [{"expression": "false", "message": "PodGroups refused (test)"}]}})
    await kube.transport.request(
        "POST", f"{ADMISSION}/validatingadmissionpolicybindings", body={
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"], "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}})
    # The probe's Workload exists (a PodGroup without one is refused before any policy).
    workload, probe = kube_gang_objects(V1ALPHA2, ObjectMeta(name="probe", namespace=ns), 1)
    await kube.create(workload)

    async def refused() -> object:
        try:
            await kube.transport.request(
                "POST", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups",
                query=[("dryRun", "All")], body=probe.to_dict())
        except (Invalid, Forbidden) as e:
            return "PodGroups refused" in str(e) or Pending(str(e))
        return Pending("a dry-run PodGroup create is still admitted")

    try:
        await wait_until_async(refused, WAIT, what="the PodGroup-refusing policy in force",
                               interval=0.2)
    except BaseException:
        await allow_podgroups(kube, name)  # cluster-scoped: not left behind
        raise
    return name


async def allow_podgroups(kube: Any, name: str) -> None:
    for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
        with contextlib.suppress(NotFound):
            await kube.transport.request("DELETE", f"{ADMISSION}/{kind}/{name}")


async def _run(kube: Any, ns: str, *, podgroups_refused: bool) -> GangTrace:
    """2 gangs of a leader and 3 workers (minCount 4 each), to all 8 bound. With
    `podgroups_refused` an admission policy first refuses every PodGroup create, so the pods
    exist well before their PodGroups, until the policy is deleted."""
    policy = await refuse_podgroups(kube, ns) if podgroups_refused else None
    trace = GangTrace()
    rv = (await kube.list(Pod, ns)).resource_version
    follower = asyncio.create_task(trace.follow(kube, ns, rv))
    try:
        await kube.create(leader_workers(ns, 3, replicas=2))
        if policy is not None:
            await wait_until_async(
                lambda: len(trace.created) == 8 or Pending({"created": len(trace.created)}),
                WAIT, what="the 8 pods created while their PodGroups are refused", interval=0.2)
            # A pod of no gang, created after them: once kube-scheduler has bound it, it has
            # had its turn at the 8 (its queue takes equal-priority pods oldest first).
            await kube.create(Pod.model_validate({
                "metadata": {"name": "control", "namespace": ns},
                "spec": {"schedulerName": "default-scheduler", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}))
            await wait_until_async(
                lambda: "control" in trace.others_bound or Pending(sorted(trace.bound)),
                WAIT, what="the gang-less control pod bound", interval=0.2)
            assert trace.bound == {} and trace.podgroup_created == {}, (
                trace.bound, trace.podgroup_created)
            await allow_podgroups(kube, policy)
            policy = None
        await wait_until_async(
            lambda: len(trace.bound) == 8
            or Pending({"created": len(trace.created), "bound": sorted(trace.bound)}),
            WAIT, what="the 8 pods of 2 gangs bound", interval=0.2)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        if policy is not None:
            await allow_podgroups(kube, policy)
    trace.check((await kube.list(Pod, ns)).items, gang_size=4)
    return trace


@pytest.mark.timeout(150)
def test_kube_scheduler_holds_ungated_pods_until_their_whole_gang_exists(
        control_plane: Any, kube_namespace: str, kube_scheduler: Any,
        fake_nodes: Callable[..., list[str]], gang_operator: Callable[..., PhalanxService]) -> None:
    fake_nodes(2, gpus=8)  # 16 GPUs for 8 pods
    op = gang_operator(podSchedulingGate=False)

    async def main() -> None:
        async with control_plane.client() as kube:
            await _run(kube, kube_namespace, podgroups_refused=False)

    asyncio.run(main())
    assert op.tracebacks() == [], op.log_text(6000)


@pytest.mark.timeout(200)
def test_kube_scheduler_holds_ungated_pods_until_their_podgroup_exists(
        control_plane: Any, kube_namespace: str, kube_scheduler: Any,
        fake_nodes: Callable[..., list[str]], gang_operator: Callable[..., PhalanxService]) -> None:
    fake_nodes(2, gpus=8)
    op = gang_operator(podSchedulingGate=False)

    async def main() -> None:
        async with control_plane.client() as kube:
            trace = await _run(kube, kube_namespace, podgroups_refused=True)
            # The case this test is for: every pod existed before its PodGroup.
            assert all(trace.created[p] < trace.podgroup_created[g]
                       for p, g in trace.gang_of.items()), trace.created

    asyncio.run(main())
    assert op.tracebacks() == [], op.log_text(6000)
