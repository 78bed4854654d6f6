"""KAI's resource division tests (pkg/scheduler/plugins/proportion/resource_division/
resource_division_test.go), one Python test per Ginkgo `It` / `Entry`, ids as KAI names
them (context / name).

Every row is ported. KAI's CPU and memory contexts are the same rows over two resources;
they run here as one table over both (ids carry the resource). Queue ids in KAI double as
names (UIDs "1", "2"...); creation order follows the order KAI's fixtures call v1.Now().
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phalanx.scheduler.queues.division import (
    divide_over_quota,
    queues_by_priority,
    set_resource_share,
    set_resources_share,
)
from phalanx.scheduler.queues.share import CPU, GPU, MEMORY, UNLIMITED, QueueShare, ResourceShare


def queue(uid: str, r: int = GPU, *, deserved: float = 0, fair: float = 0, weight: float = 0,
          max_allowed: float = UNLIMITED, allocated: float = 0, request: float = 0,
          priority: int = 0, created: float = 0.0) -> QueueShare:
    q = QueueShare(uid, created=created, priority=priority)
    q.shares[r] = ResourceShare(deserved=deserved, fair_share=fair, max_allowed=max_allowed,
                                over_quota_weight=weight, allocated=allocated, request=request)
    return q


# --- setResourceShare - GPU / single queue within quota (sanity) ----------------------------

def _single_within() -> dict[str, QueueShare]:
    return {"1": queue("1", deserved=3, weight=0, request=2)}


Tweak = Callable[[dict[str, QueueShare]], None]


def _set(attr: str, value: float, uid: str = "1", r: int = GPU) -> Tweak:
    return lambda qs: setattr(qs[uid].shares[r], attr, value)


@pytest.mark.parametrize("total,tweak,remaining,share", [
    pytest.param(2, None, 0, 2, id="gives requested GPUs - no remaining"),
    pytest.param(3, None, 1, 2, id="gives requested GPUs with remaining"),
    pytest.param(3, _set("max_allowed", 2), 1, 2, id="doesn't give more GPUs than allowed"),
    pytest.param(1, None, 0, 2, id="gives up to deserved when over subscribed"),
    pytest.param(7, _set("request", 5), 4, 3, id="gives up to full quota"),
    pytest.param(2, _set("deserved", 1.5), 0.5, 1.5, id="gives with fraction, if stated in deserved"),
    pytest.param(2, _set("request", 1.5), 0.5, 1.5, id="gives with fraction, if stated in request"),
    pytest.param(2, _set("deserved", 0), 2, 0, id="doesn't give if deserved is zero"),
])
def test_single_queue_within_quota_sanity(total: float, tweak: Tweak | None, remaining: float,
                                          share: float) -> None:
    qs = _single_within()
    if tweak:
        tweak(qs)
    assert set_resource_share(total, 0, GPU, qs) == remaining
    assert qs["1"].shares[GPU].fair_share == share


# --- setResourceShare - GPU / single queue over quota (sanity) ------------------------------

def _single_over() -> dict[str, QueueShare]:
    return {"1": queue("1", deserved=3, fair=3, weight=1, request=5)}


def _zero_deserved(qs: dict[str, QueueShare]) -> None:
    qs["1"].shares[GPU].deserved = 0
    qs["1"].shares[GPU].fair_share = 0


@pytest.mark.parametrize("total,tweak,remaining,share", [
    pytest.param(2, None, 0, 5, id="gives requested GPUs no remaining"),
    pytest.param(3, None, 1, 5, id="gives requested GPUs with remaining"),
    pytest.param(2, _set("max_allowed", 4), 1, 4, id="doesn't give more GPUs than allowed"),
    pytest.param(2, _set("over_quota_weight", 0), 2, 3,
                 id="doesn't give when over quota weight is zero"),
    pytest.param(2, _set("request", 4.5), 0.5, 4.5, id="gives with fraction if requested"),
    pytest.param(0.5, None, 0, 3.5, id="gives remainder fraction"),
    pytest.param(6, _zero_deserved, 1, 5, id="gives when deserved is zero"),
    pytest.param(0, None, 0, 3, id="doesn't break when there are zero resources to divide"),
    pytest.param(10, _set("over_quota_weight", 0), 10, 3,
                 id="doesn't give when over quota weight is zero (10 to divide)"),
])
def test_single_queue_over_quota_sanity(total: float, tweak: Tweak | None, remaining: float,
                                        share: float) -> None:
    qs = _single_over()
    if tweak:
        tweak(qs)
    assert divide_over_quota(total, 0, qs, GPU) == remaining
    assert qs["1"].shares[GPU].fair_share == share


def test_two_queues_over_quota_sanity_doesnt_give_when_over_quota_weight_is_zero() -> None:
    qs = {"1": queue("1", deserved=3, fair=3, weight=0, request=5),
          "2": queue("2", deserved=3, fair=3, weight=1, request=3)}
    assert divide_over_quota(10, 0, qs, GPU) == 10
    assert qs["1"].shares[GPU].fair_share == 3


# --- setResourceShare - GPU / two queues (DescribeTable) ------------------------------------

TWO_QUEUES = [
    # (name, total, request, maxAllowed, weights, priorities, remaining, expected shares)
    ("allocates many available gpus", 15, {}, {}, {}, {}, 3, {"1": 6, "2": 6}),
    ("allocates exact requested amount gpus", 12, {}, {}, {}, {}, 0, {"1": 6, "2": 6}),
    ("allocates GPUs proportionally", 8, {}, {}, {"1": 1, "2": 3}, {}, 0, {"1": 3, "2": 5}),
    ("doesn't allocate more than allowed", 12, {}, {"1": 5}, {}, {}, 1, {"1": 5, "2": 6}),
    ("distributes remainder between queues based on largest remaining", 11,
     {"1": 10, "2": 10}, {}, {"1": 1, "2": 4}, {}, 0, {"1": 3, "2": 8}),
    ("distributes remainder between queues based on creation time", 11, {}, {}, {}, {}, 0,
     {"1": 6, "2": 5}),
    ("priority doesn't affect deserved", 4, {}, {}, {}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 2}),
    ("priority does affect over-quota", 6, {}, {}, {}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 4}),
    ("priority does affect over-quota, even when overQuotaWeight is set", 6, {}, {},
     {"1": 100, "2": 1}, {"1": 1, "2": 2}, 0, {"1": 2, "2": 4}),
]


@pytest.mark.parametrize("row", TWO_QUEUES, ids=[r[0] for r in TWO_QUEUES])
def test_two_queues(row: tuple) -> None:  # type: ignore[type-arg]
    _, total, request, max_allowed, weights, priorities, remaining, expected = row
    qs = {uid: queue(uid, deserved=2, weight=2, request=6, created=float(i))
          for i, uid in enumerate(("1", "2"))}
    for uid, v in max_allowed.items():
        qs[uid].shares[GPU].max_allowed = v
    for uid, v in weights.items():
        qs[uid].shares[GPU].over_quota_weight = v
    for uid, v in request.items():
        qs[uid].shares[GPU].request = v
    for uid, v in priorities.items():
        qs[uid].priority = v
    assert set_resource_share(total, 0, GPU, qs) == remaining
    assert {uid: q.shares[GPU].fair_share for uid, q in qs.items()} == expected


def test_divides_the_remainder_even_when_using_priorities() -> None:
    qs = {"1": queue("1", deserved=2, weight=2, request=5, priority=2, created=0),
          "2": queue("2", deserved=2, weight=2, request=5, priority=2, created=1),
          "3": queue("3", deserved=1, weight=2, request=0, priority=1, created=2)}
    assert set_resource_share(5, 0, GPU, qs) == 0.0
    assert {uid: q.shares[GPU].fair_share for uid, q in qs.items()} == {"1": 3, "2": 2, "3": 0}


# --- setResourceShare - CPU and memory (the same rows over each resource) ------------------

def _one(r: int) -> dict[str, QueueShare]:
    return {"1": queue("1", r, deserved=3000, weight=3000, request=2000)}


@pytest.mark.parametrize("r", [CPU, MEMORY], ids=["CPU", "memory"])
@pytest.mark.parametrize("total,remaining", [
    pytest.param(3000, 1000, id="one queue: gives requested to queue"),
    pytest.param(1000, 0, id="one queue: gives deserved in over subscription"),
])
def test_one_queue_cpu_memory(r: int, total: float, remaining: float) -> None:
    qs = _one(r)
    assert set_resource_share(total, 0, r, qs) == remaining
    assert qs["1"].shares[r].fair_share == 2000


@pytest.mark.parametrize("r", [CPU, MEMORY], ids=["CPU", "memory"])
def test_two_queues_queue_2_has_no_deserved_reclaims_all_resources_of_queue_2(r: int) -> None:
    qs = {"1": queue("1", r, deserved=5000, weight=5000, request=10000),
          "2": queue("2", r, deserved=0, weight=0, allocated=5000, request=5000)}
    assert set_resource_share(10000, 0, r, qs) == 0
    assert qs["2"].shares[r].fair_share == 0
    assert qs["1"].shares[r].fair_share == 10000


def _three(r: int, allocated: bool) -> dict[str, QueueShare]:
    qs = {uid: queue(uid, r, deserved=5000, weight=5000, request=5000) for uid in "123"}
    if allocated:  # "all resources allocated between 2 queues"
        qs["1"].shares[r].allocated = 5000
        qs["2"].shares[r].allocated = 5000
    return qs


def _requests(a: float, b: float, c: float, max1: float | None = None) -> Callable[..., None]:
    def tweak(qs: dict[str, QueueShare], r: int) -> None:
        for uid, v in zip("123", (a, b, c), strict=True):
            qs[uid].shares[r].request = v
        if max1 is not None:
            qs["1"].shares[r].max_allowed = max1
    return tweak


def _q2_no_deserved(extra: Callable[..., None] | None = None, *, cpu_only: bool = False
                    ) -> Callable[..., None]:
    """KAI's "q2 has no deserved <resource> but is allowed OQ" (its GPU edits do not touch a
    CPU or memory division). `cpu_only`: in KAI's memory context the row sits beside that
    When, not in it, so only the CPU row has q2 changed."""
    def tweak(qs: dict[str, QueueShare], r: int) -> None:
        if not cpu_only or r == CPU:
            qs["2"].shares[r].deserved = 0
            qs["2"].shares[r].max_allowed = UNLIMITED
        if extra is not None:
            extra(qs, r)
    return tweak


def _then(*tweaks: Callable[..., None]) -> Callable[..., None]:
    def tweak(qs: dict[str, QueueShare], r: int) -> None:
        for t in tweaks:
            t(qs, r)
    return tweak


def _q2_request(v: float) -> Callable[..., None]:
    return lambda qs, r: setattr(qs["2"].shares[r], "request", v)


def _q13_request_10000(qs: dict[str, QueueShare], r: int) -> None:
    qs["1"].shares[r].request = 10000
    qs["3"].shares[r].request = 10000


_EQ = "all queues deserve the same fairShare"
THREE_QUEUES = [
    # (context, id, allocated?, tweak, total, expected {uid: share} (only those KAI checks))
    ("no pre-allocated", f"{_EQ}: all queues request more than they deserve: all queues get "
     "their deserved fairShare - over subscription", False, None, 10000,
     {"1": 5000, "2": 5000, "3": 5000}),
    ("no pre-allocated", f"{_EQ}: all queues request more than they deserve: all queues get "
     "their deserved fairShare - over quota", False, _requests(6000, 6000, 6000), 18000,
     {"1": 6000, "2": 6000, "3": 6000}),
    ("no pre-allocated", f"{_EQ}: one queue request more than it deserves: reclaims unneeded "
     "resources from an allocated queue to fulfill the unallocated queue", False,
     _requests(7000, 2000, 2000), 10000, {"1": 6000, "2": 2000, "3": 2000}),
    ("no pre-allocated", f"{_EQ}: one queue request more than it deserves: reclaims from both "
     "allocated queues to fulfill the last unallocated queue", False,
     _then(_requests(7000, 2000, 2000), _q2_request(5000)), 10000,
     {"1": 5000, "2": 5000, "3": 2000}),
    ("no pre-allocated", f"{_EQ}: one queue request more than it deserves and allowed: "
     "reclaims unneeded resources from an allocated queue to fulfill the unallocated queue",
     False, _requests(7000, 2000, 2000, max1=7000), 10000, {"1": 6000, "2": 2000, "3": 2000}),
    ("no pre-allocated", "q2 has no deserved but is allowed OQ: q1 uses the max allowed and q2 "
     "use all the rest as OQ: reclaims all resources of queue 2 and allocates allowed resource "
     "in queue 3", False, _q2_no_deserved(), 10000, {"1": 5000, "2": 0, "3": 5000}),
    ("all allocated between 2 queues", f"{_EQ}: all queues request more than they deserve: "
     "they get deserved and compete on the available resources", True, None, 10000,
     {"1": 5000, "2": 5000, "3": 5000}),
    ("all allocated between 2 queues", f"{_EQ}: one queue request more than it deserves but "
     "not allowed: reclaims unneeded resources from an allocated queue to fulfill the "
     "unallocated queue", True, _requests(7000, 2000, 2000), 10000,
     {"1": 6000, "2": 2000, "3": 2000}),
    ("all allocated between 2 queues", f"{_EQ}: one queue request more than it deserves but "
     "not allowed: reclaims from both allocated queues to fulfill the last unallocated queue",
     True, _then(_requests(7000, 2000, 2000), _q2_request(5000)), 10000,
     {"1": 5000, "2": 5000, "3": 2000}),
    ("all allocated between 2 queues", f"{_EQ}: one queue request more than it deserves and "
     "allowed: reclaims unneeded resources from an allocated queue to fulfill the unallocated "
     "queue", True, _requests(7000, 2000, 2000, max1=7000), 10000,
     {"1": 6000, "2": 2000, "3": 2000}),
    ("all allocated between 2 queues", f"{_EQ}: one queue request more than it deserves and "
     "allowed: reclaims from both allocated queues to fulfill the last unallocated queue", True,
     _then(_requests(7000, 2000, 2000, max1=7000), _q2_request(5000)), 10000,
     {"1": 5000, "2": 5000, "3": 2000}),
    ("all allocated between 2 queues", "q2 has no deserved but is allowed OQ: q1 uses the max "
     "allowed and q2 use all the rest as OQ and q1,q3 request more than they deserve: reclaims "
     "all resources of queue 2 and allocates allowed resource in queue 3", True,
     _q2_no_deserved(_q13_request_10000, cpu_only=True), 10000, {"1": 5000, "3": 5000}),
    ("all allocated between 2 queues", "q2 has no deserved but is allowed OQ: reclaims all "
     "resources of queue 2 and allocates allowed resource in queue 3", True,
     _q2_no_deserved(cpu_only=True),
     10000, {"1": 5000, "3": 5000}),
]


@pytest.mark.parametrize("r", [CPU, MEMORY], ids=["CPU", "memory"])
@pytest.mark.parametrize("row", THREE_QUEUES, ids=[f"three queues: {r[0]}: {r[1]}"
                                                   for r in THREE_QUEUES])
def test_three_queues_cpu_memory(r: int, row: tuple) -> None:  # type: ignore[type-arg]
    _, _, allocated, tweak, total, expected = row
    qs = _three(r, allocated)
    if tweak is not None:
        tweak(qs, r)
    assert set_resource_share(total, 0, r, qs) == 0
    assert {uid: qs[uid].shares[r].fair_share for uid in expected} == expected


# --- SetResourcesShare (all three resources at once) ----------------------------------------

def _all(deserved: tuple[float, float, float], request: tuple[float, float, float],
         weight: float = 1, max_allowed: float = UNLIMITED) -> list[ResourceShare]:
    """(cpu, memory, gpu) shares."""
    return [ResourceShare(deserved=deserved[i], over_quota_weight=weight, max_allowed=max_allowed,
                          request=request[i]) for i in range(3)]


def _same(d: float, req: float, weight: float = 1, max_allowed: float = UNLIMITED
          ) -> list[ResourceShare]:
    return _all((d, d, d), (req, req, req), weight, max_allowed)


SET_RESOURCES = {
    # id: (queues {uid: shares}, total (cpu, memory, gpu), expected {uid: (cpu, memory, gpu)})
    "one queue: Enough resources - should gets all request": (
        {"1": _all((200, 1000, 1), (500, 500, 1))}, (2500, 1000, 10), {"1": (500, 500, 1)}),
    "one queue: Not enough resources - should gets all cluster": (
        {"1": _all((20000, 1000, 2), (2500, 5000, 3))}, (1000, 3000, 1),
        {"1": (2500, 3000, 2)}),
    "two queues: Enough resources - should gets all request": (
        {u: _all((200, 1000, 1), (500, 500, 1)) for u in "12"}, (2500, 1000, 10),
        {u: (500, 500, 1) for u in "12"}),
    "two queues: Request more than total with same Over Quota and deserved - divide evenly": (
        {u: _all((2000, 1000, 1), (3000, 5000, 8)) for u in "12"}, (3000, 1000, 10),
        {u: (2000, 1000, 5) for u in "12"}),
    "two queues: Request more than total with different Over Quota": (
        {"1": _same(250, 5000, 1), "2": _same(150, 5000, 2)}, (1000, 1000, 1000),
        {"1": (450, 450, 450), "2": (550, 550, 550)}),
    "two queues: Request more than total with different Over Quota and max allowed": (
        {"1": _same(250, 5000, 1), "2": _same(150, 5000, 2, max_allowed=400)},
        (1000, 1000, 1000), {"1": (600, 600, 600), "2": (400, 400, 400)}),
    "three queues: divide resource evenly queues": (
        {u: _same(1000, 10000) for u in "123"}, (9999, 9999, 9999),
        {u: (3333, 3333, 3333) for u in "123"}),
    "three queues: divide resource between queues with different over quota": (
        {"1": _same(0, 10000, 6), "2": _same(0, 10000, 2), "3": _same(0, 10000, 1)},
        (9999, 9999, 9999),
        {"1": (6666, 6666, 6666), "2": (2222, 2222, 2222), "3": (1111, 1111, 1111)}),
}


@pytest.mark.parametrize("name", list(SET_RESOURCES), ids=list(SET_RESOURCES))
def test_set_resources_share(name: str) -> None:
    shares, total, expected = SET_RESOURCES[name]
    qs = {uid: QueueShare(uid, shares=[s.copy() for s in ss]) for uid, ss in shares.items()}
    set_resources_share(total, 0, qs)
    assert {uid: tuple(qs[uid].fair_share()) for uid in expected} == expected


def test_set_resources_share_advanced_fractional_fair_share() -> None:
    qs = {"1": queue("1", deserved=12, weight=12, request=32.54999999999996),
          "2": queue("2", deserved=7, weight=7, request=9.5),
          "3": queue("3", deserved=2, weight=2, max_allowed=2, request=1.65)}
    for q in qs.values():  # KAI leaves CPU and memory empty (all zero)
        q.shares[CPU] = ResourceShare()
        q.shares[MEMORY] = ResourceShare()
    set_resources_share((0, 0, 45), 0, qs)
    assert [qs[u].shares[GPU].fair_share for u in "123"] == [32.54999999999996, 9.5, 1.65]
    assert all(qs[u].fair_share()[:2] == [0, 0] for u in "123")


def test_set_resources_share_advanced_divide_last_remaining_gpu_based_to_similar_queues() -> None:
    qs = {"1": queue("queue-1", deserved=2, weight=2, request=3, max_allowed=UNLIMITED),
          "2": queue("queue-2", deserved=2, weight=2, request=3, max_allowed=UNLIMITED)}
    for q in qs.values():
        q.shares[CPU] = ResourceShare()
        q.shares[MEMORY] = ResourceShare()
    set_resources_share((0, 0, 5), 0, qs)
    assert qs["1"].shares[GPU].fair_share == 3
    assert qs["2"].shares[GPU].fair_share == 2


def test_get_queues_by_priority_should_return_queues_by_priority() -> None:
    qs = {uid: QueueShare(uid, priority=p) for uid, p in
          (("1", 1), ("2", 6), ("3", 2), ("4", 3), ("6", 2))}
    by_priority, priorities = queues_by_priority(qs)
    assert priorities == [6, 3, 2, 1]
    assert {p: sorted(g) for p, g in by_priority.items()} == \
        {6: ["2"], 3: ["4"], 2: ["3", "6"], 1: ["1"]}
