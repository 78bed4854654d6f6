"""Topology constraint admission, as Grove's CRD rules and webhook check it.

Always (Grove's CEL rules, which Phalanx's CRDs carry too):
- a topologyConstraint sets `pack` or the deprecated `packDomain`, not both `pack.required`
  and `packDomain`; a `pack` sets `required` or `preferred`;
- a new PodCliqueSet may not use `packDomain` ("packDomain is deprecated and cannot be used on
  new workloads"); an existing object keeps it on update.

On create, with topology-aware scheduling known (Grove's validating webhook):
- disabled: no topology constraint is allowed;
- enabled: every constraint resolves to one `topologyName` (written, or inherited from the
  PodCliqueSet's constraint, or a scaling group's for its cliques); that
  ClusterTopologyBinding exists; every domain is one of its levels; a PodCliqueSet's domain
  is not narrower than its cliques' and scaling groups', nor a scaling group's than its
  cliques'.

On update: constraints are immutable (topologyName and domains), except moving `packDomain` to
`pack.required` unchanged, and the legacy repair: an object created before topologyName
existed (packDomain, no topologyName) may gain a topologyName, and is then checked as on
create.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from phalanx.api.errors import short_cause
from phalanx.api.grove import PodCliqueSet, TopologyConstraint
from phalanx.api.grove_topology import constraints_with_paths, effective_topology_errors
from phalanx.cluster.client import ApiError

FieldErrors = list[tuple[str, str]]
# The domains (broadest first) of the topology a name resolves to; None when none exists.
DomainLookup = Callable[[str], Awaitable[list[str] | None]]

_T = "spec.template"
NO_NEW_PACK_DOMAIN = ("packDomain is deprecated and cannot be used on new workloads; use "
                      "pack.required")
TAS_DISABLED = "topology constraints are not allowed when Topology Aware Scheduling is disabled"


def cel_errors(pcs: PodCliqueSet, old: PodCliqueSet | None) -> FieldErrors:
    """Grove's x-kubernetes-validations on PodCliqueSet, with Grove's fields and messages."""
    errs: FieldErrors = []
    for path, tc in constraints_with_paths(pcs):
        if tc.pack is None and tc.pack_domain is None:
            errs.append((f"{path}.pack", "Required value: topologyConstraint must specify pack "
                                         "or deprecated packDomain"))
        if tc.pack_domain is not None and tc.pack is not None and tc.pack.required is not None:
            errs.append((f"{path}.pack.required",
                         "must not set both pack.required and deprecated packDomain"))
        if tc.pack is not None and tc.pack.required is None and tc.pack.preferred is None:
            errs.append((f"{path}.pack", "Required value: pack must specify at least one of "
                                         "required or preferred"))
    if old is None:
        t = pcs.spec.template
        if t.topology_constraint is not None and t.topology_constraint.pack_domain is not None:
            errs.append((f"{_T}.topologyConstraint.packDomain", NO_NEW_PACK_DOMAIN))
        if any(c.topology_constraint is not None and c.topology_constraint.pack_domain
               is not None for c in t.cliques):
            errs.append((f"{_T}.cliques", NO_NEW_PACK_DOMAIN))
        if any(g.topology_constraint is not None and g.topology_constraint.pack_domain
               is not None for g in t.pod_clique_scaling_groups or ()):
            errs.append((f"{_T}.podCliqueScalingGroups", NO_NEW_PACK_DOMAIN))
    return errs


async def webhook_errors(pcs: PodCliqueSet, old: PodCliqueSet | None, *, enabled: bool,
                         lookup: DomainLookup | None) -> FieldErrors:
    """Grove's webhook rules for topology constraints (create, or update against `old`)."""
    if old is None:
        return await _on_create(pcs, enabled, lookup)
    if _repairable_legacy(old):
        _, name_errors = effective_topology_errors(old)
        if any(e.missing for e in name_errors):
            errs = immutability_errors(pcs, old, allow_repair=True)
            return errs or await _on_create(pcs, enabled, lookup)
    return immutability_errors(pcs, old, allow_repair=False)


