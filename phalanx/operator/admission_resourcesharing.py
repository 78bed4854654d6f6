"""Admission of Grove's resource sharing (`resourceClaimTemplates`, `resourceSharing` at
PodCliqueSet, scaling-group and clique level), as Grove's PodCliqueSet webhook checks it:
templates named, unique and with at least one device request (and a valid claim spec);
references named once per level, with a known scope, no namespace on a reference to an own
template; filters naming existing cliques / scaling groups (a scaling group's filter: its own
cliques); and all of it immutable once created.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from phalanx.api.grove import PodCliqueSet
from phalanx.api.resource import ResourceClaimTemplateSpec

FieldErrors = list[tuple[str, str]]
_T = "spec.template"
_SCOPES = ("AllReplicas", "PerReplica")
IMMUTABLE = "field is immutable"


def _templates(pcs: PodCliqueSet, errs: FieldErrors) -> set[str]:
    names: set[str] = set()
    for i, rct in enumerate(pcs.spec.template.resource_claim_templates or ()):
        at = f"{_T}.resourceClaimTemplates[{i}]"
        if not rct.name:
            errs.append((f"{at}.name", "Required value: template name is required"))
        elif rct.name in names:
            errs.append((f"{_T}.resourceClaimTemplates.name",
                         f"Duplicate value: {rct.name!r}"))
        names.add(rct.name)
        spec = rct.template_spec if isinstance(rct.template_spec, dict) else {}
        if not (spec.get("spec") or {}).get("devices", {}).get("requests"):
            errs.append((f"{at}.templateSpec.spec.devices.requests",
                         "Required value: at least one device request is required"))
            continue
        try:
            ResourceClaimTemplateSpec.model_validate(spec)
        except ValidationError as e:
            for err in e.errors():
                loc = ".".join(str(x) for x in err["loc"])
                errs.append((f"{at}.templateSpec.{loc}", err["msg"]))
    return names


def _refs(refs: list[Any], at: str, templates: set[str], errs: FieldErrors) -> None:
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        if not ref.name:
            errs.append((f"{at}[{i}].name", "Required value: reference name is required"))
        elif ref.name in seen:
            errs.append((f"{at}[{i}].name", f"Duplicate value: {ref.name!r}"))
        seen.add(ref.name)
        if ref.namespace and ref.name in templates:
            errs.append((f"{at}[{i}].namespace", f"Invalid value: {ref.namespace!r}: namespace "
                         "must be empty when name matches an internal resourceClaimTemplate"))
        if ref.scope not in _SCOPES:
            errs.append((f"{at}[{i}].scope", f"Unsupported value: {ref.scope!r}: supported "
                         f"values: {', '.join(repr(s) for s in _SCOPES)}"))


def _filter(ref_filter: Any, at: str, cliques: set[str], groups: set[str] | None,
            errs: FieldErrors) -> None:
    names = ref_filter.child_clique_names or []
    group_names = (getattr(ref_filter, "child_scaling_group_names", None) or []
                   if groups is not None else [])
    if not names and not group_names:
        what = ("childCliqueNames or childScalingGroupNames" if groups is not None
                else "childCliqueNames")
        errs.append((at, f"Required value: filter must specify at least one {what} entry"))
    for j, n in enumerate(names):
        if n not in cliques:
            errs.append((f"{at}.childCliqueNames[{j}]", f"Not found: {n!r}"))
    for j, n in enumerate(group_names):
        if groups is not None and n not in groups:
            errs.append((f"{at}.childScalingGroupNames[{j}]", f"Not found: {n!r}"))


def resource_sharing_errors(pcs: PodCliqueSet, old: PodCliqueSet | None = None) -> FieldErrors:
    errs: FieldErrors = []
    t = pcs.spec.template
    templates = _templates(pcs, errs)
    cliques = {c.name for c in t.cliques}
    groups = {g.name for g in t.pod_clique_scaling_groups or ()}
    _refs(t.resource_sharing or [], f"{_T}.resourceSharing", templates, errs)
    for i, ref in enumerate(t.resource_sharing or ()):
        if ref.filter is not None:
            _filter(ref.filter, f"{_T}.resourceSharing[{i}].filter", cliques, groups, errs)
    for gi, g in enumerate(t.pod_clique_scaling_groups or ()):
        at = f"{_T}.podCliqueScalingGroups[{gi}].resourceSharing"
        _refs(g.resource_sharing or [], at, templates, errs)
        for i, ref in enumerate(g.resource_sharing or ()):
            if ref.filter is not None:
                _filter(ref.filter, f"{at}[{i}].filter", set(g.clique_names), None, errs)
    for ci, c in enumerate(t.cliques):
        _refs(c.resource_sharing or [], f"{_T}.cliques[{ci}].resourceSharing", templates, errs)
    if old is not None:
        errs.extend(_immutable(pcs, old))
    return errs


def _dump(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, list):
        return [_dump(v) for v in x] or None
    return x.model_dump(by_alias=True, exclude_none=True)


def _immutable(pcs: PodCliqueSet, old: PodCliqueSet) -> FieldErrors:
    errs: FieldErrors = []
    t, o = pcs.spec.template, old.spec.template
    if _dump(t.resource_claim_templates) != _dump(o.resource_claim_templates):
        errs.append((f"{_T}.resourceClaimTemplates", IMMUTABLE))
    if _dump(t.resource_sharing) != _dump(o.resource_sharing):
        errs.append((f"{_T}.resourceSharing", IMMUTABLE))
    old_groups = {g.name: g for g in o.pod_clique_scaling_groups or ()}
    for i, g in enumerate(t.pod_clique_scaling_groups or ()):
        prev = old_groups.get(g.name)
        if prev is not None and _dump(g.resource_sharing) != _dump(prev.resource_sharing):
            errs.append((f"{_T}.podCliqueScalingGroups[{i}].resourceSharing", IMMUTABLE))
    old_cliques = {c.name: c for c in o.cliques}
    for i, c in enumerate(t.cliques):
        prev = old_cliques.get(c.name)
        if prev is not None and _dump(c.resource_sharing) != _dump(prev.resource_sharing):
            errs.append((f"{_T}.cliques[{i}].resourceSharing", IMMUTABLE))
    return errs
