"""kube's structured allocator tests (dynamic-resource-allocation/structured/internal/
allocatortesting, TestAllocator), ported row by row; ids are kube's row names. Rows run
with the features they declare, against our port of the "stable" allocator.

Not ported, with the reason:
- rows needing features the stable allocator does not have (kube skips them for it too):
  consumable capacity (`consumable-capacity-*`, `allow-multiple-allocations-*`), device
  binding conditions (`device-binding-conditions`, `binding-conditions-*`,
  `partitionable-devices-with-binding-conditions*`), distinct-attribute constraints
  (`with-distinct-constraints*`, `distinct-constraint-*`), list-type attributes
  (`list-attributes-*`), `node-restriction` (binding conditions), `max-number-devices` and
  `check-combinations-*` (they assert kube's allocateOne invocation counts, which kube
  itself does not check for the stable allocator).
- expressible, not ported yet (time): `tainted-admin-access-disabled`,
  `tainted-all-devices-single`, `tainted-all-devices-single-disabled`,
  `prioritized-list-allocation-mode-all*` (4 rows), `partitionable-devices-with-attribute-
  selector`, `prioritized-list-max-allocation-limit-request`, `prioritized-list-max-
  allocation-allocation-mode-all`, `allocation-mode-all-with-multi-host-resource-pool`,
  `multi-host-resource-pool-*` (5 rows), the counter-set validation rows
  (`partitionable-devices-same-counter-set-name-in-different-resource-slices`,
  `...-references-unknown-counter-set`, `...-unknown-counter-in-counter-set`,
  `...-counter-set-in-other-pool`, `...-devices-on-different-nodes-consume-same-counter-
  set`, `...-validation-error-on-non-targeting-slice`), `different-resourceslices-in-pool-
  can-target-different-nodes`, `invalid-pool-is-ok-if-devices-can-be-allocated-from-other`,
  `invalid-pool-is-error-if-no-other-device-can-be-allocated`,
  `no-allocation-from-incomplete-pools`. test_allocator_features.py holds the prioritized-
  list, partitionable-device and taint rows.
"""

from __future__ import annotations

import pytest

from .allocator_kit import *  # noqa: F403
from .allocator_kit import Case, run_case

ADMIN = {"admin_access": True}
PRIO = {"prioritized_list": True}
PART = {"partitionable_devices": True}

MEM = {"1Gi": {"memory": "1Gi"}, "2Gi": {"memory": "2Gi"}, "4Gi": {"memory": "4Gi"},
       "8Gi": {"memory": "8Gi"}}


def _ge(q: str) -> dict:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0')


def _attrs(**kv: dict) -> dict:
    return kv


def V(v: str) -> dict:  # noqa: N802
    return {"version": v}


def I(v: int) -> dict:  # noqa: N802,E743
    return {"int": v}


def S(v: str) -> dict:  # noqa: N802
    return {"string": v}


def B(v: bool) -> dict:  # noqa: N802
    return {"bool": v}


def _two_devices() -> list[dict]:
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))]