async def _on_create(pcs: PodCliqueSet, enabled: bool, lookup: DomainLookup | None
                     ) -> FieldErrors:
    constraints = list(constraints_with_paths(pcs))
    if not constraints:
        return []
    if not enabled:
        return [(path, f"{TAS_DISABLED} (domains {', '.join(tc.referenced_domains())})")
                for path, tc in constraints]
    name, name_errors = effective_topology_errors(pcs)
    if name_errors:
        return [(e.field, e.message) for e in name_errors]
    if name is None or lookup is None:
        return []
    try:
        domains = await lookup(name)
    except ApiError as err:  # not "not found": the server failed; say so, on the field
        return [(f"{_T}.topologyConstraint.topologyName",
                 f"Internal error: failed to fetch ClusterTopologyBinding {name!r}: "
                 f"{short_cause(err)}")]
    if domains is None:
        return [(f"{_T}.topologyConstraint.topologyName",
                 f"ClusterTopologyBinding {name!r} not found")]
    errs: FieldErrors = []
    for path, tc in constraints:
        for field, domain in ((f"{path}.packDomain", tc.pack_domain),
                              (f"{path}.pack.required", tc.pack.required if tc.pack else None),
                              (f"{path}.pack.preferred", tc.pack.preferred if tc.pack else None)):
            if domain and domain not in domains:
                errs.append((field, f"topology domain '{domain}' does not exist in cluster "
                                    f"topology [{' '.join(domains)}]"))
    return errs or hierarchy_errors(pcs, domains)


def _narrower(parent: str | None, child: str | None, domains: list[str]) -> bool:
    """Whether `parent` is a narrower level than `child` (unknown or unset: no)."""
    if not parent or not child or parent not in domains or child not in domains:
        return False
    return domains.index(parent) > domains.index(child)


def _violation(parent_domain: str, parent: str, child_domain: str, child: str) -> str:
    return (f"{parent} topology constraint domain '{parent_domain}' is narrower than {child} "
            f"topology constraint domain '{child_domain}'")


def hierarchy_errors(pcs: PodCliqueSet, domains: list[str]) -> FieldErrors:
    """A PodCliqueSet's pack domains are not narrower than its cliques' and scaling groups';
    a scaling group's not narrower than its cliques' (required and preferred apart)."""
    t = pcs.spec.template
    errs: FieldErrors = []

    def check(parent: TopologyConstraint, at: str, who: str,
              children: list[tuple[TopologyConstraint, str]]) -> None:
        for child, child_who in children:
            if _narrower(parent.required_domain, child.required_domain, domains):
                errs.append((at, _violation(parent.required_domain or "", who,
                                            child.required_domain or "", child_who)))
            if _narrower(parent.preferred_domain, child.preferred_domain, domains):
                errs.append((f"{at}.pack.preferred",
                             _violation(parent.preferred_domain or "", who,
                                        child.preferred_domain or "", child_who)))

    groups = t.pod_clique_scaling_groups or ()
    if t.topology_constraint is not None:
        children = [(c.topology_constraint, f"PodClique '{c.name}'") for c in t.cliques
                    if c.topology_constraint is not None]
        children += [(g.topology_constraint, f"PodCliqueScalingGroup '{g.name}'")
                     for g in groups if g.topology_constraint is not None]
        check(t.topology_constraint, f"{_T}.topologyConstraint", "PodCliqueSet", children)
    for i, g in enumerate(groups):
        if g.topology_constraint is None:
            continue
        members = [pcs.clique(n) for n in g.clique_names]
        children = [(c.topology_constraint, f"PodClique '{c.name}'") for c in members
                    if c is not None and c.topology_constraint is not None]
        check(g.topology_constraint, f"{_T}.podCliqueScalingGroups[{i}].topologyConstraint",
              f"PodCliqueScalingGroup '{g.name}'", children)
    return errs


# --- update -----------------------------------------------------------------------------------


def _repairable_legacy(pcs: PodCliqueSet) -> bool:
    """Created before topologyName existed: a constraint with packDomain and no name."""
    return any(tc.pack_domain and not tc.topology_name for _, tc in constraints_with_paths(pcs))


def _changed(old: TopologyConstraint | None, new: TopologyConstraint | None) -> bool:
    if old is None or new is None:
        return old is not new
    return ((old.topology_name or "") != (new.topology_name or "")
            or old.pack_domain != new.pack_domain
            or old.required_domain != new.required_domain
            or old.preferred_domain != new.preferred_domain)


def _repair(old: TopologyConstraint | None, new: TopologyConstraint | None) -> bool:
    """The legacy repair: only a topologyName added to a packDomain constraint."""
    return (old is not None and new is not None and not old.topology_name
            and bool(old.pack_domain) and bool(new.topology_name)
            and new.pack_domain == old.pack_domain)


def _migration_attempt(old: TopologyConstraint | None, new: TopologyConstraint | None) -> bool:
    return (old is not None and new is not None and bool(old.pack_domain)
            and not new.pack_domain and new.pack is not None and bool(new.pack.required))


def _migration(old: TopologyConstraint | None, new: TopologyConstraint | None) -> bool:
    """packDomain moved to pack.required, nothing else changed."""
    return (_migration_attempt(old, new) and old is not None and new is not None
            and (old.topology_name or "") == (new.topology_name or "")
            and new.required_domain == old.pack_domain
            and new.preferred_domain == old.preferred_domain)


