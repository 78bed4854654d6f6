"""kube's structured allocator tests (allocatortesting, TestAllocator), continued: the
prioritized-list, partitionable-device (shared counters, per-device node selection) and
device-taint rows; ids are kube's row names. See test_allocator.py for rows not ported."""

from __future__ import annotations

import pytest

from .allocator_kit import *  # noqa: F403
from .allocator_kit import Case, run_case

PRIO = {"prioritized_list": True}
PART = {"partitionable_devices": True}
TAINTS = {"device_taints": True}
ADMIN = {"admin_access": True}

TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOL_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOL_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2",
                  "effect": "NoExecute"}


def _ge(q: str) -> dict:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{q}")) >= 0')


def _mem(q: str) -> dict:
    return {"memory": q}


def _cdev(name: str, *uses: dict, selection=None, capacity=FROM_COUNTERS) -> dict:
    return device(name, capacity, None, counters=list(uses), node_selection=selection)


def _cc(counter_set_: str, **counters: str) -> dict:
    return counter_consumption(counter_set_, counters)


def _set(name: str, **counters: str) -> dict:
    return counter_set(name, counters)


def _tainted(name: str, *taints: dict) -> dict:
    return device(name, taints=list(taints))


def _one_tainted_slice(*devices: dict) -> list[dict]:
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


def _result(*devs: dict, selector: dict | None = None) -> list[dict]:
    return [allocation_result(selector or local_node_selector(NODE1), *devs)]


