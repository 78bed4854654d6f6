"""Resource pools as the structured allocator sees them from one node (kube's GatherPools).

A driver publishes a pool in one or more ResourceSlices (`spec.pool`: name, generation,
resourceSliceCount). From a node's point of view a pool is built from the slices of its
newest generation that the node can reach (`nodeName`, `nodeSelector`, `allNodes`, or
per-device node selection) plus the slices holding its shared counters. It is:
- complete when every slice of that generation is there (else allocation skips it, and a
  request for all devices fails);
- invalid when device names repeat, a counter set is defined twice or a device consumes a
  counter no counter set defines (allocation skips it; if nothing else fits the node the
  failure says an invalid pool was seen);
- obsolete slices (an older generation) are ignored.

Devices are wrapped once per slice object in `DeviceRec`, which caches what selectors said
about the device (the slice objects come from the informer and are replaced, never changed,
so a record lives exactly as long as what it describes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.devicecel import device_input
from phalanx.api.resource import Device, ResourceSlice
from phalanx.scheduler.nodeselector import parse_selector

DeviceID = tuple[str, str, str]  # (driver, pool, device)
PoolID = tuple[str, str]  # (driver, pool)


class DeviceRec:
    """One device of one slice object, with its CEL input and selector verdicts cached."""

    __slots__ = ("id", "device", "slice", "_input", "verdicts", "counters")

    def __init__(self, rs: ResourceSlice, device: Device) -> None:
        self.id: DeviceID = (rs.spec.driver, rs.spec.pool.name, device.name)
        self.device = device
        self.slice = rs
        self._input: dict[str, Any] | None = None
        # selector expression -> True / False / CELError text
        self.verdicts: dict[str, bool | str] = {}
        self.counters = bool(device.consumes_counters)

    @property
    def cel_input(self) -> dict[str, Any]:
        if self._input is None:
            d = self.device
            self._input = device_input(self.id[0], d.attributes, d.capacity,
                                       bool(d.allow_multiple_allocations))
        return self._input


_RECS: dict[int, tuple[ResourceSlice, list[DeviceRec]]] = {}


def device_recs(rs: ResourceSlice) -> list[DeviceRec]:
    """The records of a slice object's devices (cached while the object lives)."""
    hit = _RECS.get(id(rs))
    if hit is not None and hit[0] is rs:
        return hit[1]
    recs = [DeviceRec(rs, d) for d in rs.spec.devices]
    if len(_RECS) > 200_000:
        _RECS.clear()
    _RECS[id(rs)] = (rs, recs)
    return recs


@dataclass(slots=True)
class Pool:
    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Slices with devices that the node can reach, and the others of the pool (for counters).
    slices: list[ResourceSlice] = field(default_factory=list)
    other_slices: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def devices(self) -> list[DeviceRec]:
        out: list[DeviceRec] = []
        for rs in self.slices:
            out.extend(device_recs(rs))
        return out

    def __str__(self) -> str:
        return f"{self.id[0]}/{self.id[1]}"


def node_matches(node: Any, node_name: str | None, all_nodes: bool | None,
                 selector: Any) -> bool:
    """NodeMatches: a node name, all nodes, or a node selector (no node: only all)."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node is not None and parse_selector(selector).matches_node(node)
    return False


def _reaches(rs: ResourceSlice, node: Any, partitionable: bool) -> bool:
    spec = rs.spec
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
    if spec.per_device_node_selection and partitionable:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector)
                   for d in spec.devices)
    return False


def gather_pools(slices: Sequence[ResourceSlice], node: Any, *,
                 partitionable: bool = True) -> list[Pool]:
    """The pools a node can use, in first-seen order (kube iterates a map: order is free)."""
    by_pool: dict[PoolID, list[ResourceSlice]] = {}
    for rs in slices:
        spec = rs.spec
        if not partitionable and (spec.per_device_node_selection is not None
                                  or spec.shared_counters):
            continue
        if not (spec.shared_counters or _reaches(rs, node, partitionable)):
            continue
        pid = (spec.driver, spec.pool.name)
        have = by_pool.get(pid)
        if have is None or spec.pool.generation > have[0].spec.pool.generation:
            by_pool[pid] = [rs]
        elif spec.pool.generation == have[0].spec.pool.generation:
            have.append(rs)
    out: list[Pool] = []
    for pid, mine in by_pool.items():
        gen = mine[0].spec.pool.generation
        want = mine[0].spec.pool.resource_slice_count
        if len(mine) == want:
            out.append(_build(pid, mine, None, partitionable))
            continue
        everything = [rs for rs in slices if (rs.spec.driver, rs.spec.pool.name) == pid]
        if any(rs.spec.pool.generation > gen for rs in everything):
            continue  # the node sees an obsolete generation only
        same = [rs for rs in everything if rs.spec.pool.generation == gen]
        if len(same) != want:
            out.append(Pool(pid, incomplete=True))
            continue
        out.append(_build(pid, mine, same, partitionable))
    return out


def _build(pid: PoolID, mine: list[ResourceSlice], everything: list[ResourceSlice] | None,
           partitionable: bool) -> Pool:
    device_slices = [rs for rs in mine if not (partitionable and rs.spec.shared_counters)]
    counter_slices = [rs for rs in mine if partitionable and rs.spec.shared_counters]
    names: set[str] = set()
    for rs in device_slices:
        for d in rs.spec.devices:
            if d.name in names:
                return Pool(pid, invalid=True, invalid_reason=f"duplicate device name {d.name}")
            names.add(d.name)
    if not partitionable:
        return Pool(pid, slices=device_slices)
    counter_sets: dict[str, dict[str, Any]] = {}
    for rs in counter_slices:
        for cs in rs.spec.shared_counters or ():
            if cs.name in counter_sets:
                return Pool(pid, invalid=True,
                            invalid_reason=f"duplicate counter set name {cs.name}")
            counter_sets[cs.name] = {k: c.value for k, c in cs.counters.items()}
    reason = _consumption_problem(counter_sets, mine)
    if reason:
        return Pool(pid, invalid=True, invalid_reason=reason)
    others: list[ResourceSlice] = []
    if everything is not None and len(everything) != len(mine):
        seen = {rs.name for rs in mine}
        others = [rs for rs in everything if rs.name not in seen]
        reason = _consumption_problem(counter_sets, others)
        if reason:
            return Pool(pid, invalid=True, invalid_reason=reason)
    return Pool(pid, slices=device_slices, other_slices=others, counter_sets=counter_sets)


def _consumption_problem(counter_sets: dict[str, dict[str, Any]],
                         slices: Sequence[ResourceSlice]) -> str:
    for rs in slices:
        for d in rs.spec.devices:
            for use in d.consumes_counters or ():
                have = counter_sets.get(use.counter_set)
                if have is None:
                    return f"counter set {use.counter_set} not found"
                for name in use.counters:
                    if name not in have:
                        return f"counter {name} not found in counter set {use.counter_set}"
    return ""
