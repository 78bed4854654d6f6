"""MemoryCluster rejects the pods kube-apiserver rejects for their resources (issue 15
item 4: examples asked for nvidia.com/gpu without a limit and were invalid on a real server)."""

from __future__ import annotations

import pytest

from phalanx.api.pod import Pod
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.podresources import resource_errors


def _pod(resources: dict, *, init: dict | None = None) -> Pod:
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": resources}]}
    if init is not None:
        spec["initContainers"] = [{"name": "i", "image": "x", "resources": init}]
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def _errors(resources: dict, **kw: dict) -> list[tuple[str, str]]:
    return resource_errors(_pod(resources, **kw).spec)


R = "spec.containers[0].resources"


@pytest.mark.parametrize("resources", [
    {"requests": {"cpu": "1", "memory": "1Gi"}},
    {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},              # cpu may overcommit
    {"limits": {"nvidia.com/gpu": "8"}},                              # request defaults to it
    {"requests": {"nvidia.com/gpu": 8}, "limits": {"nvidia.com/gpu": "8"}},
    {"requests": {"memory": "1Gi", "hugepages-2Mi": "4Mi"},
     "limits": {"hugepages-2Mi": "4Mi"}},
    {"requests": {"example.kubernetes.io/thing": "500m"}},            # native: may overcommit
    {},
])
def test_valid_resources(resources: dict) -> None:
    assert _errors(resources) == []


def test_extended_resource_request_needs_a_limit() -> None:
    [(field, why)] = _errors({"requests": {"cpu": "16", "nvidia.com/gpu": "8"}})
    assert field == f"{R}.limits"
    assert why.startswith("Required value: Limit must be set for non overcommitable resources")
    assert "nvidia.com/gpu" in why


def test_extended_resource_request_must_equal_its_limit() -> None:
    [(field, why)] = _errors({"requests": {"nvidia.com/gpu": "4"},
                              "limits": {"nvidia.com/gpu": "8"}})
    assert (field, why) == (f"{R}.requests",
                            "Invalid value: 4: must be equal to nvidia.com/gpu limit of 8")


def test_request_above_limit() -> None:
    [(field, why)] = _errors({"requests": {"cpu": "4"}, "limits": {"cpu": "2"}})
    assert (field, why) == (f"{R}.requests",
                            "Invalid value: 4: must be less than or equal to cpu limit of 2")


def test_extended_resources_are_integers_and_quantities_not_negative() -> None:
    errs = dict(_errors({"limits": {"nvidia.com/gpu": "1.5", "memory": "-1Gi"}}))
    assert errs[f"{R}.limits[nvidia.com/gpu]"].endswith("must be an integer")
    assert errs[f"{R}.limits[memory]"].endswith("must be greater than or equal to 0")


def test_hugepages() -> None:
    errs = _errors({"requests": {"hugepages-2Mi": "3Mi"}, "limits": {"hugepages-2Mi": "3Mi"}})
    fields = [f for f, _ in errs]
    assert f"{R}.limits[hugepages-2Mi]" in fields
    assert (R, "Forbidden: HugePages require cpu or memory") in errs
    [(field, why)] = _errors({"requests": {"memory": "1Gi", "hugepages-1Gi": "1Gi"}})
    assert field == f"{R}.limits" and "hugepages-1Gi" in why  # hugepages never overcommit


def test_resource_names() -> None:
    errs = dict(_errors({"requests": {"gpu": "1"}}))
    assert "must be a standard resource for containers" in errs[f"{R}.requests[gpu]"]


def test_init_containers_are_checked() -> None:
    [(field, _)] = _errors({}, init={"requests": {"nvidia.com/gpu": "1"}})
    assert field == "spec.initContainers[0].resources.limits"


def test_memory_cluster_rejects_an_invalid_pod_naming_the_field() -> None:
    async def main() -> Invalid:
        cluster = MemoryCluster()
        with pytest.raises(Invalid) as info:
            await cluster.create(_pod({"requests": {"nvidia.com/gpu": "8"}}))
        await cluster.create(_pod({"requests": {"nvidia.com/gpu": "8"},
                                   "limits": {"nvidia.com/gpu": "8"}}))
        return info.value

    err = run_virtual(main)
    assert err.field == f"{R}.limits"
    assert err.message.startswith(f'Pod "p" is invalid: {R}.limits: Required value: Limit must '
                                  "be set for non overcommitable resources")
