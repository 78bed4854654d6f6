"""resource.k8s.io/v1 on the embedded cluster: the API server's defaults and refusals for
what the scheduler reads (phalanx/cluster/dra.py), each naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimTemplate,
    ResourceSlice,
)
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster


def _claim(requests: list[dict[str, Any]], **devices: Any) -> ResourceClaim:
    return ResourceClaim.model_validate({"metadata": {"name": "c", "namespace": "default"},
                                        "spec": {"devices": {"requests": requests, **devices}}})


def _req(**exactly: Any) -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", **exactly}}


async def _create(obj: Any) -> Any:
    return await MemoryCluster().create(obj)


def test_requests_default_to_one_device_exactly() -> None:
    made = run_virtual(_create(_claim([_req(tolerations=[{"key": "k"}])])))
    e = made.spec.devices.requests[0].exactly
    assert (e.allocation_mode, e.count, e.tolerations[0].operator) == ("ExactCount", 1, "Equal")


@pytest.mark.parametrize(("claim", "field", "why"), [
    (_claim([_req(count=0, allocationMode="ExactCount")]),
     "spec.devices.requests[0].exactly.count", "must be greater than zero"),
    (_claim([_req(count=2, allocationMode="All")]),
     "spec.devices.requests[0].exactly.count", "must not be specified"),
    (_claim([_req(allocationMode="Some")]),
     "spec.devices.requests[0].exactly.allocationMode", "Unsupported value"),
    (_claim([{"name": "gpu"}]), "spec.devices.requests[0]", "exactly one of"),
    (_claim([_req(), _req()]), "spec.devices.requests[1].name", "Duplicate value"),
    (_claim([_req(selectors=[{"cel": {"expression": "device.driver =="}}])]),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression", "compilation failed"),
    (_claim([_req(selectors=[{"cel": {"expression": "1"}}])]),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression", "must evaluate to bool"),
    (_claim([_req()], constraints=[{"requests": ["cpu"], "matchAttribute": "a.b/c"}]),
     "spec.devices.constraints[0].requests[0]", "must be the name of a request"),
    (_claim([_req()], constraints=[{"matchAttribute": "clique"}]),
     "spec.devices.constraints[0].matchAttribute", "fully qualified"),
    (_claim([{"name": "gpu", "firstAvailable": [
        {"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]}]),
     "spec.devices.requests[0].firstAvailable", "at most 8"),
], ids=["count-zero", "count-with-all", "bad-mode", "no-request-type", "duplicate-request",
        "cel-syntax", "cel-not-bool", "constraint-unknown-request", "constraint-unqualified",
        "too-many-alternatives"])
def test_invalid_claims_are_refused_naming_the_field(claim: ResourceClaim, field: str,
                                                     why: str) -> None:
    with pytest.raises(Invalid) as err:
        run_virtual(_create(claim))
    assert err.value.field == field and why in str(err.value)


def test_claim_spec_is_immutable_and_status_rules_hold() -> None:
    async def main() -> list[str]:
        c = MemoryCluster()
        made = await c.create(_claim([_req()]))
        out = []
        spec_change = made.copy_deep()
        spec_change.spec.devices.requests[0].exactly.count = 2
        for attempt in ("spec", "reserved-without-allocation", "allocation", "immutable"):
            work = made.copy_deep()
            if attempt == "spec":
                work = spec_change
            elif attempt == "reserved-without-allocation":
                work.status.reserved_for = [ResourceClaimConsumerReference(
                    resource="pods", name="p", uid="u")]
            else:
                work.status.allocation = AllocationResult(devices=DeviceAllocationResult(
                    results=[DeviceRequestAllocationResult(
                        request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0")]))
            try:
                if attempt == "spec":
                    await c.update(work)
                else:
                    made = await c.update_status(work)
                out.append("ok")
            except Invalid as e:
                out.append(e.field or "")
            if attempt == "allocation":
                work = made.copy_deep()
                work.status.allocation.devices.results[0].device = "gpu-1"
                made = work
        return out

    assert run_virtual(main()) == ["spec", "status.reservedFor", "ok", "ok"]


def test_an_allocation_once_written_cannot_change() -> None:
    async def main() -> str:
        c = MemoryCluster()
        made = await c.create(_claim([_req()]))
        made.status.allocation = AllocationResult(devices=DeviceAllocationResult(results=[
            DeviceRequestAllocationResult(request="gpu", driver="gpu.example.com", pool="n1",
                                          device="gpu-0")]))
        made = await c.update_status(made)
        made.status.allocation.devices.results[0].device = "gpu-1"
        try:
            await c.update_status(made)
        except Invalid as e:
            return e.field or ""
        return "accepted"

    assert run_virtual(main()) == "status.allocation"


@pytest.mark.parametrize(("obj", "field"), [
    (ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": {
        "driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}}}), "spec"),
    (ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": {
        "driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p",
                                                                "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}, {"name": "gpu-0"}]}}), "spec.devices[1].name"),
    (ResourceSlice.model_validate({"metadata": {"name": "s"}, "spec": {
        "driver": "Bad_Driver", "allNodes": True, "pool": {"name": "p",
                                                            "resourceSliceCount": 1}}}),
     "spec.driver"),
    (DeviceClass.model_validate({"metadata": {"name": "c"}, "spec": {"selectors": [
        {"cel": {"expression": "device.nope("}}]}}), "spec.selectors[0].cel.expression"),
    (ResourceClaimTemplate.model_validate({"metadata": {"name": "t", "namespace": "default"},
                                           "spec": {"spec": {"devices": {"requests": [
                                               {"name": "Bad"}]}}}}),
     "spec.spec.devices.requests[0].name"),
], ids=["slice-no-node-selection", "slice-duplicate-device", "slice-bad-driver",
        "class-bad-cel", "template-bad-request"])
def test_invalid_slices_classes_templates_are_refused(obj: Any, field: str) -> None:
    with pytest.raises(Invalid) as err:
        run_virtual(_create(obj))
    assert err.value.field == field
