"""A pod's ResourceClaims in one scheduling cycle: what PreFilter finds, what Filter checks.

`prepare` resolves the pod's `spec.resourceClaims` to claim objects (kube's
foreachPodResourceClaim and PreFilter checks, with kube's messages) and sorts them into:
- allocated claims (their allocation's node selector must match the node),
- claims with a pending allocation another member of the pod's gang made (the same),
- claims to allocate here.

For the claims to allocate it decides whether the vectorised check is exact (`groups`):
every request an `ExactCount` request of one class with the same selectors (or several of
them, summed), no admin access or tolerations, no device outside the inventory, and at most
one `matchAttribute` constraint, on the only request. Then "n free usable devices on the
node (sharing one value of the attribute)" is exactly the allocator's answer, and the
allocator runs once, at Reserve, on the chosen node. Otherwise (`groups` None) Filter runs
the allocator on every candidate node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.api.resource import (
    EXACT_COUNT,
    AllocationResult,
    ResourceClaim,
    can_be_reserved,
    is_for_pod,
    is_reserved_for,
    pod_claim_name,
)
from phalanx.scheduler.nodeselector import Selector, parse_selector

from .inventory import MatcherError
from .tracker import DraTracker


class Unresolvable(Exception):
    """The pod cannot be scheduled until a claim, class or the pod itself changes."""


@dataclass(slots=True)
class Group:
    """`need` free devices of `usable` on one node (sharing one value of `attribute`)."""

    usable: np.ndarray
    need: int
    attribute: str | None = None


@dataclass(slots=True)
class CycleClaims:
    claims: list[ResourceClaim]  # the pod's claims, in spec order (claims that exist)
    entries: list[str]  # pod-level claim entry name of each
    selectors: dict[int, Selector] = field(default_factory=dict)  # allocated / pending
    pending: dict[int, AllocationResult] = field(default_factory=dict)  # gang-shared
    to_allocate: list[int] = field(default_factory=list)
    groups: list[Group] | None = None  # exact vectorised check, when possible
    prioritized: bool = False  # some request has alternatives: Score ranks them
    # Filter results of the exact path: node -> allocations (aligned to `to_allocate`).
    node_allocs: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)  # allocated, not on some node
    chosen: dict[int, AllocationResult] = field(default_factory=dict)  # set by Reserve
    planned: dict[str, list[AllocationResult]] = field(default_factory=dict)  # gang plan

    def to_allocate_claims(self) -> list[ResourceClaim]:
        return [self.claims[i] for i in self.to_allocate]


def resolve(tracker: DraTracker, pod: Any) -> tuple[list[ResourceClaim], list[str]]:
    """The pod's existing claims (and their entry names); Unresolvable names the first
    missing, deleting or foreign claim."""
    claims: list[ResourceClaim] = []
    entries: list[str] = []
    ns = pod.metadata.namespace or "default"
    for entry in pod.spec.resource_claims or ():
        if not isinstance(entry, dict):
            continue
        name, must_own, err = pod_claim_name(pod, entry)
        if err:
            raise Unresolvable(err)
        if name is None:
            continue  # the controller decided this entry needs no claim
        claim = tracker.claim(ns, name)
        if claim is None:
            raise Unresolvable(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.metadata.deletion_timestamp is not None:
            raise Unresolvable(f'resourceclaim "{name}" is being deleted')
        if must_own:
            why = is_for_pod(pod, claim)
            if why:
                raise Unresolvable(why)
        claims.append(claim)
        entries.append(str(entry.get("name", "")))
    return claims, entries


def prepare(tracker: DraTracker, pod: Any, shares_with: Any = None) -> CycleClaims | None:
    """PreFilter's work. None: the pod has no claims (the plugin skips it).
    `shares_with(owner_keys)` says whether this pod may reuse a pending allocation those
    pods made (members of its own gang)."""
    claims, entries = resolve(tracker, pod)
    if not claims:
        return None
    cc = CycleClaims(claims, entries)
    uid = pod.metadata.uid or ""
    for i, claim in enumerate(claims):
        alloc = claim.status.allocation
        if alloc is not None:
            if not can_be_reserved(claim) and not is_reserved_for(claim, uid):
                raise Unresolvable("resourceclaim in use")
            if alloc.node_selector is not None:
                cc.selectors[i] = parse_selector(alloc.node_selector)
            continue
        flight = tracker.pending(claim.metadata.uid or claim.key)
        if flight is not None:
            if shares_with is not None and shares_with(list(flight.owners)):
                cc.pending[i] = flight.allocation
                if flight.allocation.node_selector is not None:
                    cc.selectors[i] = parse_selector(flight.allocation.node_selector)
                continue
            raise Unresolvable(f"resource claim {claim.namespace}/{claim.name} is in the "
                               "process of being allocated")
        for req in claim.spec.devices.requests:
            if req.exactly is not None:
                _class_exists(tracker, req.exactly.device_class_name, req.name)
            elif req.first_available:
                cc.prioritized = True
                for sub in req.first_available:
                    _class_exists(tracker, sub.device_class_name, f"{req.name}/{sub.name}")
            else:
                raise Unresolvable(f"resource claim {claim.namespace}/{claim.name}, request "
                                   f"{req.name}: unknown request type")
        cc.to_allocate.append(i)
    if cc.to_allocate:
        cc.groups = _groups(tracker, cc)
    return cc


def _class_exists(tracker: DraTracker, name: str, request: str) -> None:
    if not name:
        raise Unresolvable(f"request {request}: unsupported request type")
    if tracker.device_class(name) is None:
        raise Unresolvable(f"request {request}: device class {name} does not exist")


def _groups(tracker: DraTracker, cc: CycleClaims) -> list[Group] | None:
    inv = tracker.ready_inventory()
    if inv.unindexed:
        return None
    need = 0
    key: Any = None
    attribute: str | None = None
    usable: np.ndarray | None = None
    requests = 0
    for claim in cc.to_allocate_claims():
        cons = claim.spec.devices.constraints or []
        for req in claim.spec.devices.requests:
            e = req.exactly
            if (e is None or e.allocation_mode != EXACT_COUNT or e.admin_access
                    or e.tolerations or e.capacity is not None):
                return None
            this = (e.device_class_name, tuple(s.model_dump_json() for s in e.selectors or ()))
            if key is not None and this != key:
                return None
            cls = tracker.device_class(e.device_class_name)
            if cls is None:
                return None
            try:
                usable = inv.mask(cls, e.selectors or (), ())
            except MatcherError:
                return None  # the allocator reports it, with the claim's name
            key = this
            need += e.count or 0
            requests += 1
        if cons:
            if len(cons) > 1 or cons[0].match_attribute is None or \
                    cons[0].distinct_attribute is not None:
                return None
            attribute = cons[0].match_attribute
    if usable is None:
        return []
    if attribute is not None and requests != 1:
        return None
    return [Group(usable, need, attribute)]
