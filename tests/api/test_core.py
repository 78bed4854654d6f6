from datetime import UTC, datetime

import pytest

from phalanx.api import labels
from phalanx.api.base import ObjectMeta
from phalanx.api.core import Container, Event, Lease, Node, Pod, PodSpec, PriorityClass
from phalanx.api.registry import from_dict


def _pod(**spec):
    spec.setdefault("containers", [{"name": "main"}])
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


def _c(name, requests=None, limits=None, restart_policy=None):
    c = {"name": name, "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if limits:
        c["resources"]["limits"] = limits
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def test_requests_sum_containers():
    pod = _pod(containers=[_c("a", {"cpu": "500m", "memory": "1Gi"}), _c("b", {"cpu": 1})])
    assert pod.resource_requests() == {"cpu": 1.5, "memory": 2.0**30}


def test_requests_limit_only_means_request_equals_limit():
    pod = _pod(containers=[_c("a", {"cpu": "1"}, limits={"cpu": "2", "nvidia.com/gpu": 8})])
    assert pod.resource_requests() == {"cpu": 1.0, "nvidia.com/gpu": 8.0}


def test_requests_init_containers_take_the_max():
    pod = _pod(
        containers=[_c("app", {"cpu": "1", "memory": "1Gi"})],
        initContainers=[_c("big", {"cpu": "4"}), _c("small", {"cpu": "2", "memory": "4Gi"})],
    )
    assert pod.resource_requests() == {"cpu": 4.0, "memory": 4 * 2.0**30}


def test_requests_sidecars_add_up_like_kube_scheduler():
    # A sidecar (restartPolicy Always) runs next to later init containers and the app.
    pod = _pod(
        containers=[_c("app", {"cpu": "1"})],
        initContainers=[
            _c("sidecar", {"cpu": "500m"}, restart_policy="Always"),
            _c("migrate", {"cpu": "2"}),
        ],
    )
    # app + sidecar = 1.5; migrate runs with the sidecar = 2.5 -> max is 2.5
    assert pod.resource_requests() == {"cpu": 2.5}


def test_requests_overhead_and_pod_level_resources():
    pod = _pod(
        containers=[_c("a", {"cpu": "1", "memory": "1Gi"})],
        overhead={"cpu": "100m"},
        resources={"requests": {"cpu": "3"}},
    )
    assert pod.resource_requests() == {"cpu": 3.1, "memory": 2.0**30}


def test_requests_are_cached_and_invalidated():
    pod = _pod(containers=[_c("a", {"cpu": "1"})])
    first = pod.resource_requests()
    assert pod.resource_requests() is first
    pod.spec.containers[0].resources.requests["cpu"] = "2"
    pod.spec.invalidate_requests()
    assert pod.resource_requests() == {"cpu": 2.0}


def test_state_helpers():
    pod = _pod(schedulingGates=[{"name": labels.GATE_PODGANG_PENDING_CREATION}])
    assert pod.is_gated and not pod.is_bound and not pod.is_terminal
    assert pod.scheduler_name == "default-scheduler"
    assert not pod.add_gate(labels.GATE_PODGANG_PENDING_CREATION)
    assert pod.add_gate("other.io/gate")
    assert pod.remove_gate(labels.GATE_PODGANG_PENDING_CREATION)
    assert not pod.remove_gate(labels.GATE_PODGANG_PENDING_CREATION)
    assert [g.name for g in pod.spec.scheduling_gates] == ["other.io/gate"]
    pod.spec.scheduling_gates = []
    pod.spec.node_name = "node-1"
    pod.status.phase = "Succeeded"
    assert not pod.is_gated and pod.is_bound and pod.is_terminal


def test_pod_condition_transitions():
    pod = _pod()
    t0, t1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    assert pod.set_condition("PodScheduled", False, "Unschedulable", "0/3 nodes", now=t0)
    assert not pod.set_condition("PodScheduled", False, "Unschedulable", "0/3 nodes", now=t1)
    assert pod.get_condition("PodScheduled").last_transition_time == t0
    assert pod.set_condition("Ready", True, "PodReady", now=t1)
    assert pod.is_ready
    # Dumps cleanly (no serializer warnings: the list holds PodConditions).
    with_conditions = pod.to_dict()["status"]["conditions"]
    assert [c["type"] for c in with_conditions] == ["PodScheduled", "Ready"]


def test_real_pod_status_with_probe_times_loads():
    pod = _pod()
    pod.status = type(pod.status).model_validate(
        {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIPs": [{"ip": "10.1.0.5"}],
            "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
        }
    )
    assert pod.status.host_ip == "10.0.0.1" and pod.is_ready


def test_to_dict_omits_defaults_and_empties():
    pod = Pod(metadata=ObjectMeta(name="p"), spec=PodSpec(containers=[Container(name="c")]))
    assert pod.to_dict() == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }
    pod.spec.scheduler_name = "kai-scheduler"
    assert pod.to_dict()["spec"]["schedulerName"] == "kai-scheduler"


def test_irregular_camel_case_names():
    pod = _pod(hostPID=True, setHostnameAsFQDN=True)
    out = pod.to_dict()["spec"]
    assert out["hostPID"] is True and out["setHostnameAsFQDN"] is True