ROWS: dict[str, Case] = {
    "prioritized-list-first-unavailable": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1),
                                          sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))),
    "prioritized-list-non-available": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 2),
                                          sub_request(SUB1, CLASS_A, 2)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_B)]),
    "prioritized-list-device-config": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1),
                                          sub_request(SUB1, CLASS_B, 2)),
                      config=[claim_config([REQ0_SUB0], DRIVER_A, "foo"),
                              claim_config([REQ0_SUB1], DRIVER_B, "bar")])],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1),
                                   device(DEVICE2))],
        expect=[allocation_result(
            local_node_selector(NODE1),
            device_allocation_result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE1),
            device_allocation_result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE2),
            config=[class_config([REQ0_SUB1], DRIVER_B, "bar", source="FromClaim")])]),
    "prioritized-list-class-config": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 2),
                                          sub_request(SUB1, CLASS_B, 2)))],
        classes=[klass(CLASS_A, DRIVER_A, config="foo"), klass(CLASS_B, DRIVER_B, config="bar")],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1),
                                   device(DEVICE2)),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE3))],
        expect=[allocation_result(
            local_node_selector(NODE1),
            device_allocation_result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE1),
            device_allocation_result(REQ0_SUB1, DRIVER_B, POOL1, DEVICE2),
            config=[class_config([REQ0_SUB1], DRIVER_B, "bar")])]),
    "prioritized-list-subrequests-with-expressions": Case(
        features=PRIO,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("1Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, _ge("4Gi")),
                                  sub_request(SUB1, CLASS_A, 2, _ge("2Gi"))))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A,
                                   device(DEVICE1, _mem("2Gi")), device(DEVICE2, _mem("2Gi")),
                                   device(DEVICE3, _mem("1Gi")))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE2))),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        features=PRIO,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("8Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, _ge("2Gi")),
                                  sub_request(SUB1, CLASS_A, 1, _ge("1Gi"))),
                      constraints=[match(VERSION_ATTR, REQ0, REQ1)])],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(
                    DEVICE1, _mem("8Gi"), {"driverVersion": {"version": "1.0.0"}})),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A,
                                   device(DEVICE2, _mem("2Gi"),
                                          {"driverVersion": {"version": "2.0.0"}}),
                                   device(DEVICE3, _mem("1Gi"),
                                          {"driverVersion": {"version": "1.0.0"}}))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL2, DEVICE3))),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        features=PRIO,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, _ge("8Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, _ge("2Gi")),
                                  sub_request(SUB1, CLASS_A, 1, _ge("1Gi"))),
                      constraints=[match(VERSION_ATTR, REQ0, REQ1_SUB0)])],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(
                    DEVICE1, _mem("8Gi"), {"driverVersion": {"version": "1.0.0"}})),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(
                    DEVICE2, _mem("2Gi"), {"driverVersion": {"version": "2.0.0"}}))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL2, DEVICE2))),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, mode="All"),
                                          sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE2))),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        features=PRIO,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 0, mode="All"),
                                  sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                                   device(DEVICE2))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE2))),
    "prioritized-list-disabled": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
              "feature is disabled"),
    "prioritized-list-multi-request": Case(
        features=PRIO,
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 1, _ge("8Gi")),
                      prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, _ge("8Gi")),
                                  sub_request(SUB1, CLASS_A, 1, _ge("4Gi"))))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, _mem("8Gi"))),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, _mem("4Gi")))],
        expect=_result(device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ0_SUB1, DRIVER_A, POOL2, DEVICE2))),
    "prioritized-list-with-backtracking": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, _ge("8Gi")),
                                          sub_request(SUB1, CLASS_A, 1, _ge("4Gi"))),
                      request(REQ1, CLASS_A, 1, _ge("8Gi")))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, _mem("8Gi"))),
                slice_with_devices(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, _mem("4Gi")))],
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL2, DEVICE2),
                       device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE1))),
    "prioritized-list-too-many-in-first-subrequest": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 500),
                                          sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))),
    "partitionable-devices-single-device": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, _cdev(
                    DEVICE1, _cc(COUNTER_SET1, memory="4Gi"), capacity=None)),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="8Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))),
    "partitionable-devices-prioritized-list": Case(
        features={**PRIO, **PART},
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, _ge("6Gi")),
                                  sub_request(SUB1, CLASS_A, 1, _ge("4Gi"))))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="6Gi")),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="8Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE3))),
    "partitionable-devices-multiple-devices": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="6Gi")),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="8Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3))),
    "partitionable-devices-multiple-capacity-pools": Case(
        features={**PRIO, **PART},
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, _ge("6Gi")),
                                  sub_request(SUB1, CLASS_A, 1, _ge("4Gi"))))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(
                    SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                    _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi"), _cc(COUNTER_SET2, cpus="4")),
                    _cdev(DEVICE2, _cc(COUNTER_SET1, memory="6Gi"), _cc(COUNTER_SET2, cpus="6")),
                    _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi"), _cc(COUNTER_SET2, cpus="4"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"),
                                        _set(COUNTER_SET2, cpus="8"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       device_allocation_result(REQ1_SUB1, DRIVER_A, POOL1, DEVICE3))),
    "partitionable-devices-multiple-counters": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(
                    SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                    _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi", cpus="6"),
                          _cc(COUNTER_SET2, cpus="4", memory="2Gi")),
                    _cdev(DEVICE2, _cc(COUNTER_SET1, memory="6Gi", cpus="4"),
                          _cc(COUNTER_SET2, cpus="6", memory="6Gi")),
                    _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi", cpus="4"),
                          _cc(COUNTER_SET2, cpus="4", memory="4Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, cpus="8", memory="18Gi"),
                                        _set(COUNTER_SET2, cpus="12", memory="18Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2),
                       device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3))),
    "partitionable-devices-multiple-pools": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, cpus="6", memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, cpus="4", memory="6Gi")),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, cpus="4", memory="4Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, cpus="8", memory="18Gi")),
                slice_with_devices(SLICE3, NODE1, pool(POOL2, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, cpus="6", memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, cpus="1", memory="7Gi")),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, cpus="1", memory="7Gi"))),
                slice_with_counter_sets(SLICE4, NODE1, pool(POOL2, 2), DRIVER_A,
                                        _set(COUNTER_SET1, cpus="8", memory="18Gi"))],
        allocated=[(DRIVER_A, POOL1, DEVICE2), (DRIVER_A, POOL1, DEVICE3),
                   (DRIVER_A, POOL2, DEVICE1)],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2),
                       device_allocation_result(REQ1, DRIVER_A, POOL2, DEVICE3))),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="5Gi"), capacity=None),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="4Gi"), capacity=None),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi"), capacity=None)),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="8Gi", unused="1Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2),
                       device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE3))),
    "partitionable-devices-no-capacity-available": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="16Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))],
        allocated=[(DRIVER_A, POOL1, DEVICE2)]),
    "partitionable-devices-overallocated-capacity-pool": Case(
        features=PART,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi")),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="20Gi"))),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))],
        allocated=[(DRIVER_A, POOL1, DEVICE2)]),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, _cdev(
                    DEVICE1, _cc(COUNTER_SET1, memory="4Gi"), capacity=None)),
                slice_with_counter_sets(SLICE2, NODE1, POOL1, DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))]),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi"), capacity=None),
                                   device(DEVICE2)),
                slice_with_counter_sets(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2))),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, PER_DEVICE, POOL1, DRIVER_A,
                                   device(DEVICE2, node_selection=NODE1))]),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        features={**PART, **PRIO},
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, _ge("6Gi")),
                                          sub_request(SUB1, CLASS_A, 1, _ge("4Gi"))))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi"),
                                         selection=NODE1),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="6Gi"),
                                         selection=NODE2)),
                slice_with_counter_sets(SLICE2, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))],
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        features={**PART, **PRIO},
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A, _cdev(
                    DEVICE1, _cc(COUNTER_SET1, memory="4Gi"),
                    selection=node_label_selector(REGION_KEY, REGION1))),
                slice_with_counter_sets(SLICE2, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi"))],
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                       selector=node_label_selector(REGION_KEY, REGION1))),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        features={**PART, **PRIO},
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=[slice_with_devices(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                                   _cdev(DEVICE1, _cc(COUNTER_SET1, memory="4Gi"),
                                         selection=node_label_selector(REGION_KEY, REGION1)),
                                   _cdev(DEVICE2, _cc(COUNTER_SET1, memory="4Gi"),
                                         selection=NODE1),
                                   _cdev(DEVICE3, _cc(COUNTER_SET1, memory="4Gi"),
                                         selection=ALL_NODES)),
                slice_with_counter_sets(SLICE2, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                                        _set(COUNTER_SET1, memory="18Gi")),
                slice_with_devices(SLICE3, NODE1, pool(POOL2, 2), DRIVER_B,
                                   *(_cdev(d, _cc(COUNTER_SET2, memory="4Gi"))
                                     for d in (DEVICE1, DEVICE2, DEVICE3))),
                slice_with_counter_sets(SLICE4, NODE1, pool(POOL2, 2), DRIVER_B,
                                        _set(COUNTER_SET2, memory="12Gi"))],
        expect=_result(*(device_allocation_result(REQ0, DRIVER_A, POOL1, d)
                         for d in (DEVICE1, DEVICE2, DEVICE3)),
                       *(device_allocation_result(REQ1, DRIVER_B, POOL2, d)
                         for d in (DEVICE1, DEVICE2, DEVICE3)))),
    "tainted-two-devices": Case(
        features=TAINTS, claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE),
                                  _tainted(DEVICE2, TAINT_NO_EXECUTE))),
    "tainted-one-device-two-taints": Case(
        features=TAINTS, claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE))),
    "tainted-two-devices-tolerated": Case(
        features=TAINTS,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, tolerations=[TOL_NO_EXECUTE]))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE),
                                  _tainted(DEVICE2, TAINT_NO_EXECUTE)),
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False,
                                                TOL_NO_EXECUTE))),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        features={**TAINTS, **PRIO},
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1),
                                          sub_request(SUB1, CLASS_A, 1,
                                                      tolerations=[TOL_NO_EXECUTE])))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE),
                                  _tainted(DEVICE2, TAINT_NO_EXECUTE)),
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE2, False,
                                                TOL_NO_EXECUTE))),
    "tainted-no-effect": Case(
        features=TAINTS, claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NONE)),
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))),
    "tainted-one-device-two-taints-both-tolerated": Case(
        features=TAINTS,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1,
                                      tolerations=[TOL_NO_SCHEDULE, TOL_NO_EXECUTE]))],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)),
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1, False,
                                                TOL_NO_SCHEDULE, TOL_NO_EXECUTE))),
    "tainted-disabled": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)),
        expect=_result(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))),
    "tainted-prioritized-list": Case(
        features={**TAINTS, **PRIO},
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1),
                                          sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE))),
    "tainted-prioritized-list-disabled": Case(
        features=PRIO,
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1),
                                          sub_request(SUB1, CLASS_A, 1)))],
        classes=[klass(CLASS_A, DRIVER_A), klass(CLASS_B, DRIVER_B)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE)),
        expect=_result(device_allocation_result(REQ0_SUB1, DRIVER_A, POOL1, DEVICE1))),
    "tainted-admin-access": Case(
        features={**TAINTS, **ADMIN},
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[klass(CLASS_A, DRIVER_A)],
        slices=_one_tainted_slice(_tainted(DEVICE1, TAINT_NO_SCHEDULE))),
}


@pytest.mark.parametrize("name", list(ROWS), ids=list(ROWS))
def test_allocator(name: str) -> None:
    run_case(ROWS[name])
