"""Which scheduler features a PodCliqueSet asks for, and where it asks for them.

Admission compares these against a backend's declared capabilities (GREP-375 "scheduler
capability mismatch"). Each use carries the camelCase field path that asks for it, so an
admission error or a `SchedulerCompatible` condition can name the exact field.

What counts as a request:
- `TopologyAwarePlacement`: a pack constraint on the PodCliqueSet template, a clique or a
  scaling group. A *required* domain is a hard request; a *preferred* one is best-effort:
  a scheduler that ignores it still honours the spec, so it is never rejected, only reported.
- `HierarchicalSubGroups`: a pack constraint on a scaling group, which constrains a strict
  subset of a PodGang's groups (one scaling-group replica) and so needs nested sub-groups.
- the scheduler hints of `hints.py`: a KAI queue (`kai.scheduler/queue`) is `KAIQueues`, a
  Volcano queue (`scheduling.volcano.sh/queue-name`, `volcano.sh/queue-name`) `VolcanoQueues`:
  each scheduler reads only its own, so the other's is reported as ignored; likewise KAI's
  preemptibility, GPU sharing and PodGroup metadata, and Volcano's preemptable. Best-effort
  (a queue orders and accounts gangs, but a scheduler without it still places the gang as
  specified, and a label left over from another scheduler should not block a migration),
  except KAI's GPU sharing.
- `PerGroupMinimums`: a clique of a multi-group PodGang that may have more pods than its
  minAvailable (minAvailable < replicas, or an autoscaler allowed above it), so only a
  per-group minimum keeps the gang from starting with the wrong mix. Asked only by backends
  that gang a PodGang under a single count (`group_minimum_issues`), so it does not change
  what the others admit.
- `DynamicResources`: a pod template with DRA claims (`spec.resourceClaims`, a container's
  `resources.claims`): only a scheduler that allocates claims can place such pods.
- `PodPlacementFields`: any other pod template field that decides placement
  (phalanx.api.podfields) whose kube-scheduler plugin the backend's scheduler lacks
  (`missing_plugin_issues`; every peer scheduler is built on kube-scheduler's plugins, so only
  phalanx-scheduler can lack one).
Gang scheduling itself is not flagged: Grove's default (default-scheduler without the
Workload API) schedules pods one by one, and GREP-375 keeps that a valid configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phalanx.api import podfields

from . import hints
from .base import Capability, ValidationIssue

if TYPE_CHECKING:
    from phalanx.api.grove import PodCliqueSet, TopologyConstraint


@dataclass(frozen=True, slots=True)
class FeatureUse:
    capability: Capability
    field: str  # camelCase path in the PodCliqueSet
    detail: str  # what is asked for, for humans ("required pack domain 'rack'")
    best_effort: bool = False  # a preference: may be ignored without breaking the spec


def _constraint_uses(
    tc: TopologyConstraint | None, path: str, *, subgroup: bool
) -> list[FeatureUse]:
    if tc is None:
        return []
    uses: list[FeatureUse] = []
    required = tc.required_domain
    if required:
        field = f"{path}.pack.required" if tc.pack and tc.pack.required else f"{path}.packDomain"
        uses.append(
            FeatureUse(Capability.TOPOLOGY, field, f"required pack domain {required!r}")
        )
        if subgroup:
            uses.append(
                FeatureUse(
                    Capability.SUBGROUPS,
                    field,
                    f"pack domain {required!r} for a subset of the gang's groups",
                )
            )
    preferred = tc.preferred_domain
    if preferred:
        uses.append(
            FeatureUse(
                Capability.TOPOLOGY,
                f"{path}.pack.preferred",
                f"preferred pack domain {preferred!r}",
                best_effort=True,
            )
        )
    return uses


def requested_features(pcs: PodCliqueSet) -> list[FeatureUse]:
    """Every feature the PodCliqueSet asks for, in field order (deterministic)."""
    t = pcs.spec.template
    uses = _constraint_uses(t.topology_constraint, "spec.template.topologyConstraint", subgroup=False)
    for i, clique in enumerate(t.cliques):
        uses += _constraint_uses(
            clique.topology_constraint,
            f"spec.template.cliques[{i}].topologyConstraint",
            subgroup=False,
        )
    for j, group in enumerate(t.pod_clique_scaling_groups or ()):
        uses += _constraint_uses(
            group.topology_constraint,
            f"spec.template.podCliqueScalingGroups[{j}].topologyConstraint",
            subgroup=True,
        )
    for field, use in pod_template_uses(pcs, (podfields.DYNAMIC_RESOURCES,)):
        uses.append(FeatureUse(Capability.DYNAMIC_RESOURCES, field, "resource claims"))
    return uses + hints.hint_uses(pcs)


def pod_template_uses(
    pcs: PodCliqueSet, plugins: Iterable[str] | None = None
) -> list[tuple[str, podfields.FieldUse]]:
    """(field path in the PodCliqueSet, use) for every placement field its clique pod templates
    set, optionally only those read by `plugins`."""
    wanted = None if plugins is None else frozenset(plugins)
    out = []
    for i, clique in enumerate(pcs.spec.template.cliques):
        prefix = f"spec.template.cliques[{i}].spec.podSpec."
        for use in podfields.uses(clique.spec.pod_spec, wanted):
            out.append((prefix + use.path.removeprefix("spec."), use))
    return out


def missing_plugin_issues(
    pcs: PodCliqueSet, missing: Iterable[str], scheduler: str
) -> list[ValidationIssue]:
    """One `PodPlacementFields` issue per pod template field whose plugin `scheduler` lacks."""
    missing = frozenset(missing)
    if not missing:
        return []
    return [
        ValidationIssue(
            field=field,
            message=f"needs kube-scheduler's {use.plugin} plugin, which {scheduler} does not have",
            feature=Capability.DYNAMIC_RESOURCES if use.plugin == podfields.DYNAMIC_RESOURCES
            else Capability.POD_PLACEMENT_FIELDS,
        )
        for field, use in pod_template_uses(pcs, missing)
    ]


def capability_issues(
    pcs: PodCliqueSet,
    capabilities: Iterable[Capability],
    scheduler: str,
    *,
    gang_wide_topology_only: bool = False,
) -> list[ValidationIssue]:
    """One issue per requested feature the scheduler does not provide.

    `gang_wide_topology_only`: the scheduler can pack a whole gang but has no per-group
    constraint (Volcano's and Koordinator's network topology), so a clique-level pack
    constraint is a mismatch even though topology is supported.
    """
    have = frozenset(capabilities)
    issues = []
    for use in requested_features(pcs):
        if use.capability not in have:
            why = f"needs {use.capability.value}, which {scheduler} does not support"
        elif (
            gang_wide_topology_only
            and use.capability is Capability.TOPOLOGY
            and use.field.startswith("spec.template.cliques[")
        ):
            why = f"is per clique; {scheduler} can only pack a whole gang"
        else:
            continue
        issues.append(
            ValidationIssue(
                field=use.field,
                message=f"{use.detail} {why}",
                feature=use.capability,
                best_effort=use.best_effort,
            )
        )
    return issues


def base_podgang_group_count(pcs: PodCliqueSet) -> int:
    """How many groups the largest PodGang of this PodCliqueSet has (the base PodGang).

    The base PodGang holds every standalone clique plus, for each scaling group, the
    cliques of its replicas below minAvailable (Grove's PodGang layout).
    """
    t = pcs.spec.template
    count = len(pcs.standalone_cliques())
    for group in t.pod_clique_scaling_groups or ():
        min_available = group.min_available if group.min_available is not None else 1
        count += min_available * len(group.clique_names)
    return count


def _gang_group_counts(pcs: PodCliqueSet) -> dict[str, int]:
    """clique name -> the most groups of any PodGang that holds the clique's pods."""
    t = pcs.spec.template
    base = base_podgang_group_count(pcs)
    counts = {c.name: base for c in pcs.standalone_cliques()}
    for group in t.pod_clique_scaling_groups or ():
        min_available = group.min_available if group.min_available is not None else 1
        # Replicas below minAvailable sit in the base PodGang; each replica above it is a
        # scaled PodGang of the group's cliques.
        in_gang = max(base if min_available >= 1 else 0, len(group.clique_names))
        for name in group.clique_names:
            counts[name] = in_gang
    return counts


def group_minimum_issues(pcs: PodCliqueSet, scheduler: str, *, why: str) -> list[ValidationIssue]:
    """One `PerGroupMinimums` issue per clique whose own minimum `scheduler` cannot keep:
    it shares a gang with other groups and may have more pods than its minAvailable."""
    counts = _gang_group_counts(pcs)
    issues = []
    for i, clique in enumerate(pcs.spec.template.cliques):
        spec = clique.spec
        minimum = spec.min_available if spec.min_available is not None else spec.replicas
        auto = spec.auto_scaling_config
        most = max(spec.replicas, auto.max_replicas if auto is not None else 0)
        if counts.get(clique.name, 0) < 2 or most <= minimum:
            continue
        field = (f"spec.template.cliques[{i}].spec.minAvailable" if spec.min_available is not None
                 else f"spec.template.cliques[{i}].spec.autoScalingConfig.maxReplicas")
        issues.append(ValidationIssue(
            field=field,
            message=(f"clique {clique.name!r} needs {minimum} of up to {most} pods in a gang "
                     f"with other groups; {scheduler} cannot keep a per-group minimum "
                     f"({Capability.GROUP_MINIMUMS.value}): {why}"),
            feature=Capability.GROUP_MINIMUMS))
    return issues