ROWS: dict[str, Case] = {
    "empty": Case(),
    "simple": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "other-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        expect=[allocation_result(local_node_selector(NODE2),
                                  device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "small-and-large": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("1Gi")),
                      request(REQ1, CLASS_A, 1, _ge("2Gi")))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, MEM["1Gi"]), device(DEVICE2, MEM["2Gi"]))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("1Gi")),
                      request(REQ1, CLASS_A, 1, _ge("2Gi")))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE2, MEM["2Gi"]), device(DEVICE1, MEM["1Gi"]))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-claims": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("1Gi"))),
                claim(CLAIM1, request(REQ1, CLASS_A, 1, _ge("2Gi")))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE2, MEM["2Gi"]), device(DEVICE1, MEM["1Gi"]))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "obsolete-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices("slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1)),
                slice_with_devices("slice-1-obsolete", NODE1, pool(POOL1, 2, 2), DRIVER_A,
                                   device(DEVICE2))],
        expect=[]),
    "duplicate-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with_devices(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A,
                                   device(DEVICE1))],
        error="invalid resource pools were encountered"),
    "no-slices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=[klass(CLASS_A, DRIVER_A)]),
    "not-enough-suitable-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ1, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "no-classes": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class class-a"),
    "unknown-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "unknown-class")],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class unknown-class"),
    "empty-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "")],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request "
              "type?)"),
    "no-claims-to-allocate": Case(
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-with-consumed-counters": Case(
        features=PART,
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(
                    DEVICE1, counters=[counter_consumption(COUNTER_SET1, {"memory": "4Gi"})])),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        counter_set(COUNTER_SET1, {"memory": "8Gi"}))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mode="All"))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))],
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
              "driver-a/pool-1 is currently being updated"),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-many-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2))]),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A, 1)),
                claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)),
                claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-no-slices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=[klass(CLASS_A, DRIVER_A)]),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices()),
    "all-devices-some-allocated-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mode="All", admin=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices(),
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, True))]),
    "all-devices-some-allocating-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True),
                      request(REQ1, CLASS_A, 1, mode="All", admin=True))],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices()),
    "count-devices-some-allocated-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2, admin=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices(),
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, True))]),
    "separate-claims-share-device-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True)),
                claim(CLAIM1, request(REQ0, CLASS_A, 1, admin=True))],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices(),
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        features=ADMIN,
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim(CLAIM1, request(REQ0, CLASS_A, 1, admin=True))],
        classes=[klass(CLASS_A, DRIVER_A)], slices=_two_devices(),
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "all-devices-slice-without-devices-prioritized-list": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"),
                                          sub_request(SUB1, CLASS_B, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1), device_allocation_result(
            REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))]),
    "all-devices-no-slices-prioritized-list": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"),
                                          sub_request(SUB1, CLASS_B, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1), device_allocation_result(
            REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))]),
    "all-devices-some-allocated-prioritized-list": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"),
                                          sub_request(SUB1, CLASS_B, 1)))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[*_two_devices(), slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1), device_allocation_result(
            REQ0_SUB1, DRIVER_B, POOL2, DEVICE1))]),
    "network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A)],
        expect=[allocation_result(node_label_selector(REGION_KEY, REGION1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A)],
        node=node(NODE2, REGION2)),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A),
                slice_with_one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
                slice_with_one_device(SLICE1, node_label_selector(PLANET_KEY, EARTH), POOL3,
                                      DRIVER_A),
                slice_with_one_device(SLICE1, local_node_selector(NODE1), POOL4, DRIVER_A)],
        expect=[allocation_result(
            {"nodeSelectorTerms": [{
                "matchExpressions": [
                    {"key": REGION_KEY, "operator": "In", "values": [REGION1]},
                    {"key": PLANET_KEY, "operator": "In", "values": [EARTH]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}],
            }]},
            device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
            device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1),
            device_allocation_result(REQ0, DRIVER_A, POOL3, DEVICE1),
            device_allocation_result(REQ0, DRIVER_A, POOL4, DEVICE1))]),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, node_label_selector(REGION_KEY, REGION1), POOL1,
                                      DRIVER_A),
                slice_with_one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "several-different-drivers": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ0, CLASS_B)],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[*_two_devices(), slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "already-allocated-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "admin-access-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: admin access is requested, but the feature is "
              "disabled"),
    "admin-access-enabled": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "with-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match(INT_ATTR), match(VERSION_ATTR), match(STRING_ATTR),
                                   match(BOOL_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *(device(d, None, {
            "driverVersion": V("1.0.0"), "numa": I(1), "stringAttribute": S("stringAttributeValue"),
            "boolAttribute": B(True)}) for d in (DEVICE1, DEVICE2)))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-non-existent-attribute": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A, match(MISSING_ATTR))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(INT_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"numa": I(1)}),
                                   device(DEVICE2, None, {"numa": I(2)}))]),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 0, mode="All"),
                      constraints=[match(INT_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"numa": I(1)}),
                                   device(DEVICE2, None, {"numa": I(2)}))],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
              "because a claim constraint would not be satisfied"),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(STRING_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None,
                                          {"stringAttribute": S("stringAttributeValue")}),
                                   device(DEVICE2, None,
                                          {"stringAttribute": S("stringAttributeValue2")}))]),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(BOOL_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"boolAttribute": B(True)}),
                                   device(DEVICE2, None, {"boolAttribute": B(False)}))]),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(VERSION_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"driverVersion": V("1.0.0")}),
                                   device(DEVICE2, None, {"driverVersion": V("2.0.0")}))]),
    "with-constraint-for-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match(VERSION_ATTR, REQ0)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"driverVersion": V("1.0.0")}),
                                   device(DEVICE2, None, {"driverVersion": V("2.0.0")}))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-for-request-retry": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      constraints=[match(VERSION_ATTR, REQ0), match(STRING_ATTR)])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, None, {"driverVersion": V("1.0.0"),
                                                          "stringAttribute": S("a")}),
                                   device(DEVICE2, None, {"driverVersion": V("2.0.0"),
                                                          "stringAttribute": S("b")}),
                                   device(DEVICE3, None, {"driverVersion": V("3.0.0"),
                                                          "stringAttribute": S("b")}))],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "with-class-device-config": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A, config="classAttribute")],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  config=[class_config([REQ0], DRIVER_A, "classAttribute")])]),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1),
                      request(REQ2, CLASS_B, 1))],
        classes=[klass(CLASS_A, DRIVER_A, config="classAttribute-A"),
                 klass(CLASS_B, DRIVER_B, config="classAttribute-B")],
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2),
                slice_with_one_device(SLICE2, NODE1, POOL1, DRIVER_B)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE0),
                                  device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1),
                                  device_allocation_result(REQ2, DRIVER_B, POOL1, DEVICE1),
                                  config=[class_config([REQ0, REQ1], DRIVER_A, "classAttribute-A"),
                                          class_config([REQ2], DRIVER_B, "classAttribute-B")])]),
    "claim-with-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      config=[{"opaque": device_configuration(DRIVER_A, "deviceAttribute")}])],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation_result(local_node_selector(NODE1),
                                  device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  config=[{"source": "FromClaim", "opaque": device_configuration(
                                      DRIVER_A, "deviceAttribute")}])]),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, {}))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)"),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mode=""))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="unsupported count mode"),
    "unknown-constraint": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A, {})],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)"),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, cel("noSuchVar")))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference"),
    "invalid-CEL-one-device-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A, expression="noSuchVar")],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference"),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, cel("noSuchVar"), mode="All"))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference"),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=[klass(CLASS_A, DRIVER_A)],
        error="exceeds the claim limit"),
    "many-devices-okay": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32))], classes=[klass(CLASS_A, DRIVER_A)]),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_multiple_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)],
        error="exceeds the claim limit"),
    "all-devices-invalid-CEL": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=[klass(CLASS_A, DRIVER_A)],
        error="exceeds the claim limit"),
}


@pytest.mark.parametrize("name", list(ROWS), ids=list(ROWS))
def test_allocator(name: str) -> None:
    run_case(ROWS[name])
