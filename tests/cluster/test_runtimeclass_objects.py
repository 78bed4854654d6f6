"""RuntimeClass served by the embedded cluster: the kind's validation (pkg/apis/node/validation)
and what a pod naming a class looks like once created (nodeSelector, tolerations and overhead
merged in, as kube-apiserver's admission does), so no scheduler needs to know about classes."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import registry
from phalanx.api.core import Pod
from phalanx.api.runtimeclass import RuntimeClass
from phalanx.cluster.client import Forbidden, Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def rc_dict(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "gvisor"}, "handler": "runsc", **fields}


def pod_dict(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def created(*objects: dict[str, Any]) -> Any:
    """Create each object in order on a fresh cluster; the last one's stored copy."""

    async def main() -> Any:
        c = MemoryCluster()
        out = None
        for data in objects:
            out = await c.create(registry.from_dict(data))
        return out

    return run_virtual(main)


def test_kind_is_registered_cluster_scoped() -> None:
    assert registry.resolve("runtimeclasses") is RuntimeClass
    assert registry.get("node.k8s.io/v1", "RuntimeClass") is RuntimeClass
    assert not RuntimeClass.NAMESPACED


@pytest.mark.parametrize(("fields", "field", "why"), [
    ({"handler": ""}, "handler", "Required value"),
    ({"handler": "Run_SC"}, "handler", "RFC 1123 label"),
    ({"overhead": {"podFixed": {"cpu": "-1"}}}, "overhead", "must be greater than or equal to 0"),
    ({"scheduling": {"nodeSelector": {"bad key!": "x"}}}, "scheduling.nodeSelector",
     "Invalid value"),
    ({"scheduling": {"tolerations": [{"operator": "Equal", "value": "x"}]}},
     "scheduling.tolerations[0].operator", "operator must be Exists when `key` is empty"),
    ({"scheduling": {"tolerations": [{"key": "k", "operator": "Exists"},
                                     {"key": "k", "operator": "Exists"}]}},
     "scheduling.tolerations[1]", "Duplicate value"),
])
def test_invalid_runtime_classes_are_refused_naming_the_field(fields: dict[str, Any], field: str,
                                                              why: str) -> None:
    with pytest.raises(Invalid) as err:
        created(rc_dict(**fields))
    assert err.value.field.startswith(field), err.value.message
    assert why in err.value.message


def test_handler_is_immutable() -> None:
    async def main() -> None:
        c = MemoryCluster()
        rc = await c.create(registry.from_dict(rc_dict()))
        rc.handler = "runc"
        with pytest.raises(Invalid) as err:
            await c.update(rc)
        assert err.value.field == "handler"
        rc.handler = "runsc"
        rc.scheduling = None  # everything else may change
        await c.update(rc)

    run_virtual(main)


CLASS = rc_dict(overhead={"podFixed": {"cpu": "250m", "memory": "64Mi"}},
                scheduling={"nodeSelector": {"sandbox": "gvisor"},
                            "tolerations": [{"key": "sandbox", "operator": "Exists",
                                             "effect": "NoSchedule"}]})


def test_a_pod_naming_a_class_gets_its_selector_tolerations_and_overhead() -> None:
    p = created(CLASS, pod_dict(runtimeClassName="gvisor", nodeSelector={"zone": "a"},
                                tolerations=[{"key": "sandbox", "operator": "Equal",
                                              "value": "x", "effect": "NoSchedule"},
                                             {"key": "other", "operator": "Exists"}]))
    assert p.spec.node_selector == {"zone": "a", "sandbox": "gvisor"}
    # the pod's narrower sandbox toleration is covered by the class's Exists one
    assert [t.to_dict() for t in p.spec.tolerations] == [
        {"key": "other", "operator": "Exists"},
        {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]
    assert p.spec.overhead == {"cpu": "250m", "memory": "64Mi"}
    assert p.spec.total_requests["cpu"] == pytest.approx(0.25)  # the scheduler counts it


def test_refusals_are_forbidden_as_on_a_real_server() -> None:
    cases = [
        ((pod_dict(runtimeClassName="missing"),),
         'pods "p" is forbidden: pod rejected: RuntimeClass "missing" not found'),
        ((CLASS, pod_dict(runtimeClassName="gvisor", nodeSelector={"sandbox": "kata"})),
         ('pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = '
          "gvisor; pod.spec.nodeSelector[sandbox] = kata")),
        ((CLASS, pod_dict(runtimeClassName="gvisor", overhead={"cpu": "1"})),
         "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
        ((pod_dict(overhead={"cpu": "1"}),),
         "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"),
        ((rc_dict(), pod_dict(runtimeClassName="gvisor", overhead={"cpu": "1"})),
         "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"),
    ]
    for objects, message in cases:
        with pytest.raises(Forbidden) as err:
            created(*objects)
        assert message in str(err.value)


def test_pod_validation_comes_before_the_overhead_check() -> None:
    """kube-apiserver validates the object before its validating admission runs: a pod both
    malformed and with a stray overhead is Invalid (422), not Forbidden."""
    with pytest.raises(Invalid) as err:
        created(pod_dict(overhead={"cpu": "1"}, nodeName="bad name"))
    assert err.value.field == "spec.nodeName"


def test_the_same_overhead_as_the_class_is_accepted_and_updates_are_not_looked_at() -> None:
    async def main() -> Pod:
        c = MemoryCluster()
        await c.create(registry.from_dict(CLASS))
        p = await c.create(registry.from_dict(pod_dict(
            runtimeClassName="gvisor", overhead={"cpu": "0.25", "memory": "64Mi"})))
        await c.delete(RuntimeClass, "gvisor")
        p.metadata.labels["touched"] = "yes"  # the class is gone: updates do not care
        return await c.update(p)

    p = run_virtual(main)
    assert p.metadata.labels["touched"] == "yes"
    assert p.spec.overhead == {"cpu": "250m", "memory": "64Mi"}
