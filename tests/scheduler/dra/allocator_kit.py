"""Builders for the structured-allocator rows ported from kube's allocatortesting: the same
names (`claim_with_request`, `slice_with_devices`, `device_allocation_result`...) and the
same constants, so each Python row reads like its Go row."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.core import Node
from phalanx.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from phalanx.scheduler.dra.allocator import Allocator, Features
from phalanx.scheduler.dra.pools import gather_pools

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB0, SUB1 = "subReq-0", "subReq-1"
REQ0_SUB0, REQ0_SUB1 = "req-0/subReq-0", "req-0/subReq-1"
REQ1_SUB0, REQ1_SUB1 = "req-1/subReq-0", "req-1/subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = (f"device-{i}" for i in range(5))
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
REGION_KEY, PLANET_KEY, EARTH = "region", "planet", "earth"
ALL_NODES = object()
PER_DEVICE = object()
FROM_COUNTERS = "fromCounters"

BOOL_ATTR = f"{DRIVER_A}/boolAttribute"
STRING_ATTR = f"{DRIVER_A}/stringAttribute"
VERSION_ATTR = f"{DRIVER_A}/driverVersion"
INT_ATTR = f"{DRIVER_A}/numa"
MISSING_ATTR = f"{DRIVER_A}/NonExistentAttribute"


def node(name: str, region: str) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": {
        REGION_KEY: region, PLANET_KEY: EARTH}}})


def klass(name: str, driver: str, *, expression: str | None = None,
          config: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {
        "expression": expression or f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = [{"opaque": device_configuration(driver, config)}]
    return {"metadata": {"name": name}, "spec": spec}


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"driver": driver, "parameters": {attribute: attribute + "Value"}}


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def request(name: str, cls: str, count: int, *selectors: dict[str, Any],
            mode: str = "ExactCount", admin: bool | None = None,
            tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode, "count": count}
    if selectors:
        exactly["selectors"] = list(selectors)
    if admin is not None:
        exactly["adminAccess"] = admin
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def all_request(name: str, cls: str, **kw: Any) -> dict[str, Any]:
    return request(name, cls, 0, mode="All", **kw)


def sub_request(name: str, cls: str, count: int, *selectors: dict[str, Any],
                mode: str = "ExactCount",
                tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    sub: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode,
                           "count": count}
    if selectors:
        sub["selectors"] = list(selectors)
    if tolerations:
        sub["tolerations"] = tolerations
    return sub


def prioritized(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] = (),
          config: list[dict[str, Any]] = ()) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def claim_with_request(name: str, req: str, cls: str, *constraints: dict[str, Any]) -> dict:
    return claim(name, request(req, cls, 1), constraints=list(constraints))


def match(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def claim_config(requests: list[str], driver: str, attribute: str) -> dict[str, Any]:
    return {"requests": requests, "opaque": device_configuration(driver, attribute)}


def device(name: str, capacity: dict[str, str] | str | None = None,
           attributes: dict[str, dict[str, Any]] | None = None, *,
           taints: list[dict[str, Any]] | None = None,
           counters: list[dict[str, Any]] | None = None,
           node_selection: Any = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if isinstance(capacity, dict):
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        d["attributes"] = attributes
    if taints:
        d["taints"] = taints
    if counters:
        d["consumesCounters"] = counters
        if capacity == FROM_COUNTERS:
            d["capacity"] = {n: {"value": c["value"]} for cc in counters
                             for n, c in cc["counters"].items()}
    if node_selection is ALL_NODES:
        d["allNodes"] = True
    elif isinstance(node_selection, str):
        d["nodeName"] = node_selection
    elif node_selection is not None:
        d["nodeSelector"] = node_selection
    return d


def counter_consumption(counter_set: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def pool(name: str, count: int = 1, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def slice_(name: str, selection: Any, pool_: str | dict[str, Any], driver: str, *,
           devices: list[dict[str, Any]] = (), counter_sets: list[dict[str, Any]] = ()) -> dict:
    spec: dict[str, Any] = {"driver": driver,
                            "pool": pool(pool_) if isinstance(pool_, str) else pool_}
    if selection is ALL_NODES:
        spec["allNodes"] = True
    elif selection is PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif isinstance(selection, str):
        spec["nodeName"] = selection
    else:
        spec["nodeSelector"] = selection
    if devices:
        spec["devices"] = list(devices)
    if counter_sets:
        spec["sharedCounters"] = list(counter_sets)
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_devices(name: str, selection: Any, pool_: Any, driver: str,
                       *devices: dict[str, Any]) -> dict[str, Any]:
    return slice_(name, selection, pool_, driver, devices=list(devices))


def slice_with_one_device(name: str, selection: Any, pool_: Any, driver: str) -> dict:
    return slice_with_devices(name, selection, pool_, driver, device(DEVICE1))


def slice_with_multiple_devices(name: str, selection: Any, pool_: Any, driver: str,
                                count: int) -> dict[str, Any]:
    return slice_with_devices(name, selection, pool_, driver,
                              *(device(f"device-{i}") for i in range(count)))


def slice_with_counter_sets(name: str, selection: Any, pool_: Any, driver: str,
                            *sets: dict[str, Any]) -> dict[str, Any]:
    return slice_(name, selection, pool_, driver, counter_sets=list(sets))


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": key, "operator": "In", "values": list(values)}]}]}


def local_node_selector(name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [name]}]}]}


def device_allocation_result(req: str, driver: str, pool_: str, dev: str, admin: bool = False,
                             *tolerations: dict[str, Any]) -> dict[str, Any]:
    r: dict[str, Any] = {"request": req, "driver": driver, "pool": pool_, "device": dev}
    if admin:
        r["adminAccess"] = True
    if tolerations:
        r["tolerations"] = list(tolerations)
    return r


def allocation_result(selector: dict[str, Any] | None, *results: dict[str, Any],
                      config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"nodeSelector": selector, "results": list(results), "config": config}


def class_config(requests: list[str], driver: str, attribute: str,
                 source: str = "FromClass") -> dict[str, Any]:
    return {"source": source, "requests": requests,
            "opaque": device_configuration(driver, attribute)}


@dataclass
class Case:
    features: dict[str, bool] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)
    allocated: list[tuple[str, str, str]] = field(default_factory=list)
    classes: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    node: Node | None = None
    expect: list[dict[str, Any]] | None = None  # None: no allocation (nil results)
    error: str = ""  # a substring of the expected error


def _norm_selector(sel: dict[str, Any] | None) -> Any:
    if not sel:
        return None
    terms = []
    for t in sel.get("nodeSelectorTerms", []):
        terms.append(tuple(sorted(
            (kind, r["key"], r["operator"], tuple(sorted(r.get("values") or ())))
            for kind in ("matchExpressions", "matchFields") for r in t.get(kind) or ())))
    return tuple(sorted(terms))


def _norm_result(r: dict[str, Any]) -> Any:
    import json

    results = tuple(sorted(json.dumps(d, sort_keys=True) for d in r["results"]))
    return (_norm_selector(r.get("nodeSelector")), results,
            tuple(json.dumps(c, sort_keys=True) for c in r.get("config") or ()) or None)


def run_case(tc: Case) -> None:
    """One row: allocate, compare results (order of claims and devices irrelevant), check
    that nothing handed to the allocator was modified."""
    import pytest

    from phalanx.scheduler.dra.allocator import AllocationError

    features = Features(**{k: tc.features.get(k, False) for k in
                           ("admin_access", "prioritized_list", "partitionable_devices",
                            "device_taints")})
    classes = {c["metadata"]["name"]: DeviceClass.model_validate(c) for c in tc.classes}
    claims = [ResourceClaim.model_validate(c) for c in tc.claims]
    slices = [ResourceSlice.model_validate(s) for s in tc.slices]
    before = copy.deepcopy([c.to_dict() for c in claims]), [s.to_dict() for s in slices]
    target = tc.node or node(NODE1, REGION1)
    allocator = Allocator(classes.get, set(tc.allocated), features)
    if tc.error:
        with pytest.raises(AllocationError, match=None) as err:
            allocator.allocate(target, claims, gather_pools(
                slices, target, partitionable=features.partitionable_devices))
        assert tc.error in str(err.value), str(err.value)
        return
    got = allocator.allocate(target, claims, gather_pools(
        slices, target, partitionable=features.partitionable_devices))
    if not tc.expect:  # kube's ConsistOf() of nothing: nil or empty results
        assert not got, [g.to_dict() for g in got or ()]
    else:
        assert got is not None, "no allocation"
        mine = []
        for a in got:
            d = a.to_dict()
            mine.append({"nodeSelector": d.get("nodeSelector"),
                         "results": d["devices"].get("results", []),
                         "config": d["devices"].get("config")})
        assert sorted(map(_norm_result, mine)) == sorted(map(_norm_result, tc.expect)), mine
    assert ([c.to_dict() for c in claims], [s.to_dict() for s in slices]) == before
