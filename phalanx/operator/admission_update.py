"""What an update of a PodCliqueSet may not change, as Grove's validating webhook checks it
(operator/internal/webhook/admission/pcs/validation/podcliqueset.go validateUpdate), with
Grove's messages:

- cliques: none added, removed or renamed; their order kept under InOrder and Explicit
  startup (under AnyOrder they may be reordered: each is matched by name);
- per clique (matched by name): `roleName`, `minAvailable`, `startsAfter` and
  `podSpec.schedulerName` (resource sharing: admission_resourcesharing.py);
- `cliqueStartupType`;
- scaling groups: none added or removed, each matched by name (so they may be reordered),
  its `cliqueNames` and `minAvailable` kept (resource sharing: as above);
- Phalanx's own: a `podSpec.nodeName` set or changed by the update is refused as on create
  (Grove checks it on create only; its pods could never be created: the operator's
  scheduling gate and a nodeName cannot go together).
Topology constraints: admission_topology.py.
"""

from __future__ import annotations

from typing import Any

from phalanx.api.grove import PodCliqueSet
from phalanx.cluster.podvalidation.fielderrors import FieldErrors, forbidden, invalid

from .plan import STARTUP_EXPLICIT, STARTUP_IN_ORDER

_T = "spec.template"
IMMUTABLE = "field is immutable"
NODE_NAME = "must not be set"


def _immutable(path: str, new: Any, old: Any) -> FieldErrors:
    """apivalidation.ValidateImmutableField (nil and empty lists are equal)."""
    return [] if new == old else [invalid(path, new, IMMUTABLE)]


def update_errors(pcs: PodCliqueSet, old: PodCliqueSet) -> FieldErrors:
    t, o = pcs.spec.template, old.spec.template
    errs = _immutable(f"{_T}.cliqueStartupType", t.clique_startup_type, o.clique_startup_type)
    return errs + _clique_errors(pcs, old) + _group_errors(pcs, old)


def _clique_errors(pcs: PodCliqueSet, old: PodCliqueSet) -> FieldErrors:
    t, o = pcs.spec.template, old.spec.template
    at = f"{_T}.cliques"
    errs: FieldErrors = []
    if len(t.cliques) != len(o.cliques):
        errs.append(forbidden(at, "not allowed to change clique composition"))
    before = {c.name: (j, c) for j, c in enumerate(o.cliques)}
    ordered = t.clique_startup_type in (STARTUP_IN_ORDER, STARTUP_EXPLICIT)
    for i, c in enumerate(t.cliques):
        found = before.get(c.name)
        if found is None:
            errs.append(forbidden(f"{at}[{i}].name", "not allowed to change clique "
                                  f"composition, new clique name '{c.name}' is not allowed"))
            continue
        j, oc = found
        if ordered and i != j:
            expected = o.cliques[i].name if i < len(o.cliques) else oc.name
            errs.append(invalid(at, c.name, "clique order cannot be changed when StartupType "
                                f"is InOrder or Explicit. Expected '{expected}' at position "
                                f"{i}, got '{c.name}'"))
        spec, ospec = c.spec, oc.spec
        path = f"{at}[{i}].spec"
        errs += _immutable(f"{path}.roleName", spec.role_name, ospec.role_name)
        errs += _immutable(f"{path}.minAvailable", spec.min_available, ospec.min_available)
        errs += _immutable(f"{path}.startsAfter", spec.starts_after or [],
                           ospec.starts_after or [])
        errs += _immutable(f"{path}.podSpec.schedulerName", spec.pod_spec.scheduler_name or "",
                           ospec.pod_spec.scheduler_name or "")
        node = spec.pod_spec.node_name
        if node and node != ospec.pod_spec.node_name:
            errs.append(invalid(f"{path}.podSpec.nodeName", node, NODE_NAME))
    return errs


def _group_errors(pcs: PodCliqueSet, old: PodCliqueSet) -> FieldErrors:
    groups = pcs.spec.template.pod_clique_scaling_groups or []
    old_groups = old.spec.template.pod_clique_scaling_groups or []
    at = f"{_T}.podCliqueScalingGroups"
    if len(groups) != len(old_groups):
        return [forbidden(at, "not allowed to add or remove PodCliqueScalingGroupConfigs")]
    before = {g.name: g for g in old_groups}
    errs: FieldErrors = []
    for i, g in enumerate(groups):
        og = before.get(g.name)
        if og is None:
            errs.append(forbidden(f"{at}[{i}].name", "not allowed to change scaling group "
                                  f"composition, new scaling group name '{g.name}' is not "
                                  "allowed"))
            continue
        errs += _immutable(f"{at}[{i}].cliqueNames", list(g.clique_names),
                           list(og.clique_names))
        errs += _immutable(f"{at}[{i}].minAvailable", g.min_available, og.min_available)
    return errs
