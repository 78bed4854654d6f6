"""What a PodCliqueSet should consist of: its PodGangs and PodCliques (pure functions).

One base PodGang per PodCliqueSet replica holds the standalone cliques and the scaling group
replicas below the group's minAvailable; each scaling group replica at or above
minAvailable gets its own scaled PodGang, which waits for the base PodGang to be scheduled.
Each PodGang group is one PodClique, with `minReplicas` = the clique's minAvailable.

Startup order becomes, per PodClique, the list of PodCliques it starts after (with the
number of Ready pods each must have), as Grove's grove-initc arguments:
- AnyOrder: none;
- InOrder: the clique listed just before it;
- Explicit: the cliques named in its `startsAfter`.
A predecessor in a scaling group means its replicas in the base PodGang, except within the
same scaling group, where replica j waits for its own replica j (a leader and its workers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from phalanx.api.grove import (
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    PodGangPackConstraint,
    PodGangTopologyConstraint,
    TopologyConstraint,
)

from . import naming

# domain name -> node-label key, or None when topology-aware scheduling is off / unknown.
DomainKey = Callable[[str], str | None]
# scaling group config name -> its current replicas in one PodCliqueSet replica.
GroupReplicas = Callable[[PodCliqueScalingGroupConfig], int]

STARTUP_ANY = "CliqueStartupTypeAnyOrder"
STARTUP_IN_ORDER = "CliqueStartupTypeInOrder"
STARTUP_EXPLICIT = "CliqueStartupTypeExplicit"


@dataclass(frozen=True, slots=True)
class CliquePlan:
    name: str
    template: PodCliqueTemplateSpec
    replica: int
    podgang: str
    group: str | None = None  # the PodCliqueScalingGroup's object name
    group_replica: int | None = None
    base_podgang: str | None = None  # set when the clique is in a scaled PodGang
    starts_after: tuple[tuple[str, int], ...] = ()

    @property
    def min_available(self) -> int:
        spec = self.template.spec
        return spec.min_available if spec.min_available is not None else spec.replicas


@dataclass(slots=True)
class GangPlan:
    name: str
    replica: int
    cliques: list[CliquePlan] = field(default_factory=list)
    group: str | None = None  # scaled PodGangs: the PodCliqueScalingGroup
    group_replica: int | None = None
    base_podgang: str | None = None  # scaled PodGangs: the base PodGang they wait for
    topology: PodGangTopologyConstraint | None = None
    # (name, PodClique names, constraint) for scaling group replicas inside a base PodGang.
    group_topologies: list[tuple[str, list[str], PodGangTopologyConstraint]] = field(
        default_factory=list
    )

    @property
    def is_base(self) -> bool:
        return self.group is None


def min_available(cfg: PodCliqueScalingGroupConfig) -> int:
    return cfg.min_available if cfg.min_available is not None else 1


def template_replicas(cfg: PodCliqueScalingGroupConfig) -> int:
    return cfg.replicas if cfg.replicas is not None else 1


def pack_constraint(tc: TopologyConstraint | None, key_of: DomainKey | None
                    ) -> PodGangTopologyConstraint | None:
    """A PodCliqueSet constraint (domain names) as a PodGang constraint (node-label keys)."""
    if tc is None or key_of is None:
        return None
    required = key_of(tc.required_domain) if tc.required_domain else None
    preferred = key_of(tc.preferred_domain) if tc.preferred_domain else None
    if required is None and preferred is None:
        return None
    return PodGangTopologyConstraint(
        pack_constraint=PodGangPackConstraint(required=required, preferred=preferred))


def uses_topology(pcs: PodCliqueSet) -> bool:
    t = pcs.spec.template
    return t.topology_constraint is not None or any(
        c.topology_constraint is not None for c in t.cliques
    ) or any(g.topology_constraint is not None for g in t.pod_clique_scaling_groups or ())


# --- startup order ----------------------------------------------------------------------------


def _predecessors(pcs: PodCliqueSet, clique: PodCliqueTemplateSpec) -> list[str]:
    t = pcs.spec.template
    kind = t.clique_startup_type or STARTUP_ANY
    if kind == STARTUP_IN_ORDER:
        idx = next(i for i, c in enumerate(t.cliques) if c.name == clique.name)
        return [t.cliques[idx - 1].name] if idx > 0 else []
    if kind == STARTUP_EXPLICIT:
        return list(clique.spec.starts_after or ())
    return []


def startup_dependencies(pcs: PodCliqueSet, replica: int, clique: PodCliqueTemplateSpec,
                         group_replica: int | None = None) -> tuple[tuple[str, int], ...]:
    """(PodClique name, Ready pods needed) for each predecessor of `clique` in `replica`."""
    own_group = pcs.scaling_group_of(clique.name)
    deps: list[tuple[str, int]] = []
    for parent_name in _predecessors(pcs, clique):
        parent = pcs.clique(parent_name)
        if parent is None:
            continue  # admission rejects unknown names; nothing to wait for
        need = parent.spec.min_available if parent.spec.min_available is not None \
            else parent.spec.replicas
        group = pcs.scaling_group_of(parent_name)
        if group is None:
            deps.append((naming.podclique_name(pcs.name, replica, parent_name), need))
            continue
        pcsg = naming.scaling_group_name(pcs.name, replica, group.name)
        if own_group is not None and own_group.name == group.name and group_replica is not None:
            deps.append((naming.group_podclique_name(pcsg, group_replica, parent_name), need))
        else:
            deps.extend((naming.group_podclique_name(pcsg, j, parent_name), need)
                        for j in range(min_available(group)))
    return tuple(deps)


# --- PodCliques and PodGangs ------------------------------------------------------------------


def group_clique_plans(pcs: PodCliqueSet, replica: int, cfg: PodCliqueScalingGroupConfig,
                       group_replica: int) -> list[CliquePlan]:
    """The PodCliques of one scaling group replica (what the scaling group controller makes)."""
    pcsg = naming.scaling_group_name(pcs.name, replica, cfg.name)
    base = naming.base_podgang_name(pcs.name, replica)
    scaled = group_replica >= min_available(cfg)
    gang = (naming.scaled_podgang_name(pcsg, group_replica, min_available(cfg)) if scaled
            else base)
    out = []
    for clique_name in cfg.clique_names:
        template = pcs.clique(clique_name)
        if template is None:
            continue
        out.append(CliquePlan(
            name=naming.group_podclique_name(pcsg, group_replica, clique_name),
            template=template, replica=replica, podgang=gang, group=pcsg,
            group_replica=group_replica, base_podgang=base if scaled else None,
            starts_after=startup_dependencies(pcs, replica, template, group_replica),
        ))
    return out


def standalone_clique_plans(pcs: PodCliqueSet, replica: int) -> list[CliquePlan]:
    gang = naming.base_podgang_name(pcs.name, replica)
    return [
        CliquePlan(name=naming.podclique_name(pcs.name, replica, c.name), template=c,
                   replica=replica, podgang=gang,
                   starts_after=startup_dependencies(pcs, replica, c))
        for c in pcs.standalone_cliques()
    ]


def replica_gangs(pcs: PodCliqueSet, replica: int, group_replicas: GroupReplicas,
                  key_of: DomainKey | None = None) -> list[GangPlan]:
    """The base PodGang of `replica` first, then its scaled PodGangs."""
    t = pcs.spec.template
    base = GangPlan(name=naming.base_podgang_name(pcs.name, replica), replica=replica,
                    cliques=standalone_clique_plans(pcs, replica),
                    topology=pack_constraint(t.topology_constraint, key_of))
    scaled: list[GangPlan] = []
    for cfg in t.pod_clique_scaling_groups or ():
        pcsg = naming.scaling_group_name(pcs.name, replica, cfg.name)
        floor = min_available(cfg)
        group_tc = pack_constraint(cfg.topology_constraint, key_of)
        for j in range(floor):
            cliques = group_clique_plans(pcs, replica, cfg, j)
            base.cliques.extend(cliques)
            if group_tc is not None:
                base.group_topologies.append((f"{pcsg}-{j}", [c.name for c in cliques], group_tc))
        for j in range(floor, max(floor, group_replicas(cfg))):
            scaled.append(GangPlan(
                name=naming.scaled_podgang_name(pcsg, j, floor), replica=replica,
                cliques=group_clique_plans(pcs, replica, cfg, j), group=pcsg, group_replica=j,
                base_podgang=base.name,
                topology=group_tc or pack_constraint(t.topology_constraint, key_of),
            ))
    return [base, *scaled]
