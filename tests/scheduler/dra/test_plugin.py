"""kube's DynamicResources plugin tests (dynamicresources_test.go: TestPlugin,
TestIsSchedulableAfterClaimChange, TestIsSchedulableAfterPodChange),
ported row by row on the plugin itself with kube's fixtures (pod "default/my-pod" with a
claim "my-pod-my-resource" of class "my-resource-class", node "worker" publishing device
"instance-1" of "some-driver"). ids are kube's row names.

Each TestPlugin row runs the extension points in order (PreEnqueue, PreFilter, Filter on
every node, Reserve, PreBind) and stops at the first that does not succeed, as the
scheduler would, comparing that status's code and message; rows that get through check
the claim PreBind wrote (allocation, reservation, finalizer).

Differences from kube, deliberate: a node where the claims do not fit is Unschedulable,
not UnschedulableAndUnresolvable (our preemption can free devices: it counts the devices of
victims' claims as free, dra/tracker.devices_released), so the per-node code of
`no-resources`, `exhausted-*` and `wrong-topology` is compared as Unschedulable; an
allocator error (a selector failing on a device) is UnschedulableAndUnresolvable for the
pod instead of an Error status (it cannot succeed until the claim or class changes).

Not ported: rows of features we do not implement — PodGroup claims
(`podgroup-*`, `bind-podgroup-failure`, `postfilter-*podgroup*`, `reserved-okay-podgroup`,
DRAWorkloadResourceClaims, alpha), extended resources backed by DRA (`*extended-resource*`),
device binding conditions and allocation timestamps (`bind-claim-with-binding-conditions`,
`bound-claim-*`, `prebind-fail-with-binding-timeout`, `multi-claims-binding-conditions-*`,
`*allocation-timestamp*`, `bind-failure-concurrent-deallocation`), node-allocatable
resources (`node-allocatable-resource-*`, alpha), `canceled` (nothing cancels a Filter
here; `timeout` and `timeout_zero` are in test_filter_timeout.py), feature gates fixed
on here (`DRA-disabled`, `*-feature-disabled`, `tainted-device-disabled`,
`request-admin-access-without-DRAAdminAccess-featuregate`), `skip-bind` and `bind-failure`
(they inject API errors through client-go reactors), `empty-with-extended-resources-enabled`.
Expressible, not ported yet (time): `with-resources-has-finalizer`,
`with-resources-finalizer-gets-removed`, `with-resources-finalizer-gets-added`,
`structured-ignore-allocated-admin-access`, `CEL-runtime-error-for-one-of-three-nodes`, the
three `*-prioritized-list-scoring` rows, and the tables Test_computesScore,
TestNormalizeScore, TestAllocatorSelection and TestGatherAllocatedState.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from phalanx.api.core import Node, Pod
from phalanx.api.resource import DeviceClass, FINALIZER, ResourceClaim, ResourceSlice
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.types import PodInfo, QueueingHint
from phalanx.scheduler.plugins.dynamicresources import DynamicResources
from phalanx.scheduler.snapshot import Snapshot

NS, POD, POD_UID = "default", "my-pod", "1234"
RES, CLAIM, CLAIM2 = "my-resource", "my-pod-my-resource", "my-pod-my-resource-2"
CLASS, DRIVER, NODE, NODE2 = "my-resource-class", "some-driver", "worker", "worker-2"
BROKEN = f'device.attributes["{DRIVER}"].healthy'


def pod(*, template: bool = False, in_status: bool = True,
        claims: tuple[str, ...] = (CLAIM,)) -> Pod:
    entries, statuses = [], []
    for i, name in enumerate(claims):
        entry = RES if i == 0 else f"{RES}-{i + 1}"
        if template:
            entries.append({"name": entry, "resourceClaimTemplateName": name})
            statuses.append({"name": entry, "resourceClaimName": name})
        else:
            entries.append({"name": entry, "resourceClaimName": name})
    status = {"resourceClaimStatuses": statuses} if template and in_status else {}
    return Pod.model_validate({"metadata": {"name": POD, "namespace": NS, "uid": POD_UID},
                               "spec": {"containers": [{"name": "c", "image": "x"}],
                                        "resourceClaims": entries}, "status": status})


def claim(name: str = CLAIM, *, owned: bool = False, requests: list[dict] | None = None,
          allocated_on: str | None = None, reserved: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owned:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": POD,
                                    "uid": POD_UID, "controller": True}]
    out: dict[str, Any] = {"metadata": meta, "spec": {"devices": {"requests": requests or [
        {"name": "req-1", "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount",
                                      "count": 1}}]}}}
    if allocated_on:
        meta["finalizers"] = [FINALIZER]
        status: dict[str, Any] = {"allocation": {
            "devices": {"results": [{"request": "req-1", "driver": DRIVER,
                                     "pool": allocated_on, "device": "instance-1"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [allocated_on]}]}]}}}
        if reserved:
            status["reservedFor"] = [{"resource": "pods", "name": POD, "uid": POD_UID}]
        out["status"] = status
    return out


def device_class(name: str = CLASS, selector: str | None = None) -> dict[str, Any]:
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    return {"metadata": {"name": name}, "spec": spec}


def node_slice(node: str, *devices: dict[str, Any], driver: str = DRIVER) -> dict[str, Any]:
    return {"metadata": {"name": f"{node}-{driver}"}, "spec": {
        "driver": driver, "nodeName": node, "pool": {"name": node, "resourceSliceCount": 1},
        "devices": list(devices) or [{"name": "instance-1"}]}}


def node(name: str) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name}}, "status": {"allocatable": {"cpu": "8", "pods": "10"}}})


class _Handle:
    def __init__(self, client: MemoryCluster, snap: Snapshot) -> None:
        self.client = client
        self._snap = snap
        self._shared: dict[str, Any] = {}
        self.profile_name = "phalanx-scheduler"

    @property
    def clock(self) -> Any:
        return self.client.clock

    def shared(self, name: str, factory: Any) -> Any:
        if name not in self._shared:
            self._shared[name] = factory()
        return self._shared[name]

    def snapshot(self) -> Snapshot:
        return self._snap

    def pod_info(self, key: str) -> None:
        return None


@dataclass
class Row:
    pod: Pod
    claims: list[dict[str, Any]] = field(default_factory=list)
    classes: list[dict[str, Any]] = field(default_factory=lambda: [device_class()])
    slices: list[dict[str, Any]] = field(default_factory=list)
    nodes: tuple[str, ...] = (NODE,)
    inflight: list[dict[str, Any]] = field(default_factory=list)  # claims allocated elsewhere
    deleting: bool = False  # the claims carry a deletionTimestamp
    # (extension point, code, message substring) where the pod stops; None: it binds.
    stop: tuple[str, Code, str] | None = None
    feasible: tuple[str, ...] | None = None  # nodes passing Filter, when checked
    allocated_device: str | None = "worker/instance-1"  # what PreBind wrote, when it binds


async def _run(row: Row) -> dict[str, Any]:
    client = MemoryCluster()
    snap = Snapshot()
    for n in row.nodes:
        snap.set_node(node(n))
    handle = _Handle(client, snap)
    plugin = DynamicResources(handle)
    tracker = plugin.tracker
    for c in row.classes:
        tracker.set_class(await client.create(DeviceClass.model_validate(c)))
    for s in row.slices:
        tracker.set_slice(await client.create(ResourceSlice.model_validate(s)))
    for c in row.claims:
        obj = ResourceClaim.model_validate(c)
        status = obj.status.model_copy(deep=True)
        made = await client.create(obj)
        if status.allocation is not None:
            made.status = status
            made = await client.update_status(made)
        if row.deleting:
            made.metadata.deletion_timestamp = client.clock.now_dt()
        tracker.set_claim(made)
    for c in row.inflight:
        obj = ResourceClaim.model_validate(c)
        alloc = obj.status.allocation
        obj.status.allocation = None
        made = await client.create(obj)
        tracker.set_claim(made)
        tracker.reserve(made, alloc, "default/other-pod")
    info = PodInfo(row.pod)
    out: dict[str, Any] = {}
    st = plugin.pre_enqueue(info)
    if not st.is_success:
        return {"stop": ("PreEnqueue", st.code, st.message)}
    state = CycleState()
    _, st = plugin.pre_filter(state, info, snap)
    if st.is_skip:
        return {"stop": ("PreFilter", st.code, st.message)}
    if not st.is_success:
        return {"stop": ("PreFilter", st.code, st.message)}
    idx = snap.valid_rows()
    res = plugin.filter(state, info, snap, idx)
    out["feasible"] = tuple(snap.names[int(r)] for r in idx[res.feasible])
    if not res.feasible.any():
        why = [r.reason for r in res.rejections] or [res.default_reason]
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if res.unresolvable or any(
            r.unresolvable for r in res.rejections) else Code.UNSCHEDULABLE
        return {**out, "stop": ("Filter", code, "; ".join(why))}
    chosen = out["feasible"][0]
    st = plugin.reserve(state, info, chosen)
    if not st.is_success:
        return {**out, "stop": ("Reserve", st.code, st.message)}
    st = await plugin.pre_bind(state, info, chosen)
    if not st.is_success:
        return {**out, "stop": ("PreBind", st.code, st.message)}
    written = [await client.get(ResourceClaim, c["metadata"]["name"], NS) for c in row.claims]
    out["written"] = written
    return out


ROWS: dict[str, Row] = {
    "empty": Row(Pod.model_validate({"metadata": {"name": "foo", "namespace": NS},
                                     "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                 stop=("PreFilter", Code.SKIP, "")),
    "claim-reference": Row(pod(), claims=[claim(allocated_on=NODE),
                                           claim("other-claim", allocated_on=NODE)],
                           slices=[node_slice(NODE)]),
    "claim-template": Row(pod(template=True),
                          claims=[claim(owned=True, allocated_on=NODE),
                                  claim("other-claim", allocated_on=NODE)],
                          slices=[node_slice(NODE)]),
    "missing-claim": Row(pod(template=True, in_status=False),
                         claims=[claim(owned=True, allocated_on=NODE)],
                         stop=("PreEnqueue", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                               'pod "default/my-pod": ResourceClaim not created yet')),
    "wrong-claim": Row(pod(template=True), claims=[claim(allocated_on=NODE)],
                       stop=("PreEnqueue", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                             "ResourceClaim default/my-pod-my-resource was not created for Pod "
                             "default/my-pod (Pod is not owner)")),
    "deleted-claim": Row(pod(template=True), claims=[claim(owned=True, allocated_on=NODE)],
                         deleting=True,
                         stop=("PreEnqueue", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                               'resourceclaim "my-pod-my-resource" is being deleted')),
    "no-resources": Row(pod(), claims=[claim()],
                        stop=("Filter", Code.UNSCHEDULABLE, "cannot allocate all claims")),
    "with-resources": Row(pod(), claims=[claim()], slices=[node_slice(NODE)]),
    "exhausted-resources-in-informer-cache": Row(
        pod(), claims=[claim(), claim("other-claim", allocated_on=NODE, reserved=True)],
        slices=[node_slice(NODE)],
        stop=("Filter", Code.UNSCHEDULABLE, "cannot allocate all claims")),
    "exhausted-resources-in-flight-claim": Row(
        pod(), claims=[claim()], inflight=[claim("other-claim", allocated_on=NODE)],
        slices=[node_slice(NODE)],
        stop=("Filter", Code.UNSCHEDULABLE, "cannot allocate all claims")),
    "other-resources-in-flight-claim": Row(
        pod(), claims=[claim()], slices=[node_slice(NODE, {"name": "instance-1"},
                                                    {"name": "instance-2"})],
        inflight=[claim("other-claim", allocated_on=NODE)],
        allocated_device="worker/instance-2"),
    "tainted-device-enabled": Row(
        pod(), claims=[claim()],
        slices=[node_slice(NODE, {"name": "instance-1", "taints": [
            {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]})],
        stop=("Filter", Code.UNSCHEDULABLE, "cannot allocate all claims")),
    "request-admin-access-with-DRAAdminAccess-featuregate": Row(
        pod(), claims=[claim(requests=[{"name": "req-1", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1,
            "adminAccess": True}}])],
        slices=[node_slice(NODE)]),
    "claim-parameters-CEL-runtime-error": Row(
        pod(), claims=[claim(requests=[{"name": "req-1", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1,
            "selectors": [{"cel": {"expression": BROKEN}}]}}])],
        slices=[node_slice(NODE)],
        stop=("Filter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
              "claim default/my-pod-my-resource: selector #0: CEL runtime error: ")),
    "class-parameters-CEL-runtime-error": Row(
        pod(), claims=[claim()], classes=[device_class(selector=BROKEN)],
        slices=[node_slice(NODE)],
        stop=("Filter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
              "class my-resource-class: selector #0: CEL runtime error: ")),
    "CEL-runtime-error-for-one-of-two-nodes": Row(
        pod(), claims=[claim(requests=[{"name": "req-1", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1,
            "selectors": [{"cel": {"expression": BROKEN}}]}}])],
        nodes=(NODE, NODE2),
        slices=[node_slice(NODE),
                node_slice(NODE2, {"name": "instance-1", "attributes": {
                    "healthy": {"bool": True}}})],
        stop=("Filter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "CEL runtime error")),
    "missing-class": Row(pod(), claims=[claim()], classes=[],
                         stop=("PreFilter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                               "request req-1: device class my-resource-class does not exist")),
    "wrong-topology": Row(pod(), claims=[claim(allocated_on=NODE2)],
                          stop=("Filter", Code.UNSCHEDULABLE,
                                "resourceclaim not available on the node")),
    "good-topology": Row(pod(), claims=[claim(allocated_on=NODE)], slices=[node_slice(NODE)]),
    "reserved-okay": Row(pod(), claims=[claim(allocated_on=NODE, reserved=True)],
                         slices=[node_slice(NODE)]),
    "claim-with-request-with-unknown-device-class": Row(
        pod(), claims=[claim(requests=[{"name": "req-1", "exactly": {
            "deviceClassName": "does-not-exist", "allocationMode": "ExactCount", "count": 1}}])],
        stop=("PreFilter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
              "request req-1: device class does-not-exist does not exist")),
    "claim-with-prioritized-list-unknown-device-class": Row(
        pod(), claims=[claim(requests=[{"name": "req-0", "firstAvailable": [
            {"name": "subreq-0", "deviceClassName": "does-not-exist",
             "allocationMode": "ExactCount", "count": 1}]}])],
        stop=("PreFilter", Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
              "request req-0/subreq-0: device class does-not-exist does not exist")),
    "claim-with-prioritized-list": Row(
        pod(), claims=[claim(requests=[{"name": "req-0", "firstAvailable": [
            {"name": "subreq-1", "deviceClassName": CLASS, "allocationMode": "ExactCount",
             "count": 1}]}])],
        slices=[node_slice(NODE)]),
}


@pytest.mark.parametrize("name", list(ROWS), ids=list(ROWS))
def test_plugin(name: str) -> None:
    row = ROWS[name]
    got = run_virtual(_run(row))
    if row.stop is not None:
        point, code, message = got.get("stop", (None, None, ""))
        assert (point, code) == row.stop[:2], got
        assert row.stop[2] in message, message
        return
    assert "stop" not in got, got
    written = got["written"][0]
    alloc = written.status.allocation
    assert alloc is not None
    assert [f"{r.pool}/{r.device}" for r in alloc.devices.results] == [row.allocated_device]
    assert [(r.name, r.uid) for r in written.status.reserved_for] == [(POD, POD_UID)]
    assert FINALIZER in written.metadata.finalizers


# --- queueing hints (TestIsSchedulableAfterClaimChange, TestIsSchedulableAfterPodChange) ---


def _hint_plugin(claims: list[dict[str, Any]]) -> DynamicResources:
    client = MemoryCluster()
    plugin = DynamicResources(_Handle(client, Snapshot()))
    for c in claims:
        obj = ResourceClaim.model_validate(c)
        obj.metadata.uid = f"uid-{obj.name}"
        plugin.tracker.set_claim(obj)
    return plugin


def _claim_obj(**kw: Any) -> ResourceClaim:
    obj = ResourceClaim.model_validate(claim(**kw))
    obj.metadata.uid = f"uid-{obj.name}"
    return obj


HINTS: dict[str, tuple[Pod, list[dict], Any, Any, QueueingHint]] = {
    "skip-unrelated-claim": (pod(), [claim()], None, _claim_obj(name="other"),
                             QueueingHint.QUEUE_SKIP),
    "queue-on-add": (pod(), [claim()], None, _claim_obj(), QueueingHint.QUEUE),
    "skip-adding-finalizer": (pod(), [claim()], _claim_obj(),
                              _claim_obj().model_copy(update={"metadata": _claim_obj().metadata
                                                              .model_copy(update={
                                                                  "finalizers": ["x"]})}),
                              QueueingHint.QUEUE_SKIP),
    "queue-on-status-change": (pod(), [claim()], _claim_obj(), _claim_obj(allocated_on=NODE),
                               QueueingHint.QUEUE),
    "claim-deallocate": (pod(), [claim(), claim("other")], _claim_obj(name="other",
                                                                      allocated_on=NODE),
                         _claim_obj(name="other"), QueueingHint.QUEUE),
}


@pytest.mark.parametrize("name", list(HINTS), ids=list(HINTS))
def test_is_schedulable_after_claim_change(name: str) -> None:
    p, claims, old, new, want = HINTS[name]
    plugin = _hint_plugin(claims)
    assert plugin._after_claim(PodInfo(p), old, new) is want


POD_HINTS: dict[str, tuple[Pod, list[dict], Pod, QueueingHint]] = {
    "complete": (pod(template=True, in_status=False), [claim(owned=True)],
                 pod(template=True), QueueingHint.QUEUE),
    "wrong-pod": (pod(template=True, in_status=False), [claim(owned=True)],
                  Pod.model_validate({"metadata": {"name": "other", "namespace": NS,
                                                   "uid": "other-uid"},
                                      "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                  QueueingHint.QUEUE_SKIP),
    "missing-claim": (pod(template=True, in_status=False), [], pod(template=True),
                      QueueingHint.QUEUE_SKIP),
    "incomplete": (pod(template=True, in_status=False, claims=(CLAIM, CLAIM2)),
                   [claim(owned=True)],
                   pod(template=True, claims=(CLAIM, CLAIM2)).model_copy(update={
                       "status": pod(template=True).status}),
                   QueueingHint.QUEUE_SKIP),
}


@pytest.mark.parametrize("name", list(POD_HINTS), ids=list(POD_HINTS))
def test_is_schedulable_after_pod_change(name: str) -> None:
    p, claims, new, want = POD_HINTS[name]
    plugin = _hint_plugin(claims)
    assert plugin._after_pod(PodInfo(p), p, new) is want


def test_pods_without_claims_cost_nothing() -> None:
    """PreEnqueue and PreFilter answer from one attribute read: no tracker work."""
    plugin = _hint_plugin([])
    plugin.tracker.ready_inventory = None  # type: ignore[assignment]  # would raise if used
    info = PodInfo(Pod.model_validate({"metadata": {"name": "p", "namespace": NS},
                                       "spec": {"containers": [{"name": "c", "image": "x"}]}}))
    assert plugin.pre_enqueue(info).is_success
    _, st = plugin.pre_filter(CycleState(), info, Snapshot())
    assert st.is_skip
    res = plugin.filter(CycleState(), info, Snapshot(), np.arange(3))
    assert res.feasible.all()