def _change_message(kind: str, name: str, old: TopologyConstraint | None,
                    new: TopologyConstraint | None) -> str:
    who = f"{kind} '{name}'" if name else kind
    if old is None:
        return f"{who} topology constraint cannot be added after creation"
    if new is None:
        return f"{who} topology constraint cannot be removed after creation"
    if (old.topology_name or "") != (new.topology_name or ""):
        return (f"{who} topology constraint topologyName cannot be changed from "
                f"'{old.topology_name or ''}' to '{new.topology_name or ''}'")
    if _migration_attempt(old, new):
        return (f"{who} deprecated packDomain migration can only move packDomain to "
                "pack.required without changing the required or preferred topology domain "
                f"(old required={old.pack_domain!r} preferred={old.preferred_domain!r}, "
                f"new required={new.required_domain!r} preferred={new.preferred_domain!r})")
    return (f"{who} topology constraint cannot be changed from required="
            f"{old.required_domain!r} preferred={old.preferred_domain!r} to required="
            f"{new.required_domain!r} preferred={new.preferred_domain!r}")


def immutability_errors(pcs: PodCliqueSet, old: PodCliqueSet, *,
                        allow_repair: bool) -> FieldErrors:
    t, o = pcs.spec.template, old.spec.template
    errs: FieldErrors = []
    new_tc, old_tc = t.topology_constraint, o.topology_constraint
    old_name = old_tc.topology_name or "" if old_tc is not None else ""
    new_name = new_tc.topology_name or "" if new_tc is not None else ""
    repaired = allow_repair and _repair(old_tc, new_tc)
    if old_name != new_name and not repaired:
        errs.append((f"{_T}.topologyConstraint.topologyName",
                     f"Forbidden: topologyName cannot be changed from {old_name!r} to "
                     f"{new_name!r}"))
    if old_name == new_name and _changed(old_tc, new_tc) and not repaired \
            and not _migration(old_tc, new_tc):
        errs.append((f"{_T}.topologyConstraint",
                     "Forbidden: " + _change_message("PodCliqueSet", "", old_tc, new_tc)))
    pairs = [(f"{_T}.cliques[{i}].topologyConstraint", "PodClique", c.name,
              (o_c.topology_constraint if (o_c := old.clique(c.name)) else None),
              c.topology_constraint) for i, c in enumerate(t.cliques)]
    old_groups = {g.name: g.topology_constraint for g in o.pod_clique_scaling_groups or ()}
    pairs += [(f"{_T}.podCliqueScalingGroups[{i}].topologyConstraint", "PodCliqueScalingGroup",
               g.name, old_groups.get(g.name), g.topology_constraint)
              for i, g in enumerate(t.pod_clique_scaling_groups or ())]
    for path, kind, name, before, after in pairs:
        if _changed(before, after) and not (allow_repair and _repair(before, after)) \
                and not _migration(before, after):
            errs.append((path, "Forbidden: " + _change_message(kind, name, before, after)))
    return errs


# --- ClusterTopologyBinding -------------------------------------------------------------------


def binding_errors(ct: Any, enabled: list[str], topology_aware: list[str]) -> FieldErrors:
    """Grove's ClusterTopologyBinding webhook: unique level domains and keys; each
    schedulerTopologyBindings entry names a backend once, an enabled one, and one that keeps
    a topology object of its own. (Grove's messages name the field
    `spec.schedulerTopologyReferences`; the field users write is named here.)"""
    errs: FieldErrors = []
    domains: set[str] = set()
    keys: set[str] = set()
    for i, level in enumerate(ct.spec.levels):
        if level.domain in domains:
            errs.append((f"spec.levels[{i}].domain", f"Duplicate value: {level.domain!r}"))
        if level.key in keys:
            errs.append((f"spec.levels[{i}].key", f"Duplicate value: {level.key!r}"))
        domains.add(level.domain)
        keys.add(level.key)
    seen: set[str] = set()
    for i, ref in enumerate(ct.spec.scheduler_topology_bindings or ()):
        at = f"spec.schedulerTopologyBindings[{i}].schedulerName"
        if ref.scheduler_name in seen:
            errs.append((at, f"Duplicate value: {ref.scheduler_name!r}"))
        seen.add(ref.scheduler_name)
        if ref.scheduler_name not in enabled:
            errs.append((at, f"Invalid value: {ref.scheduler_name!r}: scheduler backend is not "
                             f"enabled (enabled: {', '.join(enabled)})"))
        elif ref.scheduler_name not in topology_aware:
            errs.append((at, f"Invalid value: {ref.scheduler_name!r}: scheduler backend does "
                             "not implement topology-aware scheduling"))
    return errs
