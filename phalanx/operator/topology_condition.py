"""The PodCliqueSet condition `TopologyLevelsUnavailable` (Grove's name, reasons and rules).

Whether the topology domains a PodCliqueSet packs into (required or preferred, at any level)
are levels of the ClusterTopologyBinding its constraints name (`topologyName`; a legacy
ClusterTopology of that name when no binding has it):

    no topology constraint                  False    AllClusterTopologyLevelsAvailable
    every domain is a level                 False    AllClusterTopologyLevelsAvailable
    some domain is not a level              True     ClusterTopologyLevelsUnavailable
    no constraint names a topology          Unknown  TopologyNameMissing
    the named topology does not exist       Unknown  ClusterTopologyNotFound
    topology-aware scheduling disabled      Unknown  TopologyAwareSchedulingDisabled
                                                     (removed when nothing asks for topology)

A constraint whose domain is unavailable is not passed to the PodGangs (the scheduler would
otherwise be asked for a level no node label describes), so this condition is how a user
learns that a pack constraint is not in force.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from phalanx.api.grove import PodCliqueSet, TopologyConstraint
from phalanx.api.grove_topology import explicit_topology_name

TOPOLOGY_LEVELS_UNAVAILABLE = "TopologyLevelsUnavailable"
REASON_ALL_AVAILABLE = "AllClusterTopologyLevelsAvailable"
REASON_LEVELS_UNAVAILABLE = "ClusterTopologyLevelsUnavailable"
REASON_TOPOLOGY_NOT_FOUND = "ClusterTopologyNotFound"
REASON_TOPOLOGY_NAME_MISSING = "TopologyNameMissing"
REASON_TAS_DISABLED = "TopologyAwareSchedulingDisabled"

# (status, reason, message), or None: no such condition on the PodCliqueSet.
Verdict = tuple[str, str, str] | None


def topology_constraints(pcs: PodCliqueSet) -> list[TopologyConstraint]:
    t = pcs.spec.template
    found = [t.topology_constraint, *(c.topology_constraint for c in t.cliques),
             *(g.topology_constraint for g in t.pod_clique_scaling_groups or ())]
    return [tc for tc in found if tc is not None]


def used_domains(constraints: Iterable[TopologyConstraint]) -> list[str]:
    """Every domain packed into, in order of appearance, once."""
    out: list[str] = []
    for tc in constraints:
        for domain in (tc.required_domain, tc.preferred_domain):
            if domain and domain not in out:
                out.append(domain)
    return out


def topology_levels_verdict(pcs: PodCliqueSet, topologies: Any | None) -> Verdict:
    """`topologies`: the operator's TopologyCache (`get(name)`), or None when
    topology-aware scheduling is off."""
    constraints = topology_constraints(pcs)
    if topologies is None:
        if not constraints:
            return None
        return ("Unknown", REASON_TAS_DISABLED, "topology constraints are defined but "
                "topology-aware scheduling is disabled in the OperatorConfiguration")
    if not constraints:
        return "False", REASON_ALL_AVAILABLE, "no topology constraints defined"
    name = explicit_topology_name(pcs)
    if name is None:
        return ("Unknown", REASON_TOPOLOGY_NAME_MISSING,
                "PodCliqueSet topology constraints must include topologyName")
    ct = topologies.get(name)
    if ct is None:
        return "Unknown", REASON_TOPOLOGY_NOT_FOUND, f"ClusterTopologyBinding {name} not found"
    levels = ct.domains()
    missing = [d for d in used_domains(constraints) if d not in levels]
    if missing:
        return ("True", REASON_LEVELS_UNAVAILABLE,
                f"unavailable topology domains: {', '.join(missing)} ({ct.KIND} "
                f"{ct.name} has {', '.join(levels)}); constraints on them are not enforced")
    return "False", REASON_ALL_AVAILABLE, f"all topology levels are available in {ct.name}"
