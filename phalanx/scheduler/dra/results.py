"""The AllocationResult of one claim, from the devices the allocator picked (kube's
allocator: the results, the configuration from the classes and the claim that applies to
the requests chosen, and the node selector the devices impose)."""

from __future__ import annotations

from typing import Any

from phalanx.api.pod import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from phalanx.api.resource import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)


class ResultError(Exception):
    pass


def build_result(claim: ResourceClaim, picked: list[Any], reqs: dict[tuple[int, int, int], Any],
                 ci: int, chosen: dict[int, int]) -> AllocationResult:
    """`picked`: the allocator's results of claim `ci` (request, device record, admin);
    `chosen`: request index -> the alternative picked (0 without alternatives)."""
    results = []
    for res in picked:
        r = res.req
        results.append(DeviceRequestAllocationResult(
            request=r.full_name, driver=res.rec.id[0], pool=res.rec.id[1],
            device=res.rec.id[2], admin_access=True if res.admin else None,
            tolerations=[t.model_copy() for t in r.tolerations] or None))
    configs: list[DeviceAllocationConfiguration] = []
    by_class: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.spec.devices.requests)):
        r = reqs.get((ci, ri, chosen[ri]))
        if r is None or r.cls is None:
            continue
        span = by_class.get(r.cls.name)
        if span is not None:
            for i in range(*span):
                configs[i].requests = [*(configs[i].requests or []), r.full_name]
            continue
        start = len(configs)
        for cfg in r.cls.spec.config or ():
            configs.append(DeviceAllocationConfiguration(
                source="FromClass", requests=[r.full_name],
                opaque=cfg.opaque.model_copy(deep=True) if cfg.opaque else None))
        by_class[r.cls.name] = (start, len(configs))
    for cfg in claim.spec.devices.config or ():
        opaque = cfg.opaque.model_copy(deep=True) if cfg.opaque else None
        if not cfg.requests:
            configs.append(DeviceAllocationConfiguration(source="FromClaim", requests=None,
                                                         opaque=opaque))
            continue
        for ri, request in enumerate(claim.spec.devices.requests):
            if request.name in cfg.requests:
                configs.append(DeviceAllocationConfiguration(
                    source="FromClaim", requests=list(cfg.requests), opaque=opaque))
                continue
            if not request.first_available:
                continue
            sub = request.first_available[chosen[ri]]
            if f"{request.name}/{sub.name}" in cfg.requests:
                configs.append(DeviceAllocationConfiguration(
                    source="FromClaim", requests=list(cfg.requests), opaque=opaque))
    return AllocationResult(devices=DeviceAllocationResult(results=results,
                                                           config=configs or None),
                            node_selector=node_selector(picked))


def node_selector(picked: list[Any]) -> NodeSelector | None:
    """createNodeSelector: a node-local device pins the node; others add their slice's (or
    device's) one-term selector."""
    fields: list[NodeSelectorRequirement] = []
    exprs: list[NodeSelectorRequirement] = []
    for res in picked:
        spec = res.rec.slice.spec
        if spec.per_device_node_selection:
            name, sel = res.rec.device.node_name, res.rec.device.node_selector
        else:
            name, sel = spec.node_name, spec.node_selector
        if name:
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[
                NodeSelectorRequirement(key="metadata.name", operator="In", values=[name])])])
        if sel is not None and sel.node_selector_terms:
            if len(sel.node_selector_terms) > 1:
                raise ResultError(f"unsupported ResourceSlice.NodeSelector with "
                                  f"{len(sel.node_selector_terms)} terms")
            term = sel.node_selector_terms[0]
            _merge(term.match_fields or [], fields)
            _merge(term.match_expressions or [], exprs)
    if fields or exprs:
        return NodeSelector(node_selector_terms=[NodeSelectorTerm(
            match_fields=fields or None, match_expressions=exprs or None)])
    return None


def _merge(src: list[NodeSelectorRequirement], dst: list[NodeSelectorRequirement]) -> None:
    for req in src:
        if not any(d.key == req.key and d.operator == req.operator
                   and set(d.values or ()) == set(req.values or ()) for d in dst):
            dst.append(req.model_copy(deep=True))