def test_copy_deep_is_independent_including_opaque_fields():
    pod = _pod(
        containers=[{"name": "a", "livenessProbe": {"httpGet": {"path": "/x", "port": 80}}}],
        volumes=[{"name": "v", "emptyDir": {}}],
        nodeSelector={"zone": "a"},
    )
    pod.metadata.labels["x"] = "1"
    pod.resource_requests()
    copy = pod.copy_deep()
    assert copy == pod and copy is not pod
    copy.spec.containers[0].liveness_probe["httpGet"]["path"] = "/y"
    copy.spec.volumes[0]["emptyDir"]["medium"] = "Memory"
    copy.metadata.labels["x"] = "2"
    copy.spec.node_selector["zone"] = "b"
    assert pod.spec.containers[0].liveness_probe["httpGet"]["path"] == "/x"
    assert pod.spec.volumes[0]["emptyDir"] == {}
    assert pod.metadata.labels["x"] == "1" and pod.spec.node_selector["zone"] == "a"


def test_copy_deep_keeps_a_none_whose_default_is_something_else():
    # Dropping Nones from the copy's dump would turn `retries: None` ("never") into 3.
    from pydantic import Field

    from phalanx.api.base import KubeModel, Resource, none_is_always_default

    class Tuning(KubeModel):
        retries: int | None = 3
        tags: list[str] = Field(default_factory=list)

    class Tuned(Resource):
        API_VERSION, KIND, PLURAL = "test.phalanx.dev/v1", "Tuned", "tuneds"
        spec: Tuning = Field(default_factory=Tuning)

    assert not none_is_always_default(Tuned) and none_is_always_default(Pod)
    tuned = Tuned(metadata=ObjectMeta(name="t"), spec=Tuning(retries=None, tags=["a"]))
    copy = tuned.copy_deep()
    assert copy.spec.retries is None and copy == tuned
    copy.spec.tags.append("b")
    assert tuned.spec.tags == ["a"]
    assert Tuning(retries=None).copy_deep().retries is None


def test_node_allocatable_and_ready():
    node = Node.model_validate(
        {
            "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/rack": "r1"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
                "allocatable": {"cpu": "63500m", "memory": "500Gi", "nvidia.com/gpu": "8"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": None}],
            },
        }
    )
    assert node.allocatable_resources() == {
        "cpu": 63.5,
        "memory": 500 * 2.0**30,
        "nvidia.com/gpu": 8.0,
    }
    assert node.is_ready and node.labels["topology.kubernetes.io/rack"] == "r1"
    assert not node.spec.unschedulable
    assert "unschedulable" not in node.to_dict()["spec"]
    assert Node.model_validate({"metadata": {"name": "x"}}).is_ready is False


def test_node_allocatable_falls_back_to_capacity():
    node = Node.model_validate({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": 2}}})
    assert node.allocatable_resources() == {"cpu": 2.0}


def test_event_has_top_level_fields():
    data = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "pcs-0-worker-0.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "pcs-0-worker-0", "namespace": "default"},
        "reason": "GangIncomplete",
        "message": "3/8 members created; waiting for 5",
        "type": "Warning",
        "count": 2,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:05Z",
        "source": {"component": "phalanx-scheduler"},
        "reportingComponent": "phalanx-scheduler",
    }
    event = from_dict(data)
    assert isinstance(event, Event) and event.involved_object.name == "pcs-0-worker-0"
    assert event.to_dict() == data
    with pytest.raises(Exception, match="spec: unknown field"):
        from_dict({**data, "spec": {}})


def test_priority_class_and_lease():
    pc = from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        }
    )
    assert isinstance(pc, PriorityClass) and pc.value == 1000 and not pc.NAMESPACED
    lease = from_dict(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "kube-system"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 1},
        }
    )
    assert isinstance(lease, Lease) and lease.spec.holder_identity == "a"


def test_lenient_mode_ignores_fields_from_newer_servers():
    data = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "futureField": 1}], "futureSpec": True}}
    with pytest.raises(Exception, match="unknown field"):
        from_dict(data)
    assert from_dict(data, lenient=True).spec.containers[0].name == "a"


def _models_in(tp):
    import typing

    from pydantic import BaseModel

    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for arg in typing.get_args(tp) for m in _models_in(arg)]


def test_copy_deep_may_drop_nones_no_optional_field_defaults_to_non_none():
    # copy_deep (and the cluster's clone) leave Nones out of the dump (~30% cheaper) only for
    # models where every field that accepts None also defaults to None: keep all built-in
    # kinds on that fast path.
    import types
    import typing

    from phalanx.api import registry

    seen, bad = set(), []
    stack = list(registry.kinds())
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            args = typing.get_args(info.annotation)
            optional = typing.get_origin(info.annotation) in (typing.Union, types.UnionType) and (
                type(None) in args
            )
            if optional and (info.default is not None or info.default_factory is not None):
                bad.append(f"{model.__name__}.{name}")
            stack.extend(_models_in(info.annotation))
    assert not bad
    assert len(seen) > 60
